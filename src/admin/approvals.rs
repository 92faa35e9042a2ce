//! The approvals on the admin path: `passepartout approvals` lists them,
//! `passepartout approvals approve|deny TOKEN` decides one as the local user.

use std::sync::Arc;

use passepartout_admin::{AdminReply, Decision, Unreadable};
use passepartout_gateway::UserId;

use super::{AdminContext, Reply};

/// Answers the listing; it reads the whole approvals tree, so on a blocking
/// thread.
pub(super) fn listing(admin: &Arc<AdminContext>, all: bool, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn_blocking(move || {
        let listing = admin.approvals.listing(all).map_err(Unreadable::because);
        let _ = reply.send(AdminReply::Approvals(listing));
    });
}

/// Decides the approval `token` names as `by`. The decision is durable
/// before it is confirmed, and the conversation owed its outcome is woken;
/// the flush waits on the disk, so this is spawned.
pub(super) fn decide(admin: &Arc<AdminContext>, token: String, approve: bool, by: UserId, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let decided = match admin.approvals.decide_local(&token, approve, by) {
            Ok(decided) => admin.store.durable().await.map(|()| decided),
            Err(error) => Err(error),
        };
        let decision = match decided {
            Ok((decision, owed)) => {
                if let Some(owed) = owed {
                    let key = owed.conversation.clone();
                    admin.approvals.mark_unsettled(owed);
                    (admin.nudge)(&key);
                }
                decision
            }
            Err(error) => Decision {
                decided: false,
                message: error.to_string(),
            },
        };
        let _ = reply.send(AdminReply::Decision(decision));
    });
}
