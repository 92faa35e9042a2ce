//! How long the API's answers took ([`Latency`]), counted as they end and
//! read by `GET /metrics`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The upper bounds of the answer latency buckets, in seconds.
const BUCKETS: [f64; 10] = [0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 120.0];

/// How long the API's answers took, from the message taken to the turn's end.
#[derive(Default)]
pub struct Latency {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_us: AtomicU64,
}

impl Latency {
    /// Counts one answer that took `took`.
    pub fn record(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        for (bound, bucket) in BUCKETS.iter().zip(&self.buckets) {
            if seconds <= *bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        self.sum_us.fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// Each bucket's upper bound, in seconds, and the answers within it.
    pub fn buckets(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        BUCKETS
            .iter()
            .zip(&self.buckets)
            .map(|(bound, bucket)| (*bound, bucket.load(Ordering::Relaxed) as f64))
    }

    /// The time every answer took, in seconds, and how many there were.
    pub fn sum_and_count(&self) -> (f64, f64) {
        (
            self.sum_us.load(Ordering::Relaxed) as f64 / 1e6,
            self.count.load(Ordering::Relaxed) as f64,
        )
    }
}
