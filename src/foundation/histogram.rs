//! A histogram of durations with fixed buckets, for `status` and the web
//! gateway's `/metrics`: one atomic add per bucket a value is counted in,
//! no lock and no allocation, so a turn pays next to nothing to be timed.
//! Read as a [`Snapshot`] in the cumulative form Prometheus expects.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

/// The upper bounds of the turn time buckets, in seconds: from a command's
/// instant answer to a long run of tool calls.
pub const TURN_BUCKETS: [f64; 11] = [0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// Durations counted into the buckets `bounds` names (seconds, ascending).
pub struct Histogram {
    bounds: &'static [f64],
    /// One per bound, not cumulative: a value is added to the first bucket
    /// it fits, so recording is one add; a value past every bound is only
    /// in `count`.
    buckets: Box<[AtomicU64]>,
    count: AtomicU64,
    sum_us: AtomicU64,
}

/// One bucket as read: how many values were at most `le` seconds.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Bucket {
    pub le: f64,
    pub count: u64,
}

/// A histogram as read, its buckets cumulative.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Snapshot {
    pub buckets: Vec<Bucket>,
    /// Seconds, all values together.
    pub sum: f64,
    pub count: u64,
}

impl Histogram {
    /// An empty histogram over `bounds`.
    pub fn new(bounds: &'static [f64]) -> Self {
        Self {
            bounds,
            buckets: bounds.iter().map(|_| AtomicU64::new(0)).collect(),
            count: AtomicU64::new(0),
            sum_us: AtomicU64::new(0),
        }
    }

    /// Counts one value that took `took`.
    pub fn record(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        if let Some(index) = self.bounds.iter().position(|bound| seconds <= *bound) {
            self.buckets[index].fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(took.as_micros()).unwrap_or(u64::MAX);
        self.sum_us.fetch_add(micros, Ordering::Relaxed);
    }

    /// The counts now, cumulative.
    pub fn snapshot(&self) -> Snapshot {
        let mut below = 0;
        let buckets = self
            .bounds
            .iter()
            .zip(self.buckets.iter())
            .map(|(le, bucket)| {
                below += bucket.load(Ordering::Relaxed);
                Bucket { le: *le, count: below }
            })
            .collect();
        Snapshot {
            buckets,
            sum: self.sum_us.load(Ordering::Relaxed) as f64 / 1e6,
            count: self.count.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: [f64; 3] = [0.1, 1.0, 10.0];

    fn counts(histogram: &Histogram) -> Vec<u64> {
        histogram.snapshot().buckets.iter().map(|b| b.count).collect()
    }

    #[test]
    fn a_value_counts_in_every_bucket_at_or_above_it() {
        let histogram = Histogram::new(&BOUNDS);
        histogram.record(Duration::from_millis(50));
        histogram.record(Duration::from_millis(500));
        histogram.record(Duration::from_secs(3));
        assert_eq!(counts(&histogram), [1, 2, 3]);
        assert_eq!(histogram.snapshot().count, 3);
        let sum = histogram.snapshot().sum;
        assert!((sum - 3.55).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn a_value_on_a_bound_falls_in_that_bucket() {
        let histogram = Histogram::new(&BOUNDS);
        histogram.record(Duration::from_secs(1));
        assert_eq!(counts(&histogram), [0, 1, 1]);
    }

    #[test]
    fn a_value_past_every_bound_is_only_counted() {
        let histogram = Histogram::new(&BOUNDS);
        histogram.record(Duration::from_secs(11));
        assert_eq!(counts(&histogram), [0, 0, 0]);
        assert_eq!(histogram.snapshot().count, 1);
    }

    #[test]
    fn nothing_recorded_reads_as_zeros() {
        let histogram = Histogram::new(&BOUNDS);
        assert_eq!(counts(&histogram), [0, 0, 0]);
        assert_eq!(histogram.snapshot().sum, 0.0);
    }
}
