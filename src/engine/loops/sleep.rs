//! How long a loop sleeps: its bounds, the jitter that keeps loops from
//! waking in lockstep, and the exponential backoff after failed attempts.
//! Every sleep this module hands out lies within the bounds. The doubling is
//! the gateways' own; the jitter is the loop's, symmetric and drawn from its
//! seedable [`Random`] so that tests see the same sleeps on every run.

use std::time::Duration;

use passepartout_gateway::retry::exponential;
use serde::{Deserialize, Serialize};

use super::random::Random;
use crate::config::{DEFAULT_LOOP_SLEEP, DEFAULT_LOOP_SLEEP_MAX, DEFAULT_LOOP_SLEEP_MIN};

/// A loop's sleep bounds: every sleep lies within `[min, max]`; `default`
/// is the sleep until the model chooses another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SleepBounds {
    pub min: Duration,
    pub max: Duration,
    pub default: Duration,
}

impl Default for SleepBounds {
    fn default() -> Self {
        Self {
            min: DEFAULT_LOOP_SLEEP_MIN,
            max: DEFAULT_LOOP_SLEEP_MAX,
            default: DEFAULT_LOOP_SLEEP,
        }
    }
}

impl SleepBounds {
    /// `sleep`, moved into `[min, max]`.
    pub fn clamp(&self, sleep: Duration) -> Duration {
        // Not `Ord::clamp`, which panics on bounds that were never validated.
        sleep.max(self.min).min(self.max)
    }

    /// `base` varied by up to `jitter` (a fraction) either way, then clamped.
    pub fn jittered(&self, base: Duration, jitter: f64, random: &mut dyn Random) -> Duration {
        let jitter = jitter.clamp(0.0, 1.0);
        let factor = 1.0 + jitter * (2.0 * random.unit() - 1.0);
        // Whole milliseconds, the resolution of tokio's timer and of the status.
        let varied_ms = (base.as_secs_f64() * factor * 1000.0).round();
        let varied = Duration::try_from_secs_f64(varied_ms / 1000.0).unwrap_or(self.max);
        self.clamp(varied)
    }

    /// The sleep after `consecutive_errors` failed attempts in a row: `min`,
    /// doubled for every further failure, capped at `max` (the gateways'
    /// [`exponential`] backoff), then jittered like every sleep of a loop,
    /// from the loop's own (seedable) randomness and within its bounds.
    pub fn backoff(&self, consecutive_errors: u32, jitter: f64, random: &mut dyn Random) -> Duration {
        let base = exponential(self.min, self.max, consecutive_errors.saturating_sub(1));
        self.jittered(base, jitter, random)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::loops::random::Seeded;

    const BOUNDS: SleepBounds = SleepBounds {
        min: Duration::from_secs(10),
        max: Duration::from_secs(100),
        default: Duration::from_secs(90),
    };

    #[test]
    fn jitter_varies_the_sleep_but_never_leaves_the_bounds() {
        let mut random = Seeded::new(1);
        let sleeps: Vec<_> = (0..10_000)
            .map(|_| BOUNDS.jittered(BOUNDS.default, 0.5, &mut random))
            .collect();
        assert!(sleeps.iter().all(|s| (BOUNDS.min..=BOUNDS.max).contains(s)));
        // 90s ± 45s: both the clamp at the top and the spread below are used.
        assert!(sleeps.contains(&BOUNDS.max));
        assert!(sleeps.iter().any(|s| *s < Duration::from_secs(50)));
        let mut random = Seeded::new(1);
        assert_eq!(
            BOUNDS.jittered(Duration::from_secs(40), 0.0, &mut random),
            Duration::from_secs(40)
        );
    }

    #[test]
    fn backoff_doubles_from_min_and_stops_at_max() {
        let mut random = Seeded::new(1);
        let backoffs: Vec<_> = (1..=6).map(|n| BOUNDS.backoff(n, 0.0, &mut random).as_secs()).collect();
        assert_eq!(backoffs, [10, 20, 40, 80, 100, 100]);
        assert_eq!(BOUNDS.backoff(u32::MAX, 0.0, &mut random), BOUNDS.max);
    }

    #[test]
    fn out_of_bounds_choices_are_clamped() {
        assert_eq!(BOUNDS.clamp(Duration::from_secs(3600)), BOUNDS.max);
        assert_eq!(BOUNDS.clamp(Duration::ZERO), BOUNDS.min);
        assert_eq!(BOUNDS.clamp(Duration::from_secs(42)), Duration::from_secs(42));
    }
}
