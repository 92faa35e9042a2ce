//! What a loop is doing and has done: the snapshot behind
//! `passepartout loops --json` and the `/loops` chat command, and its text
//! form. Times are wall-clock milliseconds (from [`crate::foundation::clock::Clock`]).

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::spec::{Body, LoopName, LoopSpec, Start};

/// The longest [`LoopStatus::what`], in characters.
pub const WHAT_CHARS: usize = 120;

/// `text` on one line, cut to `max` characters.
fn cut(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None => line,
    }
}

/// How many past iterations a status keeps.
pub const RECENT_ITERATIONS: usize = 10;

/// Where a loop is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum State {
    /// Registered; its task has not started yet.
    Pending,
    /// Between iterations, until `next_wake_ms`.
    Sleeping,
    /// Waiting for a trigger.
    Waiting,
    /// Running an iteration.
    Processing,
    /// Backing off after a failed attempt, until `next_wake_ms`.
    Error,
    /// Done for good; `stop_reason` says why.
    Stopped,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Pending => "pending",
            State::Sleeping => "sleeping",
            State::Waiting => "waiting",
            State::Processing => "processing",
            State::Error => "error",
            State::Stopped => "stopped",
        }
    }
}

/// Why a loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// Someone stopped it by name.
    Requested,
    /// The daemon shut down.
    Shutdown,
    /// It made its maximum number of attempts.
    MaxAttempts,
    /// It ran for its maximum duration.
    MaxDuration,
    /// Its iteration was still running at the shutdown deadline.
    Aborted,
    /// Its schedule has no slot left (a one-shot reminder that ran).
    Spent,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::Requested => "stopped on request",
            StopReason::Shutdown => "stopped at shutdown",
            StopReason::MaxAttempts => "made its maximum attempts",
            StopReason::MaxDuration => "ran its maximum duration",
            StopReason::Aborted => "aborted at the shutdown deadline",
            StopReason::Spent => "done: its schedule has no run left",
        }
    }
}

/// How an attempt ended.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "outcome", rename_all = "snake_case")]
pub enum Outcome {
    Done,
    Failed {
        error: String,
    },
    /// Cut short by a trigger in restart mode.
    Restarted,
    /// Cut short by a stop, a shutdown or the maximum duration.
    Cancelled,
}

/// One past attempt.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IterationRecord {
    pub attempt: u64,
    pub started_ms: u64,
    pub duration_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub supervisor: bool,
    #[serde(flatten)]
    pub outcome: Outcome,
}

/// A snapshot of one loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopStatus {
    pub name: LoopName,
    /// The built-in handler it runs; `None` for a task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handler: Option<String>,
    /// What it does: the reminder's text or the task's prompt, cut to
    /// [`WHAT_CHARS`] characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub what: Option<String>,
    /// Its schedule, as a person reads it ("daily at 07:30 Europe/Paris").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The conversation it speaks in, as `gateway:chat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<String>,
    pub start: Start,
    pub state: State,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<StopReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_ms: Option<u64>,
    /// Successful iterations.
    pub iterations: u64,
    /// Attempts, failed and cut short ones included.
    pub attempts: u64,
    pub supervisor_iterations: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    pub consecutive_errors: u32,
    /// The sleep before jitter: the default, or the model's last choice.
    pub sleep_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_wake_ms: Option<u64>,
    /// The last [`RECENT_ITERATIONS`] attempts, newest first.
    pub recent: VecDeque<IterationRecord>,
}

impl LoopStatus {
    /// A loop about to start.
    pub fn pending(spec: &LoopSpec) -> Self {
        Self {
            name: spec.name.clone(),
            handler: match &spec.body {
                Body::Handler { name } => Some(name.clone()),
                Body::Task { .. } | Body::Message { .. } => None,
            },
            what: match &spec.body {
                Body::Task { prompt: text } | Body::Message { text } => Some(cut(text, WHAT_CHARS)),
                Body::Handler { .. } => None,
            },
            schedule: spec.schedule.as_ref().map(ToString::to_string),
            output: spec.output.as_ref().map(ToString::to_string),
            start: spec.start,
            state: State::Pending,
            stop_reason: None,
            started_ms: None,
            iterations: 0,
            attempts: 0,
            supervisor_iterations: 0,
            tokens_in: 0,
            tokens_out: 0,
            last_error: None,
            consecutive_errors: 0,
            sleep_ms: millis(spec.sleep.default),
            next_wake_ms: None,
            recent: VecDeque::new(),
        }
    }

    /// Remembers an attempt, forgetting the oldest beyond [`RECENT_ITERATIONS`].
    pub fn record(&mut self, record: IterationRecord) {
        self.recent.push_front(record);
        self.recent.truncate(RECENT_ITERATIONS);
    }

    /// The loop's line of [`render`]: name, state, counts, what comes next.
    pub fn summary(&self, now_ms: u64) -> String {
        let mut line = format!(
            "{:<16} {:<10} {} ok of {} attempts",
            self.name,
            self.state.as_str(),
            self.iterations,
            self.attempts
        );
        if self.tokens_in + self.tokens_out > 0 {
            let _ = write!(line, ", tokens {} in / {} out", self.tokens_in, self.tokens_out);
        }
        if let Some(handler) = &self.handler {
            let _ = write!(line, ", handler {handler}");
        }
        if let Some(schedule) = &self.schedule {
            let _ = write!(line, ", {schedule}");
        }
        if let Some(output) = &self.output {
            let _ = write!(line, ", to {output}");
        }
        match (self.state, self.stop_reason, self.next_wake_ms) {
            (State::Stopped, Some(reason), _) => {
                let _ = write!(line, " — {}", reason.as_str());
            }
            (State::Waiting, ..) => line += " — waiting for a trigger",
            (_, _, Some(wake)) => {
                let _ = write!(line, " — next in {}", human(wake.saturating_sub(now_ms)));
            }
            _ => {}
        }
        line
    }

    /// The summary line, then the errors and the recent attempts, indented.
    pub fn render_details(&self, now_ms: u64) -> String {
        let mut out = self.summary(now_ms) + "\n";
        if let Some(what) = &self.what {
            let _ = writeln!(out, "  {what}");
        }
        if let Some(error) = &self.last_error {
            let _ = writeln!(out, "  last error ({} in a row now): {error}", self.consecutive_errors);
        }
        for record in &self.recent {
            let _ = write!(
                out,
                "  #{} {} ago, {}",
                record.attempt,
                human(now_ms.saturating_sub(record.started_ms)),
                human(record.duration_ms)
            );
            if let Some(model) = &record.model {
                let _ = write!(out, ", {model}");
            }
            if record.supervisor {
                out += ", supervisor";
            }
            let _ = match &record.outcome {
                Outcome::Done => writeln!(out),
                Outcome::Failed { error } => writeln!(out, ": failed: {error}"),
                Outcome::Restarted => writeln!(out, ": restarted"),
                Outcome::Cancelled => writeln!(out, ": cancelled"),
            };
        }
        out
    }
}

/// The text of `passepartout loops`: a line per loop, plus the last error
/// of every loop that is failing.
pub fn render(loops: &[LoopStatus], now_ms: u64) -> String {
    if loops.is_empty() {
        return "no loops\n".into();
    }
    let mut out = String::new();
    for status in loops {
        let _ = writeln!(out, "{}", status.summary(now_ms));
        if status.consecutive_errors > 0
            && let Some(error) = &status.last_error
        {
            let _ = writeln!(out, "  failing ({} in a row): {error}", status.consecutive_errors);
        }
    }
    out
}

pub(crate) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// `ms` as a short human duration: `850ms`, `42s`, `4m10s`, `3h5m`, `2d4h`.
pub fn human(ms: u64) -> String {
    let s = ms / 1000;
    match s {
        0 => format!("{ms}ms"),
        1..60 => format!("{s}s"),
        60..3600 => format!("{}m{}s", s / 60, s % 60),
        3600..86_400 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86_400, s % 86_400 / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failing() -> LoopStatus {
        let spec = LoopSpec::task(LoopName::new("inbox").unwrap(), "check");
        let mut status = LoopStatus::pending(&spec);
        status.state = State::Error;
        status.attempts = 3;
        status.iterations = 1;
        status.consecutive_errors = 2;
        status.last_error = Some("timed out".into());
        status.next_wake_ms = Some(100_000);
        status.record(IterationRecord {
            attempt: 3,
            started_ms: 30_000,
            duration_ms: 1_500,
            model: Some("small".into()),
            supervisor: true,
            outcome: Outcome::Failed {
                error: "timed out".into(),
            },
        });
        status
    }

    #[test]
    fn renders_a_line_per_loop_and_the_failures() {
        let text = render(&[failing()], 40_000);
        assert_eq!(
            text,
            "inbox            error      1 ok of 3 attempts — next in 1m0s\n  failing (2 in a row): timed out\n"
        );
        let details = failing().render_details(40_000);
        assert!(
            details.contains("  #3 10s ago, 1s, small, supervisor: failed: timed out\n"),
            "{details}"
        );
    }

    #[test]
    fn the_snapshot_round_trips_through_json() {
        let status = failing();
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["state"], "error");
        assert_eq!(json["recent"][0]["outcome"], "failed");
        assert_eq!(json["recent"][0]["error"], "timed out");
        assert_eq!(serde_json::from_value::<LoopStatus>(json).unwrap(), status);
    }

    #[test]
    fn recent_keeps_the_last_ten_newest_first() {
        let mut status = failing();
        for attempt in 4..=20 {
            let mut record = status.recent[0].clone();
            record.attempt = attempt;
            status.record(record);
        }
        let attempts: Vec<_> = status.recent.iter().map(|r| r.attempt).collect();
        assert_eq!(attempts, (11..=20).rev().collect::<Vec<_>>());
    }
}
