//! Message ids for messages a client sent without one.
//!
//! The core deduplicates on (conversation, message id), so a made-up id must
//! never repeat, not even across daemon restarts: it joins the wall clock at
//! the gateway's start, in nanoseconds, with a counter.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use passepartout_gateway::MessageId;

#[derive(Debug)]
pub(crate) struct MessageIds {
    epoch_nanos: u128,
    counter: AtomicU64,
}

impl MessageIds {
    pub fn new() -> Self {
        let epoch_nanos = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos());
        Self {
            epoch_nanos,
            counter: AtomicU64::new(0),
        }
    }

    /// A fresh id, `gen-<start nanos>-<n>`.
    pub fn next(&self) -> MessageId {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        MessageId::new(format!("gen-{}-{n}", self.epoch_nanos)).expect("digits and dashes are a valid message id")
    }
}

/// Milliseconds since the Unix epoch, for `received_at_ms`.
pub(crate) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn ids_do_not_repeat() {
        let ids = MessageIds::new();
        let seen: HashSet<_> = (0..1000).map(|_| ids.next()).collect();
        assert_eq!(seen.len(), 1000);
        assert!(seen.iter().all(|id| id.as_str().starts_with("gen-")));
    }
}
