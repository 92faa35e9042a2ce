//! The background loops on the admin path: `passepartout loops` lists them,
//! `loops stop NAME` stops one, `loops start NAME` starts a stopped one
//! again, `loops run NAME` runs one now.
//!
//! [`LoopDesk`] is what the admin path needs of the loops, so it does not
//! depend on where the daemon keeps them.

use std::sync::Arc;

use async_trait::async_trait;
use passepartout_admin::{AdminReply, LoopControl, Unreadable};

use super::{AdminContext, Reply};
use crate::loops::daemon::Loops;
use crate::loops::heartbeat::HEARTBEAT;
use crate::loops::schedules::{BookError, NextTime};
use crate::loops::status::LoopStatus;
use crate::loops::status::human;

/// The loop operations the machine's owner may ask for.
#[async_trait]
pub trait LoopDesk: Send + Sync {
    /// Every loop's status, by name; none before the loops run.
    fn statuses(&self) -> Vec<LoopStatus>;
    /// Stops loop `name` until it is started again: a stored loop is
    /// forgotten too, so unless started again it does not come back at the
    /// next start.
    async fn stop(&self, name: &str) -> Result<(), BookError>;
    /// Starts loop `name` again, stopped on request, from its next time on.
    async fn start(&self, name: &str) -> Result<NextTime, BookError>;
    /// Runs loop `name` now: a sleeping loop wakes early, a loop waiting for
    /// a trigger runs.
    fn trigger(&self, name: &str) -> Result<(), BookError>;
}

#[async_trait]
impl LoopDesk for Loops {
    fn statuses(&self) -> Vec<LoopStatus> {
        Loops::statuses(self)
    }

    async fn stop(&self, name: &str) -> Result<(), BookError> {
        Loops::stop(self, name).await
    }

    async fn start(&self, name: &str) -> Result<NextTime, BookError> {
        Loops::start_again(self, name).await
    }

    fn trigger(&self, name: &str) -> Result<(), BookError> {
        Loops::trigger(self, name)
    }
}

/// The loops' statuses, as the JSON list the CLI renders.
/// The loops' statuses, each moment with its time from `now_ms` (see
/// [`super::relative`]).
pub(super) fn statuses(loops: &dyn LoopDesk, now_ms: u64) -> AdminReply {
    AdminReply::Loops(
        serde_json::to_value(loops.statuses())
            .map(|mut statuses| {
                super::relative::with_relative_times(&mut statuses, now_ms);
                statuses
            })
            .map_err(Unreadable::because),
    )
}

/// Stops loop `name`. Forgetting a stored loop writes the store: spawned, so
/// never in the way of other questions.
pub(super) fn stop(admin: &Arc<AdminContext>, name: String, reply: Reply) {
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

/// Starts loop `name` again. Spawned, as a stop is: keeping a stored loop
/// again writes the store.
pub(super) fn start(admin: &Arc<AdminContext>, name: String, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        // Read before: the next time is set from a later reading, so an
        // hour's sleep reads "1h0m", not "59m59s".
        let now_ms = admin.clock.now_ms();
        let started = admin.loops.start(&name).await;
        let answer = match started {
            Ok(next) => control(Ok(()), || started_message(&name, next, now_ms)),
            Err(error) => control(Err(error), String::new),
        };
        let _ = reply.send(answer);
    });
}

/// What starting loop `name` did: when it runs next (seen from `now_ms`).
fn started_message(name: &str, next: NextTime, now_ms: u64) -> String {
    match next {
        NextTime::At(at_ms) => format!(
            "loop \"{name}\" started; it runs next in {}",
            human(at_ms.saturating_sub(now_ms))
        ),
        NextTime::OnTrigger => format!("loop \"{name}\" started; it runs when triggered"),
    }
}

/// Runs loop `name` now.
pub(super) fn trigger(loops: &dyn LoopDesk, name: &str) -> AdminReply {
    control(loops.trigger(name), || format!("loop \"{name}\" triggered"))
}

/// The answer to a loop control request, its message saying what happened
/// or why not.
fn control(outcome: Result<(), BookError>, done: impl FnOnce() -> String) -> AdminReply {
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
