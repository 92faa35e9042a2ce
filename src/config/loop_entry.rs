//! `[[loops.entries]]`: a background loop defined in the config — a task (a
//! prompt run through the pipeline) or a message (a reminder sent as it is),
//! speaking in one conversation, run on a schedule, on every heartbeat, or
//! between sleeps. [`LoopEntry::configured`] turns an entry into the
//! [`LoopSpec`] the daemon resumes at start; [`LoopEntry::problems`] lists
//! what is wrong with one, each problem naming its key, for `check-config`.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::skills::conversation_key;
use crate::loops::schedule::{Schedule, Zone};
use crate::loops::schedules::Configured;
use crate::loops::sleep::{DEFAULT_JITTER, DEFAULT_MAX, DEFAULT_MIN, DEFAULT_SLEEP, SleepBounds};
use crate::loops::spec::{Body, LoopName, LoopSpec, Retrigger, SpecProblem, Start, Supervisor};

/// What triggers a loop that waits for triggers (`on = "heartbeat"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopTrigger {
    /// Every heartbeat (`loops.heartbeat_s`).
    Heartbeat,
}

/// One `[[loops.entries]]` entry.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoopEntry {
    /// The loop's name, unique among loops; shown by `passepartout loops`.
    pub name: String,
    /// A prompt the assistant runs, with its tools, at each iteration.
    /// Exactly one of `task` and `message` is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Text sent as it is to `output` at each iteration: a reminder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When it runs, in the schedule grammar ("every 15 minutes", "daily at
    /// 07:30", "cron 0 7 * * 1-5"); one-shots ("in …", "at …") are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<String>,
    /// The conversation that hears the loop, `gateway:chat` (e.g.
    /// `socket:default`, `telegram:123456`); it also approves its actions.
    pub output: String,
    /// Wait for triggers instead of sleeping; with `heartbeat`, every
    /// heartbeat triggers the loop. Not together with `schedule`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on: Option<LoopTrigger>,
    /// With `on`: what a trigger during an iteration does (default `ignore`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrigger: Option<Retrigger>,
    /// The shortest sleep between iterations, in seconds (also the first
    /// backoff after a failure).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep_min_s: Option<u64>,
    /// The longest sleep between iterations (and backoff), in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep_max_s: Option<u64>,
    /// The sleep until the model chooses another, in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sleep_s: Option<u64>,
    /// The fraction, in `[0, 1]`, by which a sleep varies either way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
    /// Stop after this many attempts, failed ones included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_iterations: Option<u64>,
    /// Stop this many seconds after the start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_duration_s: Option<u64>,
    /// Occasional iterations by a stronger model (`model` names an
    /// `[[llm.providers]]` entry) that reviews the loop's work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supervisor: Option<Supervisor>,
}

/// One thing wrong with a [`LoopEntry`]: the key concerned, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryProblem {
    /// The key inside the entry, e.g. `schedule` or `supervisor.probability`.
    pub key: &'static str,
    pub message: String,
}

impl EntryProblem {
    fn new(key: &'static str, message: impl Into<String>) -> Self {
        Self {
            key,
            message: message.into(),
        }
    }
}

impl fmt::Display for EntryProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.key, self.message)
    }
}

impl LoopEntry {
    /// The entry as the loop the daemon runs; the error lists every problem.
    /// `zone` is for schedules that name none; `now_ms` rules out schedules
    /// that would never run again.
    pub fn configured(&self, zone: &Zone, now_ms: u64) -> Result<Configured, String> {
        self.build(zone, now_ms).map_err(|problems| {
            let problems: Vec<_> = problems.iter().map(ToString::to_string).collect();
            format!("loop {:?}: {}", self.name, problems.join("; "))
        })
    }

    /// Every problem with the entry, or none.
    pub fn problems(&self, zone: &Zone, now_ms: u64) -> Vec<EntryProblem> {
        self.build(zone, now_ms).err().unwrap_or_default()
    }

    fn build(&self, zone: &Zone, now_ms: u64) -> Result<Configured, Vec<EntryProblem>> {
        let mut problems = Vec::new();
        let mut found = |problem: EntryProblem| problems.push(problem);
        let name = LoopName::new(self.name.as_str())
            .map_err(|error| found(EntryProblem::new("name", error.to_string())))
            .ok();
        let body = self.body().map_err(&mut found).ok();
        let output = conversation_key(&self.output)
            .ok_or_else(|| {
                let message = format!(
                    "{:?} must be gateway:chat, e.g. \"socket:default\" or \"telegram:123456\"",
                    self.output
                );
                found(EntryProblem::new("output", message))
            })
            .ok();
        let schedule = self.schedule(zone, now_ms).map_err(&mut found).ok();
        if self.on.is_some() && self.schedule.is_some() {
            found(EntryProblem::new(
                "on",
                "a loop runs on a schedule or on triggers, not both: drop `on` or `schedule`",
            ));
        }
        if self.retrigger.is_some() && self.on.is_none() {
            found(EntryProblem::new(
                "retrigger",
                "only a loop that waits for triggers (`on`) has a retrigger mode",
            ));
        }
        let (Some(name), Some(body), Some(output), Some(schedule)) = (name, body, output, schedule) else {
            return Err(problems);
        };
        if !problems.is_empty() {
            return Err(problems);
        }
        let mut spec = LoopSpec::task(name, String::new());
        spec.body = body;
        spec.output = Some(output);
        spec.sleep = SleepBounds {
            min: self.sleep_min_s.map_or(DEFAULT_MIN, Duration::from_secs),
            max: self.sleep_max_s.map_or(DEFAULT_MAX, Duration::from_secs),
            default: self.sleep_s.map_or(DEFAULT_SLEEP, Duration::from_secs),
        };
        spec.jitter = self.jitter.unwrap_or(DEFAULT_JITTER);
        spec.max_attempts = self.max_iterations;
        spec.max_duration = self.max_duration_s.map(Duration::from_secs);
        spec.supervisor = self.supervisor.clone();
        // Sleeping and scheduled loops wait for their first run, so that a
        // restart does not fire every configured loop at the same moment.
        spec.start = match self.on {
            Some(LoopTrigger::Heartbeat) => Start::OnTrigger(self.retrigger.unwrap_or(Retrigger::Ignore)),
            None => Start::AfterSleep,
        };
        spec.schedule = schedule;
        if let Err(invalid) = spec.validate() {
            return Err(invalid.problems.iter().map(spec_problem).collect());
        }
        Ok(Configured {
            spec,
            on_heartbeat: self.on == Some(LoopTrigger::Heartbeat),
        })
    }

    fn body(&self) -> Result<Body, EntryProblem> {
        match (&self.task, &self.message) {
            (Some(prompt), None) => Ok(Body::Task { prompt: prompt.clone() }),
            (None, Some(text)) => Ok(Body::Message { text: text.clone() }),
            (Some(_), Some(_)) => Err(EntryProblem::new(
                "task",
                "set task (a prompt) or message (a reminder's text), not both",
            )),
            (None, None) => Err(EntryProblem::new(
                "task",
                "set task (a prompt the assistant runs) or message (a reminder's text)",
            )),
        }
    }

    fn schedule(&self, zone: &Zone, now_ms: u64) -> Result<Option<Schedule>, EntryProblem> {
        let Some(text) = &self.schedule else {
            return Ok(None);
        };
        match Schedule::parse(text, zone, now_ms) {
            Ok(Schedule::Once { .. }) => Err(EntryProblem::new(
                "schedule",
                format!(
                    "{text:?} is a one-shot; a configured loop would run it again at every start. \
                     Use \"every …\", \"daily at …\" or \"cron …\", or ask for the reminder in a chat"
                ),
            )),
            Ok(schedule) => Ok(Some(schedule)),
            Err(error) => Err(EntryProblem::new("schedule", format!("{text:?}: {error}"))),
        }
    }
}

/// A problem [`LoopSpec::validate`] found, under the entry key that causes it.
fn spec_problem(problem: &SpecProblem) -> EntryProblem {
    let key = match problem {
        SpecProblem::ZeroMinSleep | SpecProblem::MinAboveMax { .. } => "sleep_min_s",
        SpecProblem::DefaultOutside { .. } => "sleep_s",
        SpecProblem::Jitter(_) => "jitter",
        SpecProblem::Probability(_) => "supervisor.probability",
        SpecProblem::ZeroAttempts => "max_iterations",
        SpecProblem::ZeroDuration => "max_duration_s",
        SpecProblem::NoOutput => "output",
        SpecProblem::ScheduledAndTriggered => "on",
    };
    EntryProblem::new(key, problem.to_string())
}

#[cfg(test)]
#[path = "loop_entry_tests.rs"]
mod tests;
