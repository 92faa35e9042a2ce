//! The counters `status` shows of the intake and the workers: what was
//! accepted, refused or shed, how many turns ran and failed, how many
//! replies went out. The intake counts through
//! [`Conversations::count`](super::Conversations::count), the workers here;
//! the status reads them all at once as [`Counts`].

use std::sync::atomic::{AtomicU64, Ordering};

/// Something that happened, counted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    /// A message journaled, new.
    Accepted,
    /// A message journaled before, offered again.
    Duplicate,
    /// A message answered busy: its conversation's queue was full.
    Busy,
    /// A message refused: not allowed, too large, a button its presser may
    /// not press.
    Refused,
    /// A turn that ran to its commit.
    Turn,
    /// A turn that failed, answered with an apology.
    TurnFailure,
    /// A reply delivered.
    Delivered,
}

/// The counters, as they were when read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub accepted: u64,
    pub duplicates: u64,
    pub busy: u64,
    pub refused: u64,
    pub turns: u64,
    pub turn_failures: u64,
    pub delivered: u64,
}

/// The counters themselves, shared by the intake and the workers.
#[derive(Default)]
pub(super) struct Stats {
    accepted: AtomicU64,
    duplicates: AtomicU64,
    busy: AtomicU64,
    refused: AtomicU64,
    turns: AtomicU64,
    turn_failures: AtomicU64,
    delivered: AtomicU64,
}

impl Stats {
    /// Counts one `what`.
    pub(super) fn bump(&self, what: Counted) {
        let counter = match what {
            Counted::Accepted => &self.accepted,
            Counted::Duplicate => &self.duplicates,
            Counted::Busy => &self.busy,
            Counted::Refused => &self.refused,
            Counted::Turn => &self.turns,
            Counted::TurnFailure => &self.turn_failures,
            Counted::Delivered => &self.delivered,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Every counter's value now.
    pub(super) fn read(&self) -> Counts {
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        Counts {
            accepted: read(&self.accepted),
            duplicates: read(&self.duplicates),
            busy: read(&self.busy),
            refused: read(&self.refused),
            turns: read(&self.turns),
            turn_failures: read(&self.turn_failures),
            delivered: read(&self.delivered),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thing_counted_has_its_own_counter() {
        let stats = Stats::default();
        for what in [
            Counted::Accepted,
            Counted::Duplicate,
            Counted::Duplicate,
            Counted::Busy,
            Counted::Refused,
            Counted::Turn,
            Counted::TurnFailure,
            Counted::Delivered,
            Counted::Delivered,
            Counted::Delivered,
        ] {
            stats.bump(what);
        }
        let expected = Counts {
            accepted: 1,
            duplicates: 2,
            busy: 1,
            refused: 1,
            turns: 1,
            turn_failures: 1,
            delivered: 3,
        };
        assert_eq!(stats.read(), expected);
    }
}
