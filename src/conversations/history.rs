//! A conversation worker's copy of the conversation's recent turns.
//!
//! The worker is the only writer of its conversation's history, so after
//! loading the last N turns once it can keep them up to date itself instead
//! of reading and parsing them from the store for every turn. Any commit that
//! fails drops the copy; the next turn loads it again.

use std::collections::VecDeque;

use passepartout_gateway::ConversationKey;

use crate::pipeline::TurnRecord;
use crate::store::{Store, StoreError};

pub struct RecentHistory {
    limit: usize,
    turns: Option<VecDeque<TurnRecord>>,
}

impl RecentHistory {
    /// Keeps the last `limit` turns.
    pub fn new(limit: usize) -> Self {
        Self { limit, turns: None }
    }

    /// The recent turns, oldest first, loaded from `store` the first time.
    pub fn load(&mut self, store: &Store, key: &ConversationKey) -> Result<&[TurnRecord], StoreError> {
        if self.turns.is_none() {
            // Only the turns after the conversation's fresh start (`/new`).
            let mark = store.chat_settings(key)?.fresh_after;
            self.turns = Some(store.recent_turns_after(key, self.limit, mark)?.into());
        }
        Ok(self
            .turns
            .as_mut()
            .map(|turns| &*turns.make_contiguous())
            .unwrap_or_default())
    }

    /// A turn committed: `forget` cleared the history first, then `record`
    /// (if any) was appended.
    pub fn committed(&mut self, forget: bool, record: Option<TurnRecord>) {
        let Some(turns) = self.turns.as_mut() else {
            return;
        };
        if forget {
            turns.clear();
        }
        if let Some(record) = record {
            turns.push_back(record);
            while turns.len() > self.limit {
                turns.pop_front();
            }
        }
    }

    /// The store may differ from the copy: load it again next time.
    pub fn invalidate(&mut self) {
        self.turns = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::ChatMessage;
    use crate::store::TurnCommit;
    use crate::store::tests_support::{conversation, open_temp};

    fn record(text: &str) -> TurnRecord {
        TurnRecord {
            messages: vec![ChatMessage::user(text)],
            at_ms: None,
        }
    }

    fn texts(turns: &[TurnRecord]) -> Vec<String> {
        turns.iter().map(|t| t.messages[0].content.clone()).collect()
    }

    #[test]
    fn the_copy_matches_what_the_store_would_return() {
        let (_dir, store) = open_temp();
        let key = conversation("c");
        for text in ["a", "b", "c"] {
            let bytes = serde_json::to_vec(&record(text)).unwrap();
            store
                .commit_turn(
                    &key,
                    TurnCommit {
                        history_record: Some(bytes),
                        ..TurnCommit::default()
                    },
                )
                .unwrap();
        }
        let mut recent = RecentHistory::new(2);
        assert_eq!(texts(recent.load(&store, &key).unwrap()), ["b", "c"]);
        recent.committed(false, Some(record("d")));
        assert_eq!(texts(recent.load(&store, &key).unwrap()), ["c", "d"]);
        recent.committed(true, None);
        assert!(recent.load(&store, &key).unwrap().is_empty());
        recent.invalidate();
        assert_eq!(
            texts(recent.load(&store, &key).unwrap()),
            ["b", "c"],
            "reloaded from the store"
        );
    }
}
