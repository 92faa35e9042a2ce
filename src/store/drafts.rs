//! Where the draft of a turn's reply was shown: the platform messages it
//! occupies, by the journal entry the turn answers, in the `drafts` tree.
//!
//! A draft is shown while its turn runs, before anything of the turn is
//! committed; if the daemon dies then, the turn runs again at the next start
//! and must find the draft it left, to write its new text there rather than
//! beside it. So the record is made durable as soon as a draft gains a
//! message. The turn's commit hands the messages on to its reply in the
//! outbox, after which the record is only a leftover: it is removed then,
//! and any that a crash left behind are swept at start.

use passepartout_gateway::MessageId;

use super::error::StoreError;
use super::{Store, keys};

impl Store {
    /// The messages of the draft shown for journal entry `seq`, if any.
    pub fn draft_messages(&self, seq: u64) -> Result<Vec<MessageId>, StoreError> {
        match self.inner.drafts.get(keys::seq(seq))? {
            None => Ok(Vec::new()),
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                tree: "drafts",
                reason: e.to_string(),
            }),
        }
    }

    /// Records that the draft for journal entry `seq` occupies `messages`,
    /// on disk before it returns.
    pub async fn keep_draft_messages(&self, seq: u64, messages: &[MessageId]) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec(messages).map_err(|e| StoreError::Corrupt {
            tree: "drafts",
            reason: e.to_string(),
        })?;
        self.wrote(
            self.inner
                .drafts
                .insert(keys::seq(seq), bytes)
                .map_err(StoreError::from),
        )?;
        self.durable().await
    }

    /// Forgets the draft of journal entry `seq`: its reply took it over.
    pub fn forget_draft(&self, seq: u64) -> Result<(), StoreError> {
        self.wrote(self.inner.drafts.remove(keys::seq(seq)).map_err(StoreError::from))?;
        Ok(())
    }

    /// Removes the records of drafts whose journal entry is gone (its turn
    /// committed, and the daemon stopped before the record was removed);
    /// returns how many.
    pub fn sweep_drafts(&self) -> Result<usize, StoreError> {
        let mut swept = 0;
        for item in self.inner.drafts.iter() {
            let (key, _) = item?;
            if self.inner.journal.contains_key(&key)? {
                continue;
            }
            self.wrote(self.inner.drafts.remove(key).map_err(StoreError::from))?;
            swept += 1;
        }
        Ok(swept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{conversation, inbound, open_temp, reopen};
    use crate::store::{Accepted, TurnCommit};

    fn ids(ids: &[&str]) -> Vec<MessageId> {
        ids.iter().map(|id| MessageId::new(*id).unwrap()).collect()
    }

    #[tokio::test]
    async fn a_draft_outlives_a_restart_until_its_turn_commits() {
        let (_dir, store) = open_temp();
        let path = store.path().to_path_buf();
        let Accepted::New(seq) = store.journal_accept(&inbound("c", "m", "hi"), 0).unwrap() else {
            panic!("a new message")
        };
        store.keep_draft_messages(seq, &ids(&["41", "42"])).await.unwrap();
        drop(store);
        let store = reopen(&path);
        assert_eq!(store.sweep_drafts().unwrap(), 0, "its turn has not committed");
        assert_eq!(store.draft_messages(seq).unwrap(), ids(&["41", "42"]));
        let turn = TurnCommit {
            journal_seq: Some(seq),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), turn).unwrap();
        assert_eq!(store.sweep_drafts().unwrap(), 1, "a leftover once the turn committed");
        assert!(store.draft_messages(seq).unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_forgotten_draft_is_gone() {
        let (_dir, store) = open_temp();
        store.keep_draft_messages(7, &ids(&["1"])).await.unwrap();
        store.forget_draft(7).unwrap();
        assert!(store.draft_messages(7).unwrap().is_empty());
        assert_eq!(store.sweep_drafts().unwrap(), 0);
    }
}
