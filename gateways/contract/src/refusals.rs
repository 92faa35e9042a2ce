//! How often a chat gateway tells someone who is not allowed that the
//! assistant is private: at most once per person per [`REFUSAL_INTERVAL`], so
//! a stranger who keeps writing is not answered every time.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::ids::UserId;

/// How often the same person is told they are not allowed.
pub const REFUSAL_INTERVAL: Duration = Duration::from_secs(3600);

/// Who was told, and when; entries older than the interval are forgotten.
#[derive(Debug, Default)]
pub struct Refusals {
    told: Mutex<HashMap<UserId, Instant>>,
}

impl Refusals {
    /// Whether `user` should be told now (and remembers that they were, if so).
    pub fn should_tell(&self, user: &UserId) -> bool {
        let now = Instant::now();
        let mut told = self.told.lock().unwrap_or_else(PoisonError::into_inner);
        told.retain(|_, at| now.duration_since(*at) < REFUSAL_INTERVAL);
        if told.contains_key(user) {
            return false;
        }
        told.insert(user.clone(), now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn once_per_person_per_interval() {
        let refusals = Refusals::default();
        let (ada, bob) = (UserId::new("ada").unwrap(), UserId::new("bob").unwrap());
        assert!(refusals.should_tell(&ada));
        assert!(!refusals.should_tell(&ada), "not twice");
        assert!(refusals.should_tell(&bob), "each person once");
        tokio::time::advance(REFUSAL_INTERVAL - Duration::from_secs(1)).await;
        assert!(!refusals.should_tell(&ada));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(refusals.should_tell(&ada), "again after the interval");
    }
}
