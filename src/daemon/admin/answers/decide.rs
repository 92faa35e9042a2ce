//! `passepartout approvals approve|deny TOKEN` (`--always`: with a
//! standing rule), and the dashboard's buttons:
//! [`AdminRequest::Decide`](passepartout_admin::AdminRequest::Decide).

use std::sync::Arc;

use passepartout_admin::{AdminReply, Asker, Decision};

use crate::daemon::admin::{AdminContext, Reply};

/// Decides the approval `token` names as `by`, answering `via` the
/// terminal or the web. The decision is durable
/// before it is confirmed, and the conversation owed its outcome is woken;
/// the flush waits on the disk, so this is spawned.
pub(super) fn answer(
    admin: &Arc<AdminContext>,
    token: String,
    approve: bool,
    always: bool,
    asker: Asker,
    reply: Reply,
) {
    let Asker { by, via, .. } = asker;
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let decided = match admin.approvals.decide_local(&token, approve, always, by, via) {
            Ok(decided) => admin.store.durable().await.map(|()| decided),
            Err(error) => Err(error),
        };
        let decision = match decided {
            Ok((decision, owed)) => {
                settle(&admin, owed);
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

/// Hands the conversation owed an outcome, if any, to its worker.
pub(super) fn settle(admin: &AdminContext, owed: Option<crate::safety::approvals::Owed>) {
    if let Some(owed) = owed {
        let key = owed.conversation.clone();
        admin.approvals.mark_unsettled(owed);
        (admin.nudge)(&key);
    }
}
