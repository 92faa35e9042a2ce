//! The outbox: replies waiting for a gateway to confirm delivery, kept per
//! conversation in commit order so a restart delivers what was not confirmed.

use passepartout_gateway::{ConversationKey, Outbound};
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::{Store, keys};

/// A reply waiting for delivery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub outbound: Outbound,
    /// The journal entry this answers (marked done when delivered), if any.
    pub journal_seq: Option<u64>,
    /// Delivery attempts that failed so far.
    pub attempts: u32,
    #[serde(skip)]
    key: Vec<u8>,
}

impl OutboxEntry {
    pub(super) fn new(key: Vec<u8>, outbound: Outbound, journal_seq: Option<u64>) -> Self {
        Self {
            outbound,
            journal_seq,
            attempts: 0,
            key,
        }
    }

    pub(super) fn key(&self) -> &[u8] {
        &self.key
    }
}

fn decode(key: &[u8], value: &[u8]) -> Result<OutboxEntry, StoreError> {
    let mut entry: OutboxEntry = serde_json::from_slice(value).map_err(|e| StoreError::Corrupt {
        tree: "outbox",
        reason: e.to_string(),
    })?;
    entry.key = key.to_vec();
    Ok(entry)
}

impl Store {
    /// Waiting replies of `conversation`, oldest first.
    pub fn outbox_for(&self, conversation: &ConversationKey) -> Result<Vec<OutboxEntry>, StoreError> {
        let prefix = keys::conversation_prefix(conversation);
        self.inner
            .outbox
            .scan_prefix(prefix)
            .map(|item| {
                let (key, value) = item?;
                decode(&key, &value)
            })
            .collect()
    }

    /// Whether `conversation` has replies waiting.
    pub fn has_outbox(&self, conversation: &ConversationKey) -> bool {
        self.inner
            .outbox
            .scan_prefix(keys::conversation_prefix(conversation))
            .next()
            .is_some()
    }

    /// Conversations that have replies waiting.
    pub fn outbox_conversations(&self) -> Result<Vec<ConversationKey>, StoreError> {
        let mut out: Vec<ConversationKey> = Vec::new();
        for key in self.inner.outbox.iter().keys() {
            let key = key?;
            let conversation = keys::conversation_of(&key).ok_or_else(|| StoreError::Corrupt {
                tree: "outbox",
                reason: "unreadable key".into(),
            })?;
            if out.last() != Some(&conversation) {
                out.push(conversation);
            }
        }
        Ok(out)
    }

    /// How many replies wait for delivery.
    pub fn outbox_len(&self) -> usize {
        self.inner.outbox.len()
    }

    /// A gateway confirmed `entry`: forget it.
    pub fn outbox_delivered(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        self.wrote(self.inner.outbox.remove(entry.key()).map_err(StoreError::from))?;
        Ok(())
    }

    /// Records one more failed attempt at `entry`; returns the new count.
    pub fn outbox_failed(&self, entry: &OutboxEntry) -> Result<u32, StoreError> {
        let mut updated = entry.clone();
        updated.attempts += 1;
        let value = serde_json::to_vec(&updated).map_err(|e| StoreError::Corrupt {
            tree: "outbox",
            reason: e.to_string(),
        })?;
        // Only the conversation's worker touches its outbox entries, so a plain
        // write cannot race with the delivery that would remove it.
        self.wrote(self.inner.outbox.insert(entry.key(), value).map_err(StoreError::from))?;
        Ok(updated.attempts)
    }
}
