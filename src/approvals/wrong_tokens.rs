//! The wrong-token rate limit: a sender who names too many tokens that do not
//! exist within an hour has further token answers refused unread, so tokens
//! cannot be guessed by trying.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use super::record::Person;

const HOUR_MS: u64 = 3_600_000;

pub struct WrongTokens {
    per_hour: u32,
    seen: Mutex<HashMap<String, VecDeque<u64>>>,
}

impl WrongTokens {
    pub fn per_hour(per_hour: u32) -> Self {
        Self {
            per_hour,
            seen: Mutex::default(),
        }
    }

    /// Whether `person` used up their wrong tokens for now.
    pub fn is_limited(&self, person: &Person, now_ms: u64) -> bool {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        let Some(times) = seen.get_mut(&person.to_string()) else {
            return false;
        };
        while times.front().is_some_and(|t| now_ms.saturating_sub(*t) >= HOUR_MS) {
            times.pop_front();
        }
        times.len() >= self.per_hour as usize
    }

    /// `person` named a token that does not exist.
    pub fn record(&self, person: &Person, now_ms: u64) {
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        // Forget senders whose window passed, so the map stays small.
        seen.retain(|_, times| times.back().is_some_and(|t| now_ms.saturating_sub(*t) < HOUR_MS));
        seen.entry(person.to_string()).or_default().push_back(now_ms);
    }
}
