//! `passepartout approvals rules revoke ID`, and the dashboard's Revoke
//! button: [`AdminRequest::RevokeRule`](passepartout_admin::AdminRequest::RevokeRule).

use std::sync::Arc;

use passepartout_admin::{AdminReply, RuleRevoked};
use passepartout_gateway::UserId;

use crate::daemon::admin::{AdminContext, Reply};

/// Revokes standing rule `id` as `by`, durably before it is confirmed.
pub(super) fn answer(admin: &Arc<AdminContext>, id: u64, by: UserId, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let revoked = match admin.approvals.revoke_local(id, by) {
            Ok(revoked) => admin.store.durable().await.map(|()| revoked),
            Err(error) => Err(error),
        };
        let answer = match revoked {
            Ok((revoked, message)) => RuleRevoked { revoked, message },
            Err(error) => RuleRevoked {
                revoked: false,
                message: error.to_string(),
            },
        };
        let _ = reply.send(AdminReply::RuleRevoked(answer));
    });
}
