//! `passepartout loops`, and the dashboard's Loops page:
//! [`AdminRequest::Loops`](passepartout_admin::AdminRequest::Loops); and the
//! answer every loop control request ends with.

use passepartout_admin::{AdminReply, LoopControl, Unreadable};

use crate::daemon::admin::LoopDesk;
use crate::engine::loops::schedules::BookError;

/// The loops' statuses, each moment with its time from `now_ms` (see
/// [`crate::daemon::admin::relative`]).
pub(super) fn answer(loops: &dyn LoopDesk, now_ms: u64) -> AdminReply {
    AdminReply::Loops(
        serde_json::to_value(loops.statuses())
            .map(|mut statuses| {
                crate::daemon::admin::relative::with_relative_times(&mut statuses, now_ms);
                statuses
            })
            .map_err(Unreadable::because),
    )
}

/// The answer to a loop control request, its message saying what happened
/// or why not.
pub(super) fn control(outcome: Result<(), BookError>, done: impl FnOnce() -> String) -> AdminReply {
    AdminReply::LoopControl(match outcome {
        Ok(()) => LoopControl {
            ok: true,
            message: done(),
        },
        Err(error) => LoopControl {
            ok: false,
            message: error.to_string(),
        },
    })
}
