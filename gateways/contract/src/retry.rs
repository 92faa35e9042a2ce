//! Waiting between attempts: the one jittered exponential backoff of the
//! workspace ([`BackoffPolicy`], and [`Backoff`] that counts failures for a
//! loop), and [`sleep_or_shutdown`].
//!
//! Each failure in a row doubles the wait from `base` up to `max`
//! ([`exponential`]); the wait is then varied by its [`Jitter`], so several
//! daemons (or a restarted one) do not hit a platform in step. A success
//! resets it. The random draw is a parameter of [`BackoffPolicy::delay`], so a
//! caller with its own (seeded) randomness gets the same arithmetic.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// `base` doubled `doublings` times, capped at `max`.
pub fn exponential(base: Duration, max: Duration, doublings: u32) -> Duration {
    base.checked_mul(1 << doublings.min(31)).unwrap_or(max).min(max)
}

/// How a wait is varied around its exponential value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Jitter {
    /// Drawn between half the wait and all of it.
    HalfToFull,
    /// Up to this much added, the sum still capped at the policy's `max`.
    Add(Duration),
    /// Up to this much added, on top of `max` too: the waits at the cap
    /// stay spread out.
    AddBeyond(Duration),
}

/// How long to wait after failures in a row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BackoffPolicy {
    base: Duration,
    max: Duration,
    jitter: Jitter,
}

impl BackoffPolicy {
    /// Waits from `base` up to `max`, each drawn between half of it and all of it.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max: max.max(base),
            jitter: Jitter::HalfToFull,
        }
    }

    /// The same policy, its waits varied by `jitter` instead.
    pub fn with_jitter(self, jitter: Jitter) -> Self {
        Self { jitter, ..self }
    }

    /// The wait after `base` was doubled `doublings` times, varied by `unit`,
    /// a number in [0, 1) (from [`random_unit`], or a seeded source).
    pub fn delay(&self, doublings: u32, unit: f64) -> Duration {
        let ceiling = exponential(self.base, self.max, doublings);
        match self.jitter {
            Jitter::HalfToFull => {
                let half = ceiling / 2;
                half + half.mul_f64(unit)
            }
            Jitter::Add(spread) => (ceiling + spread.mul_f64(unit)).min(self.max),
            Jitter::AddBeyond(spread) => ceiling + spread.mul_f64(unit),
        }
    }

    /// [`delay`](Self::delay) with a random draw.
    pub fn random_delay(&self, doublings: u32) -> Duration {
        self.delay(doublings, random_unit())
    }
}

/// The backoff state of one loop: its policy and its failures in a row.
#[derive(Debug)]
pub struct Backoff {
    policy: BackoffPolicy,
    failures: u32,
}

impl Backoff {
    /// A backoff from `base` up to `max`, drawn between half and all of each wait.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self::with_policy(BackoffPolicy::new(base, max))
    }

    /// A backoff following `policy`.
    pub fn with_policy(policy: BackoffPolicy) -> Self {
        Self { policy, failures: 0 }
    }

    /// The wait before the next attempt, after one more failure.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.policy.random_delay(self.failures);
        self.failures = self.failures.saturating_add(1);
        delay
    }

    /// Forget the failures: the next one starts from `base` again.
    pub fn reset(&mut self) {
        self.failures = 0;
    }
}

/// Waits `delay`; `true` if `shutdown` fired first.
pub async fn sleep_or_shutdown(delay: Duration, shutdown: &CancellationToken) -> bool {
    tokio::select! {
        biased;
        () = shutdown.cancelled() => true,
        () = tokio::time::sleep(delay) => false,
    }
}

/// A number in [0, 1) from the process's random hash keys: enough for jitter.
pub fn random_unit() -> f64 {
    let mut hasher = RandomState::new().build_hasher();
    hasher.write_u64(0x5eed);
    (hasher.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_with_jitter_and_resets() {
        let base = Duration::from_secs(1);
        let max = Duration::from_secs(60);
        let mut backoff = Backoff::new(base, max);
        for attempt in 0..10u32 {
            let ceiling = base.saturating_mul(1 << attempt).min(max);
            let delay = backoff.next_delay();
            assert!(delay >= ceiling / 2 && delay <= ceiling, "attempt {attempt}: {delay:?}");
        }
        backoff.reset();
        assert!(backoff.next_delay() <= base);
    }

    #[test]
    fn exponential_doubles_and_stops_at_the_cap() {
        let secs = Duration::from_secs;
        let waits: Vec<_> = (0..6).map(|n| exponential(secs(10), secs(100), n).as_secs()).collect();
        assert_eq!(waits, [10, 20, 40, 80, 100, 100]);
        assert_eq!(exponential(secs(10), secs(100), u32::MAX), secs(100));
        assert_eq!(exponential(Duration::MAX, secs(100), 3), secs(100));
    }

    #[test]
    fn added_jitter_spreads_above_the_wait_and_stays_under_the_cap() {
        let policy = BackoffPolicy::new(Duration::from_secs(1), Duration::from_secs(300))
            .with_jitter(Jitter::Add(Duration::from_secs(1)));
        assert_eq!(policy.delay(3, 0.0), Duration::from_secs(8));
        assert_eq!(policy.delay(3, 0.5), Duration::from_millis(8_500));
        assert_eq!(policy.delay(30, 0.99), Duration::from_secs(300));
        let policy = BackoffPolicy::new(Duration::from_secs(1), Duration::from_secs(8));
        assert_eq!(policy.delay(5, 0.0), Duration::from_secs(4));
        assert_eq!(policy.delay(5, 0.5), Duration::from_secs(6));
    }

    #[test]
    fn jitter_beyond_the_cap_keeps_the_waits_at_the_cap_apart() {
        let policy = BackoffPolicy::new(Duration::from_secs(1), Duration::from_secs(64))
            .with_jitter(Jitter::AddBeyond(Duration::from_millis(500)));
        assert_eq!(policy.delay(0, 0.0), Duration::from_secs(1));
        assert_eq!(policy.delay(10, 0.0), Duration::from_secs(64));
        assert_eq!(policy.delay(10, 0.5), Duration::from_millis(64_250));
    }
}
