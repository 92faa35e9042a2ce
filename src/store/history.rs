//! Conversation history: one record per finished turn, per conversation.
//! The record's shape belongs to the pipeline; the store only keeps it in order.

use passepartout_gateway::ConversationKey;
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
        let prefix = keys::conversation_prefix(conversation);
        let mut records = self
            .inner
            .history
            .scan_prefix(prefix)
            .values()
            .rev()
            .take(turns)
            .map(|value| {
                let value = value?;
                serde_json::from_slice(&value).map_err(|e| StoreError::Corrupt {
                    tree: "history",
                    reason: e.to_string(),
                })
            })
            .collect::<Result<Vec<T>, StoreError>>()?;
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
