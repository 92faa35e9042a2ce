//! `passepartout reload` (and SIGHUP, which the daemon answers itself), and
//! the dashboard's Reload button:
//! [`AdminRequest::Reload`](passepartout_admin::AdminRequest::Reload).

use std::sync::Arc;

use passepartout_admin::AdminReply;

use crate::daemon::admin::reloaded;
use crate::daemon::admin::{AdminContext, Reply};

/// Reads the configuration again as the daemon does, then answers what
/// changed with every secret scrubbed (read off the async threads).
pub(super) fn answer(admin: &Arc<AdminContext>, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let reloaded = admin.reload.reload().await;
        let read = admin.clone();
        let reloaded = tokio::task::spawn_blocking(move || reloaded::scrubbed(&read, reloaded))
            .await
            .unwrap_or_else(|_| reloaded::withheld());
        let _ = reply.send(AdminReply::Reloaded(reloaded));
    });
}
