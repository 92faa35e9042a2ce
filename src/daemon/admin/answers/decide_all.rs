//! `passepartout approvals approve|deny --all-from GATEWAY:CHAT` and
//! `deny --all`: [`AdminRequest::DecideAll`](passepartout_admin::AdminRequest::DecideAll).

use std::sync::Arc;

use passepartout_admin::{AdminReply, Decisions};
use passepartout_gateway::UserId;

use crate::daemon::admin::{AdminContext, Reply};

/// Decides every pending approval of the conversation `from` names (or,
/// denying, of all), each on its own; durable before it is confirmed, and
/// every conversation owed an outcome is woken.
pub(super) fn answer(admin: &Arc<AdminContext>, approve: bool, from: Option<String>, by: UserId, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let decided = match admin.approvals.decide_all(approve, from.as_deref(), by) {
            Ok(decided) => admin.store.durable().await.map(|()| decided),
            Err(error) => Err(error),
        };
        let decisions = match decided {
            Ok((decisions, owed)) => {
                for owed in owed {
                    super::decide::settle(&admin, Some(owed));
                }
                decisions
            }
            Err(error) => Decisions {
                ok: false,
                message: error.to_string(),
                decisions: Vec::new(),
            },
        };
        let _ = reply.send(AdminReply::Decisions(decisions));
    });
}
