//! `passepartout loops stop NAME`, and the dashboard's Stop button:
//! [`AdminRequest::StopLoop`](passepartout_admin::AdminRequest::StopLoop).

use std::sync::Arc;

use super::loops::control;
use crate::daemon::admin::{AdminContext, Reply};
use crate::engine::loops::heartbeat::HEARTBEAT;

/// Stops loop `name`. Forgetting a stored loop writes the store: spawned, so
/// never in the way of other questions.
pub(super) fn answer(admin: &Arc<AdminContext>, name: String, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let stopped = admin.loops.stop(&name).await;
        let _ = reply.send(control(stopped, || stopped_message(&name)));
    });
}

/// What stopping loop `name` did. The heartbeat also writes the periodic
/// backups and sweeps expired approvals: the owner is told they stop too.
fn stopped_message(name: &str) -> String {
    let mut message = format!("loop \"{name}\" stopped");
    if name == HEARTBEAT {
        message += "; warning: periodic backups and the approvals' expiry sweep stop with it until it is started again (loops start heartbeat) or the daemon restarts";
    }
    message
}
