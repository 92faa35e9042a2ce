//! `passepartout loops run NAME`, and the dashboard's Run button:
//! [`AdminRequest::TriggerLoop`](passepartout_admin::AdminRequest::TriggerLoop).

use passepartout_admin::AdminReply;

use super::loops::control;
use crate::daemon::admin::LoopDesk;

/// Runs loop `name` now.
pub(super) fn answer(loops: &dyn LoopDesk, name: &str) -> AdminReply {
    control(loops.trigger(name), || format!("loop \"{name}\" triggered"))
}
