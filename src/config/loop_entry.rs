//! `[[loops.entries]]`: a background loop defined in the config — a task (a
//! prompt run through the pipeline) or a message (a reminder sent as it is),
//! speaking in one conversation, run on a schedule, on every heartbeat, or
//! between sleeps. [`LoopEntry::problems`] lists what is wrong with one, each
//! problem naming its key, for `check-config`; the loop runtime builds its
//! loop from an entry without problems through the same readings
//! ([`LoopEntry::body`], [`LoopEntry::output_key`], [`LoopEntry::schedule`],
//! [`LoopEntry::limits`]).

use std::fmt;
use std::time::Duration;

use passepartout_gateway::ConversationKey;
use serde::{Deserialize, Serialize};

use super::loop_rules::{
    DEFAULT_LOOP_JITTER, DEFAULT_LOOP_SLEEP, DEFAULT_LOOP_SLEEP_MAX, DEFAULT_LOOP_SLEEP_MIN, LoopLimits, loop_name,
};
use super::skills::conversation_key;
use crate::foundation::clock::schedule::{Schedule, Zone};

/// What triggers a loop that waits for triggers (`on = "heartbeat"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoopTrigger {
    /// Every heartbeat (`loops.heartbeat_s`).
    Heartbeat,
}

/// What a trigger does while the loop is in an iteration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Retrigger {
    /// Nothing: it is dropped.
    Ignore,
    /// The iteration is cancelled and a new one starts when it has returned.
    Restart,
    /// Another iteration runs once this one is done; triggers during one
    /// iteration add up to one more iteration, not one each.
    Queue,
}

/// Occasional iterations by a stronger model that reviews the loop's work.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Supervisor {
    /// The chance, in `[0, 1]`, that an iteration is a supervisor iteration.
    pub probability: f64,
    /// The model a supervisor iteration uses.
    pub model: String,
    /// Review instructions added to the task in a supervisor iteration.
    pub review: String,
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

/// What an entry's iterations do, read from `task` and `message`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryBody<'a> {
    /// A prompt the assistant runs.
    Task(&'a str),
    /// A reminder's text, sent as it is.
    Message(&'a str),
}

/// One thing wrong with a [`LoopEntry`]: the key concerned, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryProblem {
    /// The key inside the entry, e.g. `schedule` or `supervisor.probability`.
    pub key: &'static str,
    pub message: String,
}

impl EntryProblem {
    pub fn new(key: &'static str, message: impl Into<String>) -> Self {
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
    /// Every problem with the entry, or none. `zone` is for schedules that
    /// name none; `now_ms` rules out schedules that would never run again.
    /// The limits are only checked once everything else is right.
    pub fn problems(&self, zone: &Zone, now_ms: u64) -> Vec<EntryProblem> {
        let mut problems = Vec::new();
        if let Err(error) = loop_name(self.name.clone()) {
            problems.push(EntryProblem::new("name", error.to_string()));
        }
        problems.extend(self.body().err());
        problems.extend(self.output_key().err());
        problems.extend(self.schedule(zone, now_ms).err());
        if self.on.is_some() && self.schedule.is_some() {
            problems.push(EntryProblem::new(
                "on",
                "a loop runs on a schedule or on triggers, not both: drop `on` or `schedule`",
            ));
        }
        if self.retrigger.is_some() && self.on.is_none() {
            problems.push(EntryProblem::new(
                "retrigger",
                "only a loop that waits for triggers (`on`) has a retrigger mode",
            ));
        }
        if problems.is_empty() {
            let limits = self.limits().problems();
            problems.extend(
                limits
                    .iter()
                    .map(|limit| EntryProblem::new(limit.entry_key(), limit.to_string())),
            );
        }
        problems
    }

    /// What each iteration does: exactly one of `task` and `message`.
    pub fn body(&self) -> Result<EntryBody<'_>, EntryProblem> {
        match (&self.task, &self.message) {
            (Some(prompt), None) => Ok(EntryBody::Task(prompt)),
            (None, Some(text)) => Ok(EntryBody::Message(text)),
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

    /// `output` as the conversation that hears the loop.
    pub fn output_key(&self) -> Result<ConversationKey, EntryProblem> {
        conversation_key(&self.output).ok_or_else(|| {
            let message = format!(
                "{:?} must be gateway:chat, e.g. \"socket:default\" or \"telegram:123456\"",
                self.output
            );
            EntryProblem::new("output", message)
        })
    }

    /// `schedule`, parsed in `zone` if it names none; one-shots are refused.
    pub fn schedule(&self, zone: &Zone, now_ms: u64) -> Result<Option<Schedule>, EntryProblem> {
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

    /// The entry's sleeps and limits, the defaults filling what it leaves out.
    pub fn limits(&self) -> LoopLimits {
        LoopLimits {
            sleep_min: self.sleep_min_s.map_or(DEFAULT_LOOP_SLEEP_MIN, Duration::from_secs),
            sleep_max: self.sleep_max_s.map_or(DEFAULT_LOOP_SLEEP_MAX, Duration::from_secs),
            sleep_default: self.sleep_s.map_or(DEFAULT_LOOP_SLEEP, Duration::from_secs),
            jitter: self.jitter.unwrap_or(DEFAULT_LOOP_JITTER),
            supervisor_probability: self.supervisor.as_ref().map(|supervisor| supervisor.probability),
            max_attempts: self.max_iterations,
            max_duration: self.max_duration_s.map(Duration::from_secs),
        }
    }
}

#[cfg(test)]
#[path = "loop_entry_tests.rs"]
mod tests;

/// One valid entry, and the moment its checks run at, for the tests of
/// entries here and of the loops they become.
#[cfg(test)]
pub(crate) mod testing {
    use super::LoopEntry;
    use crate::foundation::clock::schedule::Zone;

    /// 2026-11-22 12:00 UTC.
    pub const NOW_MS: u64 = 1_795_348_800_000;

    /// A task loop with every required key set.
    pub fn entry() -> LoopEntry {
        LoopEntry {
            name: "inbox".into(),
            task: Some("check the mail".into()),
            output: "socket:default".into(),
            ..LoopEntry::default()
        }
    }

    /// The keys `entry`'s problems name, in UTC at [`NOW_MS`].
    pub fn keys(entry: &LoopEntry) -> Vec<&'static str> {
        entry.problems(&Zone::utc(), NOW_MS).iter().map(|p| p.key).collect()
    }
}
