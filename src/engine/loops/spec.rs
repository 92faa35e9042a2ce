//! A loop's definition: its name, what each iteration does, how long it
//! sleeps (or which [`Schedule`] it keeps), when it stops, how often a
//! supervisor looks over its shoulder, where its output goes, and whether it
//! waits for a trigger instead of a timer. Checked once, by
//! [`LoopSpec::validate`], before the loop starts, against the rules every
//! definition keeps ([`crate::config::LoopLimits`], shared with
//! `check-config`). Definitions are kept in the store as JSON, so they
//! survive restarts.

use std::borrow::Borrow;
use std::fmt;
use std::time::Duration;

use passepartout_gateway::ConversationKey;
use serde::{Deserialize, Serialize};

use super::sleep::SleepBounds;
pub use crate::config::{BadLoopName as BadName, MAX_LOOP_NAME_LEN as MAX_NAME_LEN, Retrigger, Supervisor};
use crate::config::{DEFAULT_LOOP_JITTER, LimitProblem, LoopLimits, loop_name};
use crate::foundation::clock::schedule::Schedule;

/// A loop's name: unique in its registry, non-empty, at most
/// [`MAX_NAME_LEN`] bytes, no whitespace or control characters (it heads a
/// line of `passepartout loops`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct LoopName(String);

impl LoopName {
    pub fn new(name: impl Into<String>) -> Result<Self, BadName> {
        loop_name(name.into()).map(Self)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LoopName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl TryFrom<String> for LoopName {
    type Error = BadName;

    fn try_from(name: String) -> Result<Self, BadName> {
        Self::new(name)
    }
}

impl From<LoopName> for String {
    fn from(name: LoopName) -> String {
        name.0
    }
}

impl Borrow<str> for LoopName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// What an iteration does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Body {
    /// A prompt the assistant runs, with its tools, like a message.
    Task { prompt: String },
    /// Text sent as it is to the output conversation: a reminder. No model.
    Message { text: String },
    /// A built-in handler, by name (the heartbeat, say): no model involved.
    Handler { name: String },
}

impl Body {
    /// Whether an iteration says something, and so needs a conversation.
    pub fn speaks(&self) -> bool {
        !matches!(self, Body::Handler { .. })
    }
}

/// When a loop runs its iterations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Start {
    /// At once, then after every sleep.
    #[default]
    Immediately,
    /// After a first sleep, then after every sleep; so a restarted daemon
    /// does not run every loop at the same moment.
    AfterSleep,
    /// When [triggered](super::registry::Registry::trigger), instead of
    /// sleeping; the mode says what a trigger during an iteration does.
    OnTrigger(Retrigger),
}

/// A loop's definition.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopSpec {
    pub name: LoopName,
    pub body: Body,
    /// The slots the loop runs at. With one, the loop runs at each slot
    /// (without jitter, whatever the model asks) and stops when the
    /// schedule is spent; `sleep` then only paces retries after failures.
    #[serde(default)]
    pub schedule: Option<Schedule>,
    /// When the first iteration runs (milliseconds since the epoch); `None`
    /// means as `start` says. Set when a stored loop resumes.
    #[serde(skip)]
    pub first_run_ms: Option<u64>,
    pub sleep: SleepBounds,
    /// The fraction, in `[0, 1]`, by which a sleep varies either way.
    pub jitter: f64,
    /// Stop after this many attempts, failed ones included.
    pub max_attempts: Option<u64>,
    /// Stop this long after the start.
    pub max_duration: Option<Duration>,
    pub supervisor: Option<Supervisor>,
    /// The chat that hears what the loop has to say, if any. The loop
    /// runtime only hands it to [`Iterate`](super::iterate::Iterate).
    pub output: Option<ConversationKey>,
    pub start: Start,
}

impl LoopSpec {
    /// A loop running `prompt`, with default sleeps and no limits.
    pub fn task(name: LoopName, prompt: impl Into<String>) -> Self {
        Self::new(name, Body::Task { prompt: prompt.into() })
    }

    /// A loop sending `text` to its output conversation, with default sleeps
    /// and no limits.
    pub fn message(name: LoopName, text: impl Into<String>) -> Self {
        Self::new(name, Body::Message { text: text.into() })
    }

    /// A loop running the built-in handler `handler`, with default sleeps
    /// and no limits.
    pub fn handler(name: LoopName, handler: impl Into<String>) -> Self {
        Self::new(name, Body::Handler { name: handler.into() })
    }

    fn new(name: LoopName, body: Body) -> Self {
        Self {
            name,
            body,
            schedule: None,
            first_run_ms: None,
            sleep: SleepBounds::default(),
            jitter: DEFAULT_LOOP_JITTER,
            max_attempts: None,
            max_duration: None,
            supervisor: None,
            output: None,
            start: Start::default(),
        }
    }

    /// Every problem with the definition, or none.
    pub fn validate(&self) -> Result<(), InvalidSpec> {
        let SleepBounds { min, max, default } = self.sleep;
        let limits = LoopLimits {
            sleep_min: min,
            sleep_max: max,
            sleep_default: default,
            jitter: self.jitter,
            supervisor_probability: self.supervisor.as_ref().map(|supervisor| supervisor.probability),
            max_attempts: self.max_attempts,
            max_duration: self.max_duration,
        };
        let mut problems: Vec<_> = limits.problems().into_iter().map(SpecProblem::Limit).collect();
        if self.body.speaks() && self.output.is_none() {
            problems.push(SpecProblem::NoOutput);
        }
        if self.schedule.is_some() && matches!(self.start, Start::OnTrigger(_)) {
            problems.push(SpecProblem::ScheduledAndTriggered);
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(InvalidSpec {
                name: self.name.clone(),
                problems,
            })
        }
    }
}

/// One thing wrong with a [`LoopSpec`].
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpecProblem {
    /// A sleep, the jitter, the supervisor's chance or a limit is out of bounds.
    #[error(transparent)]
    Limit(#[from] LimitProblem),
    #[error("it has something to say but no output conversation (whoever would approve its actions)")]
    NoOutput,
    #[error("it has both a schedule and a trigger")]
    ScheduledAndTriggered,
}

/// A [`LoopSpec`] that cannot run, with all its problems.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("loop \"{name}\": {}", list(problems))]
pub struct InvalidSpec {
    pub name: LoopName,
    pub problems: Vec<SpecProblem>,
}

fn list(problems: &[SpecProblem]) -> String {
    problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(LoopName::new("heartbeat").is_ok());
        for bad in ["", "two words", "tab\there", &"x".repeat(MAX_NAME_LEN + 1)] {
            assert!(LoopName::new(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn validation_reports_every_problem() {
        let mut spec = LoopSpec::task(LoopName::new("x").unwrap(), "check the mail");
        spec.output = Some(passepartout_gateway::ConversationKey::new(
            passepartout_gateway::GatewayId::new("socket").unwrap(),
            passepartout_gateway::ChatId::new("me").unwrap(),
        ));
        assert_eq!(spec.validate(), Ok(()));
        spec.sleep.min = Duration::ZERO;
        spec.sleep.default = Duration::from_secs(3600);
        spec.jitter = 1.5;
        spec.max_attempts = Some(0);
        spec.supervisor = Some(Supervisor {
            probability: -0.1,
            model: "big".into(),
            review: String::new(),
        });
        let invalid = spec.validate().unwrap_err();
        assert_eq!(invalid.problems.len(), 5, "{invalid}");
        assert!(
            invalid
                .to_string()
                .starts_with("loop \"x\": the shortest sleep is zero"),
            "{invalid}"
        );
    }

    #[test]
    fn a_loop_that_speaks_needs_a_conversation_and_a_schedule_excludes_a_trigger() {
        let mut spec = LoopSpec::message(LoopName::new("pills").unwrap(), "take them");
        spec.schedule = Some(crate::foundation::clock::schedule::Schedule::Once {
            at_ms: 1,
            tz: crate::foundation::clock::schedule::Zone::utc(),
        });
        spec.start = Start::OnTrigger(Retrigger::Ignore);
        let invalid = spec.validate().unwrap_err();
        assert_eq!(
            invalid.problems,
            [SpecProblem::NoOutput, SpecProblem::ScheduledAndTriggered]
        );
        let handler = LoopSpec::handler(LoopName::new("beat").unwrap(), "heartbeat");
        assert_eq!(handler.validate(), Ok(()), "a handler says nothing");
    }

    #[test]
    fn a_definition_survives_json() {
        let mut spec = LoopSpec::task(LoopName::new("mail").unwrap(), "check");
        spec.schedule = Some(crate::foundation::clock::schedule::Schedule::Once {
            at_ms: 5,
            tz: crate::foundation::clock::schedule::Zone::utc(),
        });
        spec.first_run_ms = Some(9);
        let back: LoopSpec = serde_json::from_str(&serde_json::to_string(&spec).unwrap()).unwrap();
        assert_eq!(
            back.first_run_ms, None,
            "when to run first is not part of the definition"
        );
        spec.first_run_ms = None;
        assert_eq!(back, spec);
    }
}
