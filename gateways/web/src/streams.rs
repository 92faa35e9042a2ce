//! The event streams open at once ([`Streams`]): at most [`MAX_STREAMS`]
//! pages' streams, one more closing the oldest so forgotten tabs cannot
//! pile up, and at most [`MAX_REPLIES`] replies being streamed, counted
//! apart and never closed for another. Every stream ends when the gateway
//! stops.

use std::collections::VecDeque;
use std::sync::Mutex;

use tokio_util::sync::CancellationToken;

/// Event streams open at once, at most.
pub const MAX_STREAMS: usize = 8;

/// Replies streamed at once, at most.
pub const MAX_REPLIES: usize = 8;

/// The open streams, oldest first, each with what closes it.
pub struct Streams {
    open: Mutex<VecDeque<(u64, CancellationToken)>>,
    /// Replies being streamed.
    replies: Mutex<usize>,
    next: std::sync::atomic::AtomicU64,
    /// Cancelled when the gateway stops: every stream ends.
    stopped: CancellationToken,
}

impl Streams {
    /// No stream open yet; every one ends when `stopped` is cancelled.
    pub fn new(stopped: CancellationToken) -> Self {
        Self {
            open: Mutex::default(),
            replies: Mutex::default(),
            next: Default::default(),
            stopped,
        }
    }

    /// A new stream's id and token, closing the oldest when there are too many.
    pub fn open(&self) -> (u64, CancellationToken) {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let token = self.stopped.child_token();
        let mut open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while open.len() >= MAX_STREAMS {
            if let Some((_, oldest)) = open.pop_front() {
                oldest.cancel();
            }
        }
        open.push_back((id, token.clone()));
        (id, token)
    }

    pub fn close(&self, id: u64) {
        let mut open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        open.retain(|(open_id, _)| *open_id != id);
    }

    /// A reply's token, unless [`MAX_REPLIES`] are being streamed.
    pub fn open_reply(&self) -> Option<CancellationToken> {
        let mut replies = self.replies.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if *replies >= MAX_REPLIES {
            return None;
        }
        *replies += 1;
        Some(self.stopped.child_token())
    }

    pub fn close_reply(&self) {
        let mut replies = self.replies.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *replies = replies.saturating_sub(1);
    }

    /// How many are open.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_past_the_cap_closes_the_oldest() {
        let streams = Streams::new(CancellationToken::new());
        let tokens: Vec<_> = (0..MAX_STREAMS).map(|_| streams.open()).collect();
        assert_eq!(streams.count(), MAX_STREAMS);
        let (_, newest) = streams.open();
        assert!(tokens[0].1.is_cancelled(), "the oldest is closed");
        assert!(!tokens[1].1.is_cancelled() && !newest.is_cancelled());
        assert_eq!(streams.count(), MAX_STREAMS);
        streams.close(tokens[1].0);
        assert_eq!(streams.count(), MAX_STREAMS - 1);
    }

    #[test]
    fn replies_past_their_cap_are_refused_and_close_no_other_stream() {
        let streams = Streams::new(CancellationToken::new());
        let (_, page) = streams.open();
        let replies: Vec<_> = (0..MAX_REPLIES).map(|_| streams.open_reply().unwrap()).collect();
        assert!(streams.open_reply().is_none(), "one more is refused");
        assert!(!page.is_cancelled() && replies.iter().all(|r| !r.is_cancelled()));
        streams.close_reply();
        assert!(streams.open_reply().is_some(), "a place given back is taken again");
    }

    #[test]
    fn stopping_the_gateway_closes_every_stream() {
        let stopped = CancellationToken::new();
        let streams = Streams::new(stopped.clone());
        let (_, token) = streams.open();
        stopped.cancel();
        assert!(token.is_cancelled());
    }
}
