//! Wall-clock milliseconds, and the tokio instant at which the clock will
//! read a given time. The daemon's clock ([`Clock::system`]) reads the
//! system's time at every call, so it follows NTP steps and a suspend; a
//! test's clock ([`Clock::at`]) starts at a given time and advances with
//! tokio's clock, so expiry and other time logic can be tested under paused
//! time. Beside it, [`schedule`]: the pure grammar and arithmetic of when
//! something recurs ("every 15 minutes", "daily at 07:30", cron), which
//! takes `now` as an argument and never reads a clock itself.

pub mod schedule;

use std::sync::atomic::{AtomicU64, Ordering};
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
    /// The system's wall time plus `ahead` milliseconds, which its holder
    /// may raise at any time.
    Shifted { ahead: &'static AtomicU64 },
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

    /// The system's wall time `ahead` milliseconds ahead: a whole daemon
    /// under test sees what happens once a deadline has passed, without
    /// waiting for it. The counter lives as long as the process (a test
    /// leaks one), so the clock stays `Copy`.
    pub fn shifted(ahead: &'static AtomicU64) -> Self {
        Self {
            source: Source::Shifted { ahead },
        }
    }

    /// Milliseconds since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        match self.source {
            Source::System => system_ms(),
            Source::Shifted { ahead } => system_ms() + ahead.load(Ordering::Relaxed),
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

    #[test]
    fn a_shifted_clock_is_ahead_by_what_its_counter_says() {
        let ahead: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
        let clock = Clock::shifted(ahead);
        let before = system_ms();
        ahead.store(3_600_000, Ordering::Relaxed);
        assert!(clock.now_ms() >= before + 3_600_000);
        assert!(clock.now_ms() < system_ms() + 3_600_000 + 60_000);
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
