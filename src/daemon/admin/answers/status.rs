//! `passepartout status`, and the status on every dashboard page:
//! [`AdminRequest::Status`](passepartout_admin::AdminRequest::Status).

use passepartout_admin::AdminReply;

use crate::daemon::admin::{AdminContext, Reply};

/// The status document, assembled from what is in memory: answered at once.
pub(super) fn answer(admin: &AdminContext, reply: Reply) {
    let _ = reply.send(AdminReply::Status((admin.status)()));
}
