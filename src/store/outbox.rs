//! The outbox: replies waiting for a gateway to confirm delivery, kept per
//! conversation in commit order so a restart delivers what was not confirmed.
//!
//! A reply that goes out in several parts records each part as it is sent
//! ([`Store::outbox_part_sent`]), so a retry, or a restart, resumes at the
//! first part not delivered instead of showing the person the earlier ones
//! twice.

use passepartout_gateway::{ConversationKey, MessageId, Outbound, OutboundBody};
use serde::{Deserialize, Serialize};
use sled::transaction::TransactionalTree;

use super::approvals::Abort;
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
    /// How many of the reply's parts went out already: the next attempt
    /// starts at this part.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub parts_sent: u32,
    /// The platform ids of the parts sent so far, for matching later
    /// replies and reactions to them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_ids: Vec<MessageId>,
    #[serde(skip)]
    key: Vec<u8>,
}

impl OutboxEntry {
    pub(super) fn new(key: Vec<u8>, outbound: Outbound, journal_seq: Option<u64>) -> Self {
        Self {
            outbound,
            journal_seq,
            attempts: 0,
            parts_sent: 0,
            part_ids: Vec::new(),
            key,
        }
    }

    pub(super) fn key(&self) -> &[u8] {
        &self.key
    }
}

/// An outbox entry's key and stored bytes, for a transaction to write.
pub(super) type KeyValue = (Vec<u8>, Vec<u8>);

/// Writes `notices` ([`Store::prepare_notices`]) into the outbox inside the
/// transaction that makes what they tell true.
pub(super) fn put_notices(outbox: &TransactionalTree, notices: &[KeyValue]) -> Result<(), Abort> {
    for (key, value) in notices {
        outbox.insert(key.as_slice(), value.as_slice())?;
    }
    Ok(())
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn encode(entry: &OutboxEntry) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(entry).map_err(|e| StoreError::Corrupt {
        tree: "outbox",
        reason: e.to_string(),
    })
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
        // Only the conversation's worker touches its outbox entries, so a plain
        // write cannot race with the delivery that would remove it.
        self.rewrite(&updated)?;
        Ok(updated.attempts)
    }

    /// Records that part `index` of `entry` went out (as `id`, if the
    /// platform gave one) and returns the entry as it is stored now. Call
    /// [`Store::durable`] before sending the next part, so a crash cannot
    /// forget it.
    pub fn outbox_part_sent(
        &self,
        entry: &OutboxEntry,
        index: u32,
        id: Option<&MessageId>,
    ) -> Result<OutboxEntry, StoreError> {
        let mut updated = entry.clone();
        if index < updated.parts_sent {
            // Told twice of one part (never by a well-behaved gateway): no change.
            return Ok(updated);
        }
        updated.parts_sent = index + 1;
        updated.part_ids.extend(id.cloned());
        self.rewrite(&updated)?;
        Ok(updated)
    }

    /// Outbox entries, as keys and values, for messages of the daemon's own
    /// that belong to no turn (a pairing request told to an owner): the
    /// caller writes them in the transaction that makes them true, so each
    /// is sent exactly when what it tells happened.
    pub(super) fn prepare_notices(
        &self,
        notices: &[(ConversationKey, OutboundBody)],
    ) -> Result<Vec<KeyValue>, StoreError> {
        if notices.is_empty() {
            return Ok(Vec::new());
        }
        let base = self.next_id()?;
        notices
            .iter()
            .enumerate()
            .map(|(index, (conversation, body))| {
                let outbound = Outbound {
                    id: format!("{base}-{index}"),
                    conversation: conversation.clone(),
                    in_reply_to: None,
                    body: body.clone(),
                    drafts: Vec::new(),
                    turn_end: None,
                };
                let key = keys::sequenced(conversation, &[base, index as u64]);
                let value = encode(&OutboxEntry::new(key.clone(), outbound, None))?;
                Ok((key, value))
            })
            .collect()
    }

    /// Writes `entry` over its stored form.
    fn rewrite(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        let value = encode(entry)?;
        self.wrote(self.inner.outbox.insert(entry.key(), value).map_err(StoreError::from))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, GatewayId, OutboundBody, ReplyKind};

    use super::*;
    use crate::store::{PendingOutbound, TurnCommit};

    fn conversation() -> ConversationKey {
        ConversationKey {
            gateway: GatewayId::new("telegram").unwrap(),
            chat: ChatId::new("42").unwrap(),
        }
    }

    fn committed(store: &Store) -> OutboxEntry {
        let reply = PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: None,
            body: OutboundBody::Text {
                text: "long".into(),
                kind: ReplyKind::Answer,
            },
        };
        let commit = TurnCommit {
            replies: vec![reply],
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation(), commit).unwrap().remove(0)
    }

    #[test]
    fn parts_sent_are_kept_and_read_back() {
        let (_dir, store) = crate::store::tests_support::open_temp();
        let entry = committed(&store);
        let id = MessageId::new("501").unwrap();
        let after_one = store.outbox_part_sent(&entry, 0, Some(&id)).unwrap();
        assert_eq!(
            (after_one.parts_sent, after_one.part_ids.clone()),
            (1, vec![id.clone()])
        );
        // A failed attempt afterwards keeps the progress.
        store.outbox_failed(&after_one).unwrap();
        let stored = store.outbox_for(&conversation()).unwrap().remove(0);
        assert_eq!((stored.parts_sent, stored.part_ids, stored.attempts), (1, vec![id], 1));
        // Told of the same part again: nothing changes.
        let again = store.outbox_part_sent(&after_one, 0, None).unwrap();
        assert_eq!(again.parts_sent, 1);
    }
}
