//! A loop stopped on request, started again (`passepartout loops start
//! NAME`): it runs as it was defined when it stopped, from its next time on
//! — a scheduled loop at its schedule's next slot, a timer loop one sleep
//! from now, a loop that waits for a trigger at its next trigger — never at
//! once (`loops run NAME` is for that). A stored loop is kept again, so it
//! resumes after a restart as it would have had it never stopped. A stop
//! that is not undone before a restart holds as it always did: a configured
//! loop comes back from the file, one made in a chat is gone.
//!
//! Only a loop stopped on request starts again: one that ended by itself
//! (its schedule spent, its attempts or time used up) is over, and a new
//! one is made as it was the first time.

use std::sync::Arc;

use super::{BookError, Schedules};
use crate::engine::loops::registry::LoopError;
use crate::engine::loops::spec::{LoopSpec, Start};
use crate::engine::loops::status::{StopReason, millis};

/// When a loop started again runs next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextTime {
    /// At this time (milliseconds since the epoch).
    At(u64),
    /// When it is triggered.
    OnTrigger,
}

impl Schedules {
    /// Starts loop `name` again, stopped on request, from its next time on;
    /// a stored loop is kept again. Refused when there is no such loop,
    /// when it runs, or when it ended by itself.
    pub async fn start_again(self: &Arc<Self>, name: &str) -> Result<NextTime, BookError> {
        // Two starts of one name: the second finds it running.
        let _one_at_a_time = self.starting.lock().await;
        let registry = self.ready()?;
        if self.dropped().contains(name) {
            // Out of the configuration: as far as starting goes, gone.
            return Err(LoopError::Unknown { name: name.into() }.into());
        }
        let mut spec = LoopSpec::clone(&*registry.stopped_spec(name)?);
        let next = from_now(&mut spec, self.clock.now_ms()).ok_or_else(|| LoopError::Ended {
            name: name.to_owned(),
            reason: StopReason::Spent,
        })?;
        let Some(mut record) = self.aside().get(name).cloned() else {
            // Not stored (the heartbeat), or kept as it was: only the registry knows it.
            registry.spawn(spec)?;
            tracing::info!(name, "loop started again");
            return Ok(next);
        };
        record.next_run_ms = spec.schedule.as_ref().and(spec.first_run_ms);
        record.spec = spec;
        let bytes = serde_json::to_vec(&record)?;
        let loop_name = record.spec.name.clone();
        // Claims the name in the store again, as making the loop did.
        if !self.store.swap_loop_record(name, None, Some(bytes.clone())).await? {
            return Err(BookError::Taken { name: loop_name });
        }
        if let Err(error) = registry.spawn(record.spec) {
            if let Err(error) = self.store.swap_loop_record(name, Some(bytes), None).await {
                tracing::error!(name, %error, "cannot forget the loop that did not start again");
            }
            return Err(error.into());
        }
        self.aside().remove(name);
        self.watch_for_the_end(&registry, &loop_name, record.created_ms);
        tracing::info!(name, "loop started again, and kept");
        Ok(next)
    }
}

/// Sets `spec` to run first at its next time after `now_ms`, and says when
/// that is; `None` when its schedule has no slot left.
fn from_now(spec: &mut LoopSpec, now_ms: u64) -> Option<NextTime> {
    let first = match (&spec.schedule, spec.start) {
        (Some(schedule), _) => Some(schedule.next_after(now_ms)?),
        (None, Start::OnTrigger(_)) => None,
        // As if it had just run: one sleep (before jitter) from now.
        (None, Start::Immediately | Start::AfterSleep) => Some(now_ms.saturating_add(millis(spec.sleep.default))),
    };
    spec.first_run_ms = first;
    Some(first.map_or(NextTime::OnTrigger, NextTime::At))
}
