//! Rate limit: at most N tool calls per conversation in any sliding minute
//! (`skills.tool_calls_per_minute`). A model stuck calling tools is stopped
//! here even below the depth limit, and one busy conversation cannot starve
//! the machine. Counted on tokio's clock, so tests run it under paused time.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use passepartout_gateway::ConversationKey;
use tokio::time::Instant;

use super::{ProposedCall, Skill, Verdict, priority};
use crate::model::signal::Origin;

const WINDOW: Duration = Duration::from_secs(60);

/// Conversations remembered before idle ones are dropped.
const MAX_TRACKED: usize = 4096;

pub struct RateLimit {
    limit: usize,
    calls: Mutex<HashMap<ConversationKey, VecDeque<Instant>>>,
}

impl RateLimit {
    pub fn per_minute(limit: u32) -> Self {
        Self {
            limit: limit as usize,
            calls: Mutex::new(HashMap::new()),
        }
    }
}

impl Skill for RateLimit {
    fn name(&self) -> &str {
        "rate_limit"
    }

    fn priority(&self) -> i32 {
        priority::RATE_LIMIT
    }

    fn counts_calls(&self) -> bool {
        true
    }

    fn gate(&self, _: &ProposedCall, origin: &Origin, now: Instant) -> Verdict {
        let Ok(mut calls) = self.calls.lock() else {
            return Verdict::Reject("the rate limiter is unavailable".into());
        };
        if calls.len() >= MAX_TRACKED {
            calls.retain(|_, times| times.back().is_some_and(|last| now.duration_since(*last) < WINDOW));
        }
        let times = calls.entry(origin.conversation.clone()).or_default();
        while times.front().is_some_and(|first| now.duration_since(*first) >= WINDOW) {
            times.pop_front();
        }
        if times.len() >= self.limit {
            let wait = times
                .front()
                .map(|first| WINDOW - now.duration_since(*first))
                .unwrap_or(WINDOW);
            return Verdict::Reject(format!(
                "this conversation reached its limit of {} tool calls a minute; try again in {} s",
                self.limit,
                wait.as_secs().max(1)
            ));
        }
        times.push_back(now);
        Verdict::Allow
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::safety::skills::tests::{origin, shell};

    #[tokio::test(start_paused = true)]
    async fn the_window_slides_per_conversation() {
        let limit = RateLimit::per_minute(2);
        let gate = |chat: &str| limit.gate(&shell("ls"), &origin(chat), Instant::now());
        assert_eq!(gate("a"), Verdict::Allow);
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(gate("a"), Verdict::Allow);
        assert!(matches!(gate("a"), Verdict::Reject(reason) if reason.contains("try again in 30 s")));
        assert_eq!(gate("b"), Verdict::Allow, "another conversation has its own budget");
        tokio::time::advance(Duration::from_secs(30)).await;
        assert_eq!(gate("a"), Verdict::Allow, "the first call left the window");
    }
}
