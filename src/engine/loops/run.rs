//! One loop's task: wait — sleep, back off, wait for the next slot of its
//! schedule or for a trigger — then run an attempt through [`Iterate`],
//! account for it in the status, and decide what comes next, until stopped,
//! shut down, out of attempts or time, or out of slots.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::iterate::{Iterate, IterateError, Iteration, Report};
use super::random::Random;
use super::spec::{LoopSpec, Retrigger, Start};
use super::status::{IterationRecord, LoopStatus, Outcome, State, StopReason, millis};
use crate::foundation::clock::Clock;

/// Everything one loop's task owns.
pub(super) struct Run {
    pub spec: Arc<LoopSpec>,
    pub iterate: Arc<dyn Iterate>,
    pub status: Arc<watch::Sender<LoopStatus>>,
    pub triggers: mpsc::Receiver<()>,
    /// This loop's token: a child of `shutdown`, cancelled by a stop.
    pub stop: CancellationToken,
    pub shutdown: CancellationToken,
    pub random: Box<dyn Random>,
    pub clock: Clock,
}

/// What the loop does before its next attempt.
#[derive(Clone, Copy)]
enum Next {
    Now {
        triggered: bool,
    },
    Sleep(Duration),
    /// Sleep after a failed attempt; triggers meanwhile are absorbed, as the
    /// retry will serve them.
    Backoff(Duration),
    Trigger,
    /// The schedule has no slot left.
    Spent,
}

/// How an attempt ended, as far as the next one is concerned.
struct Ended {
    /// The consecutive errors, if it failed.
    failed: Option<u32>,
    /// A trigger asked for another attempt right away.
    again: bool,
    /// For a scheduled loop, the slot to wait for; none when it is spent.
    next_slot: Option<u64>,
}

/// An attempt as it began.
struct Begun {
    attempt: u64,
    supervised: bool,
    started_ms: u64,
    /// For a scheduled loop, the slot after this attempt.
    next_run_ms: Option<u64>,
}

/// How an iteration's call ended, and what happened meanwhile.
struct Ran {
    result: Result<Report, IterateError>,
    /// The loop's deadline passed: it was told to stop.
    timed_out: bool,
    /// A trigger restarted it.
    restarted: bool,
    /// A trigger asked for one more run after it.
    queued: bool,
}

impl Run {
    pub(super) async fn run(mut self) {
        let deadline = self.spec.max_duration.and_then(|d| Instant::now().checked_add(d));
        let started_ms = self.clock.now_ms();
        self.update(|s| s.started_ms = Some(started_ms));
        // The sleep before jitter: the default until the model chooses.
        let mut base = self.spec.sleep.default;
        let first = match (self.spec.first_run_ms, &self.spec.schedule) {
            (Some(at_ms), _) => Some(at_ms),
            (None, Some(schedule)) => schedule.next_after(started_ms),
            (None, None) => None,
        };
        let mut next = match (first, self.spec.start) {
            (Some(at_ms), _) => self.until(at_ms),
            (None, _) if self.spec.schedule.is_some() => Next::Spent,
            (None, Start::Immediately) => Next::Now { triggered: false },
            (None, Start::AfterSleep) => Next::Sleep(self.jittered(base)),
            (None, Start::OnTrigger(_)) => Next::Trigger,
        };
        let reason = loop {
            let triggered = match self.wait(next, deadline).await {
                Ok(triggered) => triggered,
                Err(reason) => break reason,
            };
            let ended = self.attempt(triggered, deadline, &mut base).await;
            if let Some(reason) = self.stopping(deadline) {
                break reason;
            }
            let attempts = self.status.borrow().attempts;
            if self.spec.max_attempts.is_some_and(|max| attempts >= max) {
                break StopReason::MaxAttempts;
            }
            next = match ended {
                Ended {
                    failed: Some(errors), ..
                } => Next::Backoff(self.spec.sleep.backoff(errors, self.spec.jitter, self.random.as_mut())),
                Ended { again: true, .. } => Next::Now { triggered: true },
                Ended {
                    next_slot: Some(slot), ..
                } => self.until(slot),
                _ if self.spec.schedule.is_some() => Next::Spent,
                _ if matches!(self.spec.start, Start::OnTrigger(_)) => Next::Trigger,
                _ => Next::Sleep(self.jittered(base)),
            };
        };
        self.update(|s| {
            s.state = State::Stopped;
            s.stop_reason = Some(reason);
            s.next_wake_ms = None;
        });
        tracing::info!(name = %self.spec.name, reason = reason.as_str(), "loop stopped");
    }

    /// Waits as `next` says; whether a trigger ended the wait, or why the
    /// loop must stop instead.
    async fn wait(&mut self, next: Next, deadline: Option<Instant>) -> Result<bool, StopReason> {
        if let Some(reason) = self.stopping(deadline) {
            return Err(reason);
        }
        let (sleep, state) = match next {
            Next::Now { triggered } => return Ok(triggered),
            Next::Spent => return Err(StopReason::Spent),
            Next::Trigger => return self.wait_for_trigger(deadline).await,
            Next::Sleep(sleep) => (sleep, State::Sleeping),
            Next::Backoff(sleep) => (sleep, State::Error),
        };
        let wake_ms = self.clock.now_ms().saturating_add(millis(sleep));
        self.update(|s| {
            s.state = state;
            s.next_wake_ms = Some(wake_ms);
        });
        let timer = tokio::time::sleep(sleep);
        let limit = until(deadline);
        tokio::pin!(timer, limit);
        loop {
            tokio::select! {
                biased;
                _ = self.stop.cancelled() => return Err(self.stop_reason()),
                _ = &mut limit => return Err(StopReason::MaxDuration),
                _ = &mut timer => return Ok(false),
                // A trigger wakes a sleeping loop early.
                Some(()) = self.triggers.recv() => if state == State::Sleeping {
                    return Ok(true);
                },
            }
        }
    }

    async fn wait_for_trigger(&mut self, deadline: Option<Instant>) -> Result<bool, StopReason> {
        self.update(|s| {
            s.state = State::Waiting;
            s.next_wake_ms = None;
        });
        tokio::select! {
            biased;
            _ = self.stop.cancelled() => Err(self.stop_reason()),
            _ = until(deadline) => Err(StopReason::MaxDuration),
            trigger = self.triggers.recv() => match trigger {
                Some(()) => Ok(true),
                // The registry is gone: nobody can trigger or stop us.
                None => Err(StopReason::Requested),
            },
        }
    }

    /// Runs one attempt and accounts for it; a model's chosen sleep updates `base`.
    async fn attempt(&mut self, triggered: bool, deadline: Option<Instant>, base: &mut Duration) -> Ended {
        let (begun, iteration) = self.begin(triggered);
        let began = Instant::now();
        let ran = self.iterate_until(iteration, deadline).await;
        let duration_ms = millis(began.elapsed());
        let (outcome, report) = self.outcome(ran.result, ran.timed_out, ran.restarted);
        if let Some(chosen) = report.next_sleep {
            *base = self.spec.sleep.clamp(chosen);
        }
        let errors = self.account(&begun, &outcome, &report, duration_ms, millis(*base));
        if let Outcome::Failed { error } = &outcome {
            tracing::warn!(name = %self.spec.name, attempt = begun.attempt, consecutive_errors = errors, %error, "loop attempt failed");
        }
        Ended {
            failed: matches!(outcome, Outcome::Failed { .. }).then_some(errors),
            again: ran.restarted || ran.queued,
            next_slot: self.next_slot(begun.next_run_ms),
        }
    }

    /// Marks the loop processing and numbers the attempt; the iteration to run.
    fn begin(&mut self, triggered: bool) -> (Begun, Iteration) {
        let supervised = (self.spec.supervisor.as_ref()).is_some_and(|s| self.random.unit() < s.probability);
        let started_ms = self.clock.now_ms();
        let next_run_ms = match &self.spec.schedule {
            // A one-shot run early on request has had its one run.
            Some(schedule) if triggered && schedule.is_once() => None,
            Some(schedule) => schedule.next_after(started_ms),
            None => None,
        };
        let mut attempt = 0;
        self.update(|s| {
            s.state = State::Processing;
            s.next_wake_ms = None;
            s.attempts += 1;
            attempt = s.attempts;
        });
        let iteration = Iteration {
            spec: self.spec.clone(),
            attempt,
            supervised,
            triggered,
            next_run_ms,
            cancel: self.stop.child_token(),
        };
        let begun = Begun {
            attempt,
            supervised,
            started_ms,
            next_run_ms,
        };
        (begun, iteration)
    }

    /// Runs `iteration` to its end, cancelling it at the `deadline` or when
    /// a trigger restarts it, and noting the triggers that came meanwhile.
    async fn iterate_until(&mut self, iteration: Iteration, deadline: Option<Instant>) -> Ran {
        let cancel = iteration.cancel.clone();
        let iterate = self.iterate.clone();
        let mut call = iterate.iterate(iteration);
        let retrigger = match self.spec.start {
            Start::OnTrigger(mode) => mode,
            Start::Immediately | Start::AfterSleep => Retrigger::Ignore,
        };
        let limit = until(deadline);
        tokio::pin!(limit);
        let (mut timed_out, mut restarted, mut queued) = (false, false, false);
        // The iteration is not dropped when cancelled but told, and awaited:
        // it may have state to leave tidy. Shutdown aborts it at the deadline.
        let result = loop {
            tokio::select! {
                result = &mut call => break result,
                _ = &mut limit, if !timed_out => {
                    timed_out = true;
                    cancel.cancel();
                }
                Some(()) = self.triggers.recv() => match retrigger {
                    Retrigger::Ignore => {}
                    Retrigger::Queue => queued = true,
                    Retrigger::Restart => {
                        restarted = true;
                        cancel.cancel();
                    }
                },
            }
        };
        // Triggers that came in as the iteration ended were during it, too.
        while let Ok(()) = self.triggers.try_recv() {
            match retrigger {
                Retrigger::Ignore => {}
                Retrigger::Queue | Retrigger::Restart => queued = true,
            }
        }
        Ran {
            result,
            timed_out,
            restarted,
            queued,
        }
    }

    /// How an iteration's `result` counts: an error after a timeout, a stop
    /// or a restart is not a failure.
    fn outcome(&self, result: Result<Report, IterateError>, timed_out: bool, restarted: bool) -> (Outcome, Report) {
        match result {
            Ok(report) => (Outcome::Done, report),
            Err(_) if timed_out || self.stop.is_cancelled() => (Outcome::Cancelled, Report::default()),
            Err(_) if restarted => (Outcome::Restarted, Report::default()),
            Err(error) => {
                let error = describe(&error);
                (Outcome::Failed { error }, Report::default())
            }
        }
    }

    /// Records the attempt in the loop's status; the consecutive errors.
    fn account(&self, begun: &Begun, outcome: &Outcome, report: &Report, duration_ms: u64, sleep_ms: u64) -> u32 {
        let mut errors = 0;
        self.update(|s| {
            match outcome {
                Outcome::Done => {
                    s.iterations += 1;
                    s.supervisor_iterations += u64::from(begun.supervised);
                    s.tokens_in = s.tokens_in.saturating_add(report.tokens_in);
                    s.tokens_out = s.tokens_out.saturating_add(report.tokens_out);
                    s.consecutive_errors = 0;
                    s.sleep_ms = sleep_ms;
                }
                Outcome::Failed { error } => {
                    s.consecutive_errors = s.consecutive_errors.saturating_add(1);
                    s.last_error = Some(error.clone());
                }
                Outcome::Restarted | Outcome::Cancelled => {}
            }
            errors = s.consecutive_errors;
            s.record(IterationRecord {
                attempt: begun.attempt,
                started_ms: begun.started_ms,
                duration_ms,
                model: report.model.clone(),
                supervisor: begun.supervised,
                outcome: outcome.clone(),
            });
        });
        errors
    }

    /// The slot a scheduled loop waits for next. A run longer than the
    /// interval waits for the first slot after it ends, rather than catching
    /// up on the ones it overlapped.
    fn next_slot(&self, next_run_ms: Option<u64>) -> Option<u64> {
        let now_ms = self.clock.now_ms();
        match next_run_ms {
            Some(slot) if slot <= now_ms => self.spec.schedule.as_ref().and_then(|s| s.next_after(now_ms)),
            slot => slot,
        }
    }

    /// Why the loop must stop now, if it must.
    fn stopping(&self, deadline: Option<Instant>) -> Option<StopReason> {
        if self.stop.is_cancelled() {
            Some(self.stop_reason())
        } else if deadline.is_some_and(|d| Instant::now() >= d) {
            Some(StopReason::MaxDuration)
        } else {
            None
        }
    }

    fn stop_reason(&self) -> StopReason {
        if self.shutdown.is_cancelled() {
            StopReason::Shutdown
        } else {
            StopReason::Requested
        }
    }

    /// A sleep until the clock reads `at_ms` (none if that has passed).
    fn until(&self, at_ms: u64) -> Next {
        Next::Sleep(Duration::from_millis(at_ms.saturating_sub(self.clock.now_ms())))
    }

    fn jittered(&mut self, base: Duration) -> Duration {
        self.spec.sleep.jittered(base, self.spec.jitter, self.random.as_mut())
    }

    fn update(&self, change: impl FnOnce(&mut LoopStatus)) {
        self.status.send_modify(change);
    }
}

/// Completes at `deadline`, or never.
async fn until(deadline: Option<Instant>) {
    match deadline {
        Some(deadline) => tokio::time::sleep_until(deadline).await,
        None => std::future::pending().await,
    }
}

/// The error and its causes, outermost first.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text += ": ";
        text += &*cause.to_string();
        source = cause.source();
    }
    text
}
