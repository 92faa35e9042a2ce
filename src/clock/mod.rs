//! Wall-clock milliseconds that advance with tokio's clock, so expiry and
//! other time logic can be tested under paused time: the wall time is read
//! once, at start, and advanced by tokio's monotonic clock from then on.
//! Beside it, [`schedule`]: the pure grammar and arithmetic of when
//! something recurs ("every 15 minutes", "daily at 07:30", cron), which
//! takes `now` as an argument and never reads a clock itself.

pub mod schedule;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    base_ms: u64,
    base: Instant,
}

impl Clock {
    /// A clock reading the wall time now.
    pub fn start() -> Self {
        let base_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or_default();
        Self::at(base_ms)
    }

    /// A clock that reads `base_ms` now.
    pub fn at(base_ms: u64) -> Self {
        Self {
            base_ms,
            base: Instant::now(),
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        self.base_ms + self.base.elapsed().as_millis() as u64
    }

    /// The tokio instant at which the clock reads `ms` (now, if that is past).
    pub fn instant_at(&self, ms: u64) -> Instant {
        let now = self.now_ms();
        Instant::now() + Duration::from_millis(ms.saturating_sub(now))
    }
}

/// Helpers for tests under paused time.
#[cfg(test)]
pub mod testing {
    use std::time::Duration;

    /// How long, in real time, a test waits for what it expects.
    const PATIENCE: Duration = Duration::from_secs(60);

    /// Awaits `future` with no tokio timer of its own — paused time jumps to
    /// the next timer whenever the runtime is idle, as it is while sled flushes
    /// on its own threads, so a timeout would fire in the middle of a commit —
    /// but aborts the test binary, loudly, if it takes [`PATIENCE`] of real time.
    pub async fn within_patience<T>(what: &str, future: impl Future<Output = T>) -> T {
        let (done, finished) = std::sync::mpsc::channel::<()>();
        let what = what.to_owned();
        std::thread::spawn(move || {
            if let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(PATIENCE) {
                eprintln!("{what}: nothing after {PATIENCE:?} of real time; aborting");
                std::process::abort();
            }
        });
        let output = future.await;
        drop(done);
        output
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn advances_with_tokio_time() {
        let clock = Clock::at(1_000);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(clock.now_ms(), 3_000);
        assert_eq!(clock.instant_at(4_000) - Instant::now(), Duration::from_secs(1));
        assert_eq!(clock.instant_at(0), Instant::now(), "the past is now");
    }
}
