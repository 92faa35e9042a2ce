//! `passepartout doctor`'s look at the running daemon:
//! [`AdminRequest::Recheck`](passepartout_admin::AdminRequest::Recheck).

use std::sync::Arc;

use passepartout_admin::AdminReply;

use crate::daemon::admin::{AdminContext, Reply};

/// Probes every model provider again, then answers the status document.
/// Probing waits on the network: never in the way of other questions.
pub(super) fn answer(admin: &Arc<AdminContext>, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        admin.cascade.recheck().await;
        let _ = reply.send(AdminReply::Status((admin.status)()));
    });
}
