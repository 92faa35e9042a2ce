//! Waiting between attempts, for gateways that poll or reconnect: a jittered
//! exponential [`Backoff`], and [`sleep_or_shutdown`].
//!
//! Each failure in a row doubles the wait from `base` up to `max`; the wait is
//! then drawn between half of it and all of it, so several daemons (or a
//! restarted one) do not hit a platform in step. A success resets it.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The backoff state of one loop.
#[derive(Debug)]
pub struct Backoff {
    base: Duration,
    max: Duration,
    failures: u32,
}

impl Backoff {
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            base,
            max: max.max(base),
            failures: 0,
        }
    }

    /// The wait before the next attempt, after one more failure.
    pub fn next_delay(&mut self) -> Duration {
        let exponent = self.failures.min(16);
        self.failures = self.failures.saturating_add(1);
        let ceiling = self.base.saturating_mul(1 << exponent).min(self.max);
        let half = ceiling / 2;
        half + half.mul_f64(random_unit())
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

/// Milliseconds since the Unix epoch: an inbound message's `received_at_ms`.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// A number in [0, 1) from the process's random hash keys: enough for jitter.
fn random_unit() -> f64 {
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
}
