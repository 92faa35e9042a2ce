//! The journal: every accepted inbound message, written before the gateway may
//! acknowledge the platform, deduplicated by platform message id, kept until
//! its turn commits. `pending` lists the same messages per conversation in
//! order; `dedupe` remembers platform ids for a window after that.

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
        let _writing = self.writing();
        self.wrote(self.journal_batch_ungated(batch, now_ms))
    }

    /// [`Store::journal_accept_batch`] for async callers; never blocks the
    /// runtime while a backup runs.
    pub async fn journal_accept_batch_async(
        &self,
        batch: Vec<Inbound>,
        now_ms: u64,
    ) -> Result<Vec<Accepted>, StoreError> {
        self.gated(move |store| store.wrote(store.journal_batch_ungated(&batch, now_ms)))
            .await?
    }

    fn journal_batch_ungated(&self, batch: &[Inbound], now_ms: u64) -> Result<Vec<Accepted>, StoreError> {
        struct Prepared {
            seq: u64,
            record: Vec<u8>,
            dedupe_key: Vec<u8>,
            pending_key: Vec<u8>,
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
                    pending_key: keys::sequenced(&inbound.conversation, &[seq]),
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        let inner = &self.inner;
        let mut dedupe_value = Vec::with_capacity(16);
        dedupe_value.extend_from_slice(&now_ms.to_be_bytes());
        let outcomes = (&inner.dedupe, &inner.journal, &inner.pending).transaction(|(dedupe, journal, pending)| {
            let mut outcomes = Vec::with_capacity(prepared.len());
            for item in &prepared {
                // Reads see this transaction's own writes, so a duplicate
                // within the batch is caught too.
                if let Some(existing) = dedupe.get(&item.dedupe_key)? {
                    let existing = keys::decode_u64(&existing[..8.min(existing.len())]).ok_or_else(|| {
                        ConflictableTransactionError::Abort(StoreError::Corrupt {
                            tree: "dedupe",
                            reason: "sequence is not 8 bytes".into(),
                        })
                    })?;
                    outcomes.push(Accepted::Duplicate(existing));
                    continue;
                }
                // Sequence, then acceptance time for the sweep.
                let mut value = keys::seq(item.seq).to_vec();
                value.extend_from_slice(&dedupe_value);
                dedupe.insert(item.dedupe_key.as_slice(), value)?;
                journal.insert(&keys::seq(item.seq), item.record.as_slice())?;
                pending.insert(item.pending_key.as_slice(), &[])?;
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

    /// Whether `seq` of `conversation` is journaled but its turn has not committed yet.
    pub fn is_pending(&self, conversation: &ConversationKey, seq: u64) -> Result<bool, StoreError> {
        Ok(self.inner.pending.contains_key(keys::sequenced(conversation, &[seq]))?)
    }

    /// The pending messages of `conversation`, oldest first.
    pub fn pending_for(&self, conversation: &ConversationKey) -> Result<Vec<u64>, StoreError> {
        let prefix = keys::conversation_prefix(conversation);
        self.inner
            .pending
            .scan_prefix(&prefix)
            .keys()
            .map(|key| {
                let key = key?;
                keys::decode_u64(&key[prefix.len()..]).ok_or_else(|| StoreError::Corrupt {
                    tree: "pending",
                    reason: "unreadable key".into(),
                })
            })
            .collect()
    }

    /// Every conversation with pending messages, with its newest pending sequence.
    pub fn pending_conversations(&self) -> Result<Vec<(ConversationKey, u64)>, StoreError> {
        let mut out: Vec<(ConversationKey, u64)> = Vec::new();
        for key in self.inner.pending.iter().keys() {
            let key = key?;
            let conversation = keys::conversation_of(&key);
            let seq = key.len().checked_sub(8).and_then(|at| keys::decode_u64(&key[at..]));
            let (Some(conversation), Some(seq)) = (conversation, seq) else {
                // One unreadable marker must not keep every other
                // conversation from being recovered.
                tracing::error!(key = ?&key[..], "unreadable pending marker skipped");
                continue;
            };
            match out.last_mut() {
                Some((last, newest)) if *last == conversation => *newest = seq,
                _ => out.push((conversation, seq)),
            }
        }
        Ok(out)
    }

    /// How many messages wait to be processed.
    pub fn pending_count(&self) -> usize {
        self.inner.pending.len()
    }

    /// Forgets platform message ids accepted before `cutoff_ms`: a copy of such
    /// a message arriving later would be taken as new. Returns how many went.
    pub fn prune_dedupe(&self, cutoff_ms: u64) -> Result<usize, StoreError> {
        let mut pruned = 0;
        for item in self.inner.dedupe.iter() {
            let (key, value) = item?;
            // Entries written before the time was recorded carry none: keep them
            // until the next schema version rather than guess.
            let accepted = value.get(8..16).and_then(keys::decode_u64);
            if accepted.is_some_and(|at| at < cutoff_ms) {
                self.wrote(self.inner.dedupe.remove(key).map_err(StoreError::from))?;
                pruned += 1;
            }
        }
        Ok(pruned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{conversation, inbound, open_temp};

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
    fn pending_is_listed_per_conversation_in_order() {
        let (_dir, store) = open_temp();
        let seq = |accepted| match accepted {
            Accepted::New(seq) => seq,
            other => panic!("{other:?}"),
        };
        let a1 = seq(store.journal_accept(&inbound("a", "1", "x"), 1).unwrap());
        let b1 = seq(store.journal_accept(&inbound("b", "2", "y"), 1).unwrap());
        let a2 = seq(store.journal_accept(&inbound("a", "3", "z"), 1).unwrap());
        assert_eq!(store.pending_for(&conversation("a")).unwrap(), [a1, a2]);
        assert_eq!(
            store.pending_conversations().unwrap(),
            [(conversation("a"), a2), (conversation("b"), b1)]
        );
        assert!(store.is_pending(&conversation("a"), a1).unwrap());
        assert!(!store.is_pending(&conversation("b"), a1).unwrap());
    }

    #[test]
    fn an_unreadable_pending_marker_does_not_stop_recovery() {
        let (_dir, store) = open_temp();
        store.journal_accept(&inbound("a", "1", "x"), 1).unwrap();
        store.inner.pending.insert(b"\xff\xfe", &[]).unwrap();
        assert_eq!(store.pending_conversations().unwrap().len(), 1);
    }

    #[test]
    fn old_dedupe_entries_are_swept_and_new_ones_kept() {
        let (_dir, store) = open_temp();
        store.journal_accept(&inbound("c", "old", "x"), 1_000).unwrap();
        store.journal_accept(&inbound("c", "new", "x"), 5_000).unwrap();
        assert_eq!(store.prune_dedupe(2_000).unwrap(), 1);
        assert!(matches!(
            store.journal_accept(&inbound("c", "old", "x"), 6_000).unwrap(),
            Accepted::New(_)
        ));
        assert!(matches!(
            store.journal_accept(&inbound("c", "new", "x"), 6_000).unwrap(),
            Accepted::Duplicate(_)
        ));
    }
}
