//! Conversation history: one record per finished turn, per conversation.
//! The record's shape belongs to the pipeline; the store only keeps it in order.

use passepartout_gateway::{ConversationKey, GatewayId};
use serde::de::DeserializeOwned;

use super::error::StoreError;
use super::{Store, keys};

impl Store {
    /// The last `turns` history records of `conversation`, oldest first.
    pub fn recent_turns<T: DeserializeOwned>(
        &self,
        conversation: &ConversationKey,
        turns: usize,
    ) -> Result<Vec<T>, StoreError> {
        self.recent_turns_after(conversation, turns, None)
    }

    /// Like [`Store::recent_turns`], but only the turns above `mark` (see
    /// [`Store::history_mark`]), when there is one.
    pub fn recent_turns_after<T: DeserializeOwned>(
        &self,
        conversation: &ConversationKey,
        turns: usize,
        mark: Option<u64>,
    ) -> Result<Vec<T>, StoreError> {
        let kept = self.recent_kept_after(conversation, turns, mark)?;
        Ok(kept.into_iter().map(|(_, record)| record).collect())
    }

    /// Like [`Store::recent_turns_after`], each record with its id (what a
    /// summary's mark refers to).
    pub fn recent_kept_after<T: DeserializeOwned>(
        &self,
        conversation: &ConversationKey,
        turns: usize,
        mark: Option<u64>,
    ) -> Result<Vec<(u64, T)>, StoreError> {
        let prefix = keys::conversation_prefix(conversation);
        let id_of = |key: &[u8]| key.get(prefix.len()..).and_then(keys::decode_u64);
        let above = |key: &[u8]| mark.is_none_or(|mark| id_of(key).is_some_and(|id| id > mark));
        let mut records = self
            .inner
            .history
            .scan_prefix(&prefix)
            .rev()
            .take_while(|item| item.as_ref().map_or(true, |(key, _)| above(key)))
            .take(turns)
            .map(|item| {
                let (key, value) = item?;
                let corrupt = |reason: String| StoreError::Corrupt {
                    tree: "history",
                    reason,
                };
                let id = id_of(&key).ok_or_else(|| corrupt("a history key without an id".into()))?;
                let record = serde_json::from_slice(&value).map_err(|e| corrupt(e.to_string()))?;
                Ok((id, record))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        records.reverse();
        Ok(records)
    }

    /// How many turns `conversation` has in its history.
    pub fn history_len(&self, conversation: &ConversationKey) -> usize {
        self.inner
            .history
            .scan_prefix(keys::conversation_prefix(conversation))
            .count()
    }

    /// Every history record of `conversation`, oldest first, still
    /// serialized: history search reads them all.
    pub fn all_turns(&self, conversation: &ConversationKey) -> Result<Vec<sled::IVec>, StoreError> {
        let prefix = keys::conversation_prefix(conversation);
        Ok(self
            .inner
            .history
            .scan_prefix(prefix)
            .values()
            .collect::<Result<_, _>>()?)
    }

    /// Every history record of every conversation on `gateway`, with its
    /// conversation, still serialized, in key order: a search over one
    /// person's conversations reads them, and picks that person's turns.
    pub fn turns_on(&self, gateway: &GatewayId) -> Result<Vec<(ConversationKey, sled::IVec)>, StoreError> {
        let mut prefix = gateway.as_str().as_bytes().to_vec();
        prefix.push(0);
        let mut turns = Vec::new();
        for item in self.inner.history.scan_prefix(prefix) {
            let (key, value) = item?;
            if let Some(conversation) = keys::conversation_of(&key) {
                turns.push((conversation, value));
            }
        }
        Ok(turns)
    }

    /// Every conversation with kept history, in key order: how many turns
    /// it keeps and its newest record, still serialized (the dashboard's
    /// listing dates each by it). One pass over the keys; only the last
    /// record of each conversation is read.
    pub fn conversations(&self) -> Result<Vec<(ConversationKey, usize, sled::IVec)>, StoreError> {
        let mut found: Vec<(ConversationKey, usize, sled::IVec)> = Vec::new();
        for item in self.inner.history.iter() {
            let (key, value) = item?;
            let Some(conversation) = keys::conversation_of(&key) else {
                continue;
            };
            match found.last_mut() {
                Some((last, turns, newest)) if *last == conversation => {
                    *turns += 1;
                    *newest = value;
                }
                _ => found.push((conversation, 1, value)),
            }
        }
        Ok(found)
    }

    /// Deletes every history record that `dated` (which reads a record's
    /// time, the record's shape being its writer's) says is older than
    /// `cutoff_ms`; records it cannot date are kept. Returns how many went.
    pub fn prune_history(&self, cutoff_ms: u64, dated: impl Fn(&[u8]) -> Option<u64>) -> Result<usize, StoreError> {
        let _writing = self.writing();
        let mut pruned = 0;
        for item in self.inner.history.iter() {
            let (key, value) = item?;
            if dated(&value).is_some_and(|at| at < cutoff_ms) {
                self.wrote(self.inner.history.remove(key).map_err(StoreError::from))?;
                pruned += 1;
            }
        }
        Ok(pruned)
    }

    pub(super) fn history_keys(&self, conversation: &ConversationKey) -> Result<Vec<sled::IVec>, StoreError> {
        let prefix = keys::conversation_prefix(conversation);
        Ok(self
            .inner
            .history
            .scan_prefix(prefix)
            .keys()
            .collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TurnCommit;
    use crate::store::tests::{conversation, open_temp};

    fn keep(store: &Store, chat: &str, record: &str) {
        let turn = TurnCommit {
            history_record: Some(record.as_bytes().to_vec()),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation(chat), turn).unwrap();
    }

    /// Records here are their time as text, or anything else for "undated".
    fn dated(value: &[u8]) -> Option<u64> {
        std::str::from_utf8(value).ok()?.parse().ok()
    }

    #[test]
    fn pruning_deletes_only_dated_records_older_than_the_cutoff() {
        let (_dir, store) = open_temp();
        keep(&store, "a", "100");
        keep(&store, "a", "undated");
        keep(&store, "b", "150");
        keep(&store, "a", "300");
        assert_eq!(store.prune_history(200, dated).unwrap(), 2);
        let left = |chat| -> Vec<Vec<u8>> {
            store
                .all_turns(&conversation(chat))
                .unwrap()
                .iter()
                .map(|v| v.to_vec())
                .collect()
        };
        assert_eq!(left("a"), [b"undated".to_vec(), b"300".to_vec()]);
        assert!(left("b").is_empty());
        assert_eq!(store.prune_history(200, dated).unwrap(), 0, "nothing twice");
    }

    #[test]
    fn conversations_are_listed_once_with_their_count_and_newest_record() {
        let (_dir, store) = open_temp();
        keep(&store, "a", "1");
        keep(&store, "b", "2");
        keep(&store, "a", "3");
        let listed: Vec<(String, usize, Vec<u8>)> = store
            .conversations()
            .unwrap()
            .into_iter()
            .map(|(key, turns, newest)| (key.chat.as_str().to_owned(), turns, newest.to_vec()))
            .collect();
        assert_eq!(
            listed,
            [("a".to_owned(), 2, b"3".to_vec()), ("b".to_owned(), 1, b"2".to_vec())]
        );
    }

    #[test]
    fn only_turns_after_the_mark_are_recent_but_all_stay() {
        let (_dir, store) = open_temp();
        keep(&store, "c", "1");
        keep(&store, "c", "2");
        let mark = store.history_mark().unwrap();
        keep(&store, "c", "3");
        let key = conversation("c");
        assert_eq!(store.recent_turns_after::<u32>(&key, 10, Some(mark)).unwrap(), [3]);
        assert_eq!(store.recent_turns_after::<u32>(&key, 10, None).unwrap(), [1, 2, 3]);
        assert_eq!(store.history_len(&key), 3);
        let later = store.history_mark().unwrap();
        assert!(
            store
                .recent_turns_after::<u32>(&key, 10, Some(later))
                .unwrap()
                .is_empty()
        );
    }
}
