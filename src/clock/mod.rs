//! Wall-clock milliseconds, and the tokio instant at which the clock will
//! read a given time. The daemon's clock ([`Clock::system`]) reads the
//! system's time at every call, so it follows NTP steps and a suspend; a
//! test's clock ([`Clock::at`]) starts at a given time and advances with
//! tokio's clock, so expiry and other time logic can be tested under paused
//! time. Beside it, [`schedule`]: the pure grammar and arithmetic of when
//! something recurs ("every 15 minutes", "daily at 07:30", cron), which
//! takes `now` as an argument and never reads a clock itself.

pub mod schedule;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::time::Instant;

#[derive(Clone, Copy, Debug)]
pub struct Clock {
    source: Source,
}

/// Where a clock's time comes from.
#[derive(Clone, Copy, Debug)]
enum Source {
    /// The system's wall time, read at every call.
    System,
    /// `base_ms` at `base`, advanced by tokio's clock since.
    Tokio { base_ms: u64, base: Instant },
}

impl Clock {
    /// The daemon's clock: [`Clock::system`].
    pub fn start() -> Self {
        Self::system()
    }

    /// A clock that reads the system's wall time at every call: a
    /// long-running daemon keeps up across a suspend and with the steps
    /// NTP makes.
    pub fn system() -> Self {
        Self { source: Source::System }
    }

    /// A clock that reads `base_ms` now and advances with tokio's clock
    /// (paused time included) from then on.
    pub fn at(base_ms: u64) -> Self {
        Self {
            source: Source::Tokio {
                base_ms,
                base: Instant::now(),
            },
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        match self.source {
            Source::System => system_ms(),
            Source::Tokio { base_ms, base } => base_ms + base.elapsed().as_millis() as u64,
        }
    }

    /// The tokio instant at which the clock reads `ms` (now, if that is past).
    pub fn instant_at(&self, ms: u64) -> Instant {
        let now = self.now_ms();
        Instant::now() + Duration::from_millis(ms.saturating_sub(now))
    }
}

/// The system's wall time, in milliseconds since the Unix epoch.
fn system_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
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
    async fn a_clock_at_a_time_advances_with_tokio_time() {
        let clock = Clock::at(1_000);
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(clock.now_ms(), 3_000);
        assert_eq!(clock.instant_at(4_000) - Instant::now(), Duration::from_secs(1));
        assert_eq!(clock.instant_at(0), Instant::now(), "the past is now");
    }

    #[tokio::test(start_paused = true)]
    async fn the_system_clock_reads_the_system_time_whatever_tokio_does() {
        let clock = Clock::system();
        tokio::time::advance(Duration::from_secs(3_600)).await;
        let before = system_ms();
        let read = clock.now_ms();
        let after = system_ms();
        assert!(before <= read && read <= after, "{before} <= {read} <= {after}");
        // Paused, tokio's now stands still while the system's time goes on.
        let due = clock.instant_at(read + 60_000) - Instant::now();
        assert!(
            due <= Duration::from_secs(60) && due > Duration::from_secs(50),
            "{due:?}"
        );
        assert_eq!(clock.instant_at(0), Instant::now(), "the past is now");
    }
}
