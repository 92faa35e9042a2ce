//! What every loop definition must keep, whether it comes from
//! `[[loops.entries]]` or from a chat: a well-formed name, sleep bounds that
//! make sense, a jitter and a supervisor chance in `[0, 1]`, limits above
//! zero; and the defaults a definition starts from. They are pure checks on
//! plain values, so `check-config` runs them without the loop runtime, and
//! the runtime runs the very same ones before a loop starts.

use std::time::Duration;

use thiserror::Error;

/// The shortest sleep between iterations, unless configured.
pub const DEFAULT_LOOP_SLEEP_MIN: Duration = Duration::from_secs(30);
/// The longest sleep between iterations, unless configured.
pub const DEFAULT_LOOP_SLEEP_MAX: Duration = Duration::from_secs(5 * 60);
/// The sleep before the model chooses one, unless configured.
pub const DEFAULT_LOOP_SLEEP: Duration = Duration::from_secs(60);
/// The fraction by which a sleep varies either way, unless configured.
pub const DEFAULT_LOOP_JITTER: f64 = 0.2;

/// The longest loop name, in bytes.
pub const MAX_LOOP_NAME_LEN: usize = 64;

/// Why a string is not a loop name.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[error("bad loop name {name:?}: it must be 1 to {MAX_LOOP_NAME_LEN} bytes without spaces or control characters")]
pub struct BadLoopName {
    pub name: String,
}

/// `name`, if it can name a loop: non-empty, at most [`MAX_LOOP_NAME_LEN`]
/// bytes, no whitespace or control characters (it heads a line of
/// `passepartout loops`).
pub fn loop_name(name: String) -> Result<String, BadLoopName> {
    let fits = !name.is_empty() && name.len() <= MAX_LOOP_NAME_LEN;
    if fits && !name.chars().any(|c| c.is_whitespace() || c.is_control()) {
        Ok(name)
    } else {
        Err(BadLoopName { name })
    }
}

/// A loop's sleeps and limits, as they are checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LoopLimits {
    pub sleep_min: Duration,
    pub sleep_max: Duration,
    /// The sleep until the model chooses another.
    pub sleep_default: Duration,
    /// The fraction by which a sleep varies either way.
    pub jitter: f64,
    /// The chance that an iteration is a supervisor's, if there is one.
    pub supervisor_probability: Option<f64>,
    pub max_attempts: Option<u64>,
    pub max_duration: Option<Duration>,
}

/// One limit a loop does not keep.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum LimitProblem {
    #[error("the shortest sleep is zero (a failing loop would spin)")]
    ZeroMinSleep,
    #[error("the shortest sleep ({min:?}) is longer than the longest ({max:?})")]
    MinAboveMax { min: Duration, max: Duration },
    #[error("the default sleep ({default:?}) is outside [{min:?}, {max:?}]")]
    DefaultOutside {
        default: Duration,
        min: Duration,
        max: Duration,
    },
    #[error("the jitter ({0}) is outside [0, 1]")]
    Jitter(f64),
    #[error("the supervisor probability ({0}) is outside [0, 1]")]
    Probability(f64),
    #[error("at most zero attempts")]
    ZeroAttempts,
    #[error("a zero maximum duration")]
    ZeroDuration,
}

impl LimitProblem {
    /// The `[[loops.entries]]` key that sets what is wrong.
    pub fn entry_key(&self) -> &'static str {
        match self {
            Self::ZeroMinSleep | Self::MinAboveMax { .. } => "sleep_min_s",
            Self::DefaultOutside { .. } => "sleep_s",
            Self::Jitter(_) => "jitter",
            Self::Probability(_) => "supervisor.probability",
            Self::ZeroAttempts => "max_iterations",
            Self::ZeroDuration => "max_duration_s",
        }
    }
}

impl LoopLimits {
    /// Every limit not kept, or none.
    pub fn problems(&self) -> Vec<LimitProblem> {
        let (min, max, default) = (self.sleep_min, self.sleep_max, self.sleep_default);
        let mut problems = Vec::new();
        if min.is_zero() {
            problems.push(LimitProblem::ZeroMinSleep);
        }
        if min > max {
            problems.push(LimitProblem::MinAboveMax { min, max });
        } else if !(min..=max).contains(&default) {
            problems.push(LimitProblem::DefaultOutside { default, min, max });
        }
        if !(0.0..=1.0).contains(&self.jitter) {
            problems.push(LimitProblem::Jitter(self.jitter));
        }
        if let Some(probability) = self.supervisor_probability
            && !(0.0..=1.0).contains(&probability)
        {
            problems.push(LimitProblem::Probability(probability));
        }
        if self.max_attempts == Some(0) {
            problems.push(LimitProblem::ZeroAttempts);
        }
        if self.max_duration.is_some_and(|d| d.is_zero()) {
            problems.push(LimitProblem::ZeroDuration);
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(loop_name("heartbeat".into()).is_ok());
        for bad in ["", "two words", "tab\there", &"x".repeat(MAX_LOOP_NAME_LEN + 1)] {
            assert_eq!(loop_name(bad.into()), Err(BadLoopName { name: bad.into() }));
        }
    }

    #[test]
    fn every_limit_not_kept_is_named() {
        let limits = LoopLimits {
            sleep_min: DEFAULT_LOOP_SLEEP_MIN,
            sleep_max: DEFAULT_LOOP_SLEEP_MAX,
            sleep_default: DEFAULT_LOOP_SLEEP,
            jitter: DEFAULT_LOOP_JITTER,
            supervisor_probability: Some(0.5),
            max_attempts: Some(1),
            max_duration: Some(Duration::from_secs(1)),
        };
        assert_eq!(limits.problems(), []);
        let bad = LoopLimits {
            sleep_min: Duration::from_secs(600),
            jitter: -0.5,
            supervisor_probability: Some(2.0),
            max_attempts: Some(0),
            max_duration: Some(Duration::ZERO),
            ..limits
        };
        let keys: Vec<_> = bad.problems().iter().map(LimitProblem::entry_key).collect();
        assert_eq!(
            keys,
            [
                "sleep_min_s",
                "jitter",
                "supervisor.probability",
                "max_iterations",
                "max_duration_s"
            ]
        );
    }
}
