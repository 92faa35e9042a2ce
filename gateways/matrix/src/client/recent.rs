//! A bounded memory of recent events: the assistant's own messages (to
//! know a reply or a reaction to one of them) and the thread each message
//! it was sent is in (to answer there). The oldest is forgotten first;
//! after a restart a reply to an older message is still taken by its
//! mention or in a direct chat, and an answer to a thread it forgot goes
//! to the room as a reply.

use std::collections::VecDeque;
use std::sync::{Mutex, PoisonError};

/// Event ids, each with a value, the newest [`Recent::KEPT`] of them.
#[derive(Debug, Default)]
pub struct Recent {
    entries: Mutex<VecDeque<(String, String)>>,
}

impl Recent {
    /// How many events are remembered.
    pub const KEPT: usize = 1024;

    /// Remembers `event` with `value`.
    pub fn remember(&self, event: &str, value: &str) {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() == Self::KEPT {
            entries.pop_front();
        }
        entries.push_back((event.to_owned(), value.to_owned()));
    }

    /// The value `event` was remembered with, the latest if twice.
    pub fn get(&self, event: &str) -> Option<String> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries
            .iter()
            .rev()
            .find(|(id, _)| id == event)
            .map(|(_, value)| value.clone())
    }

    /// Whether `event` is remembered.
    pub fn contains(&self, event: &str) -> bool {
        self.get(event).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_is_forgotten_first() {
        let recent = Recent::default();
        for index in 0..=Recent::KEPT {
            recent.remember(&format!("${index}"), "root");
        }
        assert!(!recent.contains("$0"));
        assert!(recent.contains("$1"));
        assert_eq!(recent.get(&format!("${}", Recent::KEPT)).as_deref(), Some("root"));
    }
}
