//! The messages the gateway sent, remembered so that they never come back
//! as input.
//!
//! On a person's own account the assistant answers in Note to Self, and a
//! message sent there may be handed back as a sync message (depending on
//! signal-cli's version and the account's other devices): taken as the
//! person's, each reply would start another turn, without end. Signal names
//! a message by its timestamp, which `send` reports; the last
//! [`REMEMBERED`] of them are kept, and a note to self carrying one of them
//! is the assistant's own, dropped.

use std::collections::{HashSet, VecDeque};
use std::sync::{Mutex, PoisonError};

/// How many sent timestamps are kept: far more than the replies that can be
/// in flight while their echoes come back.
pub const REMEMBERED: usize = 1024;

/// The timestamps of the last messages sent, oldest first out.
#[derive(Debug, Default)]
pub struct OwnSends {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    order: VecDeque<u64>,
    set: HashSet<u64>,
}

impl OwnSends {
    /// Remembers a message sent at `timestamp`, forgetting the oldest past
    /// [`REMEMBERED`].
    pub fn remember(&self, timestamp: u64) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if !inner.set.insert(timestamp) {
            return;
        }
        inner.order.push_back(timestamp);
        while inner.order.len() > REMEMBERED {
            if let Some(oldest) = inner.order.pop_front() {
                inner.set.remove(&oldest);
            }
        }
    }

    /// Whether a message sent at `timestamp` was one of ours.
    pub fn sent(&self, timestamp: u64) -> bool {
        (self.inner.lock().unwrap_or_else(PoisonError::into_inner))
            .set
            .contains(&timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_what_was_sent_and_forgets_the_oldest_past_the_bound() {
        let sends = OwnSends::default();
        assert!(!sends.sent(1));
        sends.remember(1);
        sends.remember(1);
        assert!(sends.sent(1));
        for timestamp in 2..=REMEMBERED as u64 + 1 {
            sends.remember(timestamp);
        }
        assert!(!sends.sent(1), "the oldest is forgotten");
        assert!(sends.sent(2) && sends.sent(REMEMBERED as u64 + 1));
    }
}
