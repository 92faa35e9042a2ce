//! The journal: every accepted inbound message, written before the gateway may
//! acknowledge the platform, deduplicated by platform message id.

use passepartout_gateway::{ConversationKey, Inbound};
use serde::{Deserialize, Serialize};
use sled::Transactional;
use sled::transaction::ConflictableTransactionError;

use super::error::StoreError;
use super::{Store, keys};

/// One journaled inbound message.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct JournalEntry {
    pub seq: u64,
    pub inbound: Inbound,
    pub accepted_at_ms: u64,
}

/// The outcome of journaling an inbound message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accepted {
    /// Newly journaled under this sequence number; it is pending.
    New(u64),
    /// Journaled before, under this sequence number.
    Duplicate(u64),
}

impl Store {
    /// Journals `inbound` unless the same conversation already had a message
    /// with its platform id. Not durable until [`Store::durable`] returns.
    pub fn journal_accept(&self, inbound: &Inbound, now_ms: u64) -> Result<Accepted, StoreError> {
        let mut outcome = self.journal_accept_batch(std::slice::from_ref(inbound), now_ms)?;
        Ok(outcome.remove(0))
    }

    /// Journals a batch of inbound messages in one transaction (one log write
    /// for all of them), each unless its conversation already had a message
    /// with its platform id — earlier in the store or earlier in the batch.
    /// Outcomes are in input order. Not durable until [`Store::durable`] returns.
    pub fn journal_accept_batch(&self, batch: &[Inbound], now_ms: u64) -> Result<Vec<Accepted>, StoreError> {
        struct Prepared {
            seq: u64,
            record: Vec<u8>,
            dedupe_key: Vec<u8>,
            conversation: Vec<u8>,
        }
        let prepared = batch
            .iter()
            .map(|inbound| {
                let seq = self.next_id()?;
                let entry = JournalEntry {
                    seq,
                    inbound: inbound.clone(),
                    accepted_at_ms: now_ms,
                };
                let record = serde_json::to_vec(&entry).map_err(|e| StoreError::Corrupt {
                    tree: "journal",
                    reason: e.to_string(),
                })?;
                Ok(Prepared {
                    seq,
                    record,
                    dedupe_key: keys::dedupe(&inbound.conversation, &inbound.message_id),
                    conversation: keys::conversation_prefix(&inbound.conversation),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let inner = &self.inner;
        let outcomes = (&inner.dedupe, &inner.journal, &inner.pending).transaction(|(dedupe, journal, pending)| {
            let mut outcomes = Vec::with_capacity(prepared.len());
            for item in &prepared {
                // Reads see this transaction's own writes, so a duplicate
                // within the batch is caught too.
                if let Some(existing) = dedupe.get(&item.dedupe_key)? {
                    let existing = keys::decode_u64(&existing).ok_or_else(|| {
                        ConflictableTransactionError::Abort(StoreError::Corrupt {
                            tree: "dedupe",
                            reason: "sequence is not 8 bytes".into(),
                        })
                    })?;
                    outcomes.push(Accepted::Duplicate(existing));
                    continue;
                }
                dedupe.insert(item.dedupe_key.as_slice(), &keys::seq(item.seq))?;
                journal.insert(&keys::seq(item.seq), item.record.as_slice())?;
                pending.insert(&keys::seq(item.seq), item.conversation.as_slice())?;
                outcomes.push(Accepted::New(item.seq));
            }
            Ok(outcomes)
        })?;
        Ok(outcomes)
    }

    /// The journal entry `seq`, if it exists.
    pub fn journal_entry(&self, seq: u64) -> Result<Option<JournalEntry>, StoreError> {
        let Some(bytes) = self.inner.journal.get(keys::seq(seq))? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Corrupt {
                tree: "journal",
                reason: e.to_string(),
            })
    }

    /// Whether `seq` is journaled but its turn has not committed yet.
    pub fn is_pending(&self, seq: u64) -> Result<bool, StoreError> {
        Ok(self.inner.pending.contains_key(keys::seq(seq))?)
    }

    /// Every pending message, oldest first, with its conversation.
    pub fn pending(&self) -> Result<Vec<(u64, ConversationKey)>, StoreError> {
        let mut out = Vec::new();
        for item in self.inner.pending.iter() {
            let (key, conversation) = item?;
            let seq = keys::decode_u64(&key);
            let conversation = keys::conversation_of(&conversation);
            match (seq, conversation) {
                (Some(seq), Some(conversation)) => out.push((seq, conversation)),
                _ => {
                    return Err(StoreError::Corrupt {
                        tree: "pending",
                        reason: "unreadable entry".into(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// How many messages wait to be processed.
    pub fn pending_count(&self) -> usize {
        self.inner.pending.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{inbound, open_temp};

    #[test]
    fn a_message_id_seen_twice_is_journaled_once() {
        let (_dir, store) = open_temp();
        let first = store.journal_accept(&inbound("c", "m1", "hi"), 1).unwrap();
        let Accepted::New(seq) = first else {
            panic!("expected new, got {first:?}")
        };
        assert_eq!(
            store.journal_accept(&inbound("c", "m1", "hi"), 2).unwrap(),
            Accepted::Duplicate(seq)
        );
        assert!(matches!(
            store.journal_accept(&inbound("other", "m1", "hi"), 3).unwrap(),
            Accepted::New(_)
        ));
        assert_eq!(store.pending_count(), 2);
        assert_eq!(
            store.journal_entry(seq).unwrap().unwrap().inbound,
            inbound("c", "m1", "hi")
        );
    }

    #[test]
    fn a_batch_dedupes_against_the_store_and_within_itself() {
        let (_dir, store) = open_temp();
        let Accepted::New(old) = store.journal_accept(&inbound("c", "m1", "hi"), 1).unwrap() else {
            panic!()
        };
        let batch = [
            inbound("c", "m1", "again"),
            inbound("c", "m2", "new"),
            inbound("c", "m2", "copy"),
        ];
        let outcomes = store.journal_accept_batch(&batch, 2).unwrap();
        assert_eq!(outcomes[0], Accepted::Duplicate(old));
        let Accepted::New(new) = outcomes[1] else {
            panic!("{outcomes:?}")
        };
        assert_eq!(outcomes[2], Accepted::Duplicate(new));
        assert_eq!(store.pending_count(), 2);
    }

    #[test]
    fn pending_lists_oldest_first_with_the_conversation() {
        let (_dir, store) = open_temp();
        store.journal_accept(&inbound("a", "1", "x"), 1).unwrap();
        store.journal_accept(&inbound("b", "2", "y"), 1).unwrap();
        let pending = store.pending().unwrap();
        let chats: Vec<_> = pending.iter().map(|(_, c)| c.chat.as_str().to_owned()).collect();
        assert_eq!(chats, ["a", "b"]);
        assert!(pending[0].0 < pending[1].0);
    }
}
