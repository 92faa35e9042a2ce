//! How many approvals were decided since the daemon started, by outcome,
//! for `status` and `/metrics`. Counted where a decision is recorded, so an
//! answer that lost to an earlier one is not counted twice.

use std::sync::atomic::{AtomicU64, Ordering};

use serde::Serialize;

use super::Status;

/// The decisions counted, as they were when read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Decisions {
    pub approved: u64,
    pub denied: u64,
    pub cancelled: u64,
    pub expired: u64,
}

/// The counters themselves.
#[derive(Default)]
pub(super) struct Tally {
    approved: AtomicU64,
    denied: AtomicU64,
    cancelled: AtomicU64,
    expired: AtomicU64,
}

impl Tally {
    /// Counts one decision with `outcome`; a pending one is no decision.
    pub(super) fn count(&self, outcome: Status) {
        let counter = match outcome {
            Status::Approved => &self.approved,
            Status::Denied => &self.denied,
            Status::Cancelled => &self.cancelled,
            Status::Expired => &self.expired,
            Status::Pending => return,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn read(&self) -> Decisions {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Decisions {
            approved: read(&self.approved),
            denied: read(&self.denied),
            cancelled: read(&self.cancelled),
            expired: read(&self.expired),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_has_its_own_counter_and_pending_counts_nowhere() {
        let tally = Tally::default();
        for outcome in [
            Status::Approved,
            Status::Approved,
            Status::Denied,
            Status::Expired,
            Status::Pending,
        ] {
            tally.count(outcome);
        }
        let expected = Decisions {
            approved: 2,
            denied: 1,
            cancelled: 0,
            expired: 1,
        };
        assert_eq!(tally.read(), expected);
    }
}
