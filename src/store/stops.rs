//! The turns a `/stop` stopped, by the journal entry each answers, in the
//! `stops` tree.
//!
//! A stopped turn commits at once, but a crash can come between the `/stop`
//! and that commit. The turn is then still pending at the next start, and
//! running it again would write the very answer the person stopped (into
//! the draft it left, too). So the intake marks the running turn stopped
//! before it cancels it, in the flush that makes the `/stop` durable, and a
//! pending turn found marked at the start is committed as stopped instead
//! of run. The mark goes with the turn's commit; any that a crash left
//! behind are swept at start.

use super::error::StoreError;
use super::{Store, keys};

impl Store {
    /// Marks the turn answering journal entry `seq` as stopped; on disk
    /// with the next flush.
    pub fn mark_stopped(&self, seq: u64) -> Result<(), StoreError> {
        self.wrote(
            self.inner
                .stops
                .insert(keys::seq(seq), &[])
                .map(drop)
                .map_err(StoreError::from),
        )
    }

    /// Whether the turn answering journal entry `seq` was stopped.
    pub fn was_stopped(&self, seq: u64) -> Result<bool, StoreError> {
        Ok(self.inner.stops.contains_key(keys::seq(seq))?)
    }

    /// Forgets the stop of journal entry `seq`: its turn committed.
    pub fn forget_stop(&self, seq: u64) -> Result<(), StoreError> {
        self.wrote(
            self.inner
                .stops
                .remove(keys::seq(seq))
                .map(drop)
                .map_err(StoreError::from),
        )
    }

    /// Removes the marks of stopped turns whose journal entry is gone (the
    /// turn committed, and the daemon stopped before the mark was removed);
    /// returns how many.
    pub fn sweep_stops(&self) -> Result<usize, StoreError> {
        let mut swept = 0;
        for item in self.inner.stops.iter() {
            let (key, _) = item?;
            if self.inner.journal.contains_key(&key)? {
                continue;
            }
            self.wrote(self.inner.stops.remove(key).map_err(StoreError::from))?;
            swept += 1;
        }
        Ok(swept)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::{conversation, inbound, open_temp, reopen};
    use crate::store::{Accepted, TurnCommit};

    #[tokio::test]
    async fn a_stop_outlives_a_restart_until_its_turn_commits() {
        let (_dir, store) = open_temp();
        let path = store.path().to_path_buf();
        let Accepted::New(seq) = store.journal_accept(&inbound("c", "m", "hi"), 0).unwrap() else {
            panic!("a new message")
        };
        assert!(!store.was_stopped(seq).unwrap());
        store.mark_stopped(seq).unwrap();
        store.durable().await.unwrap();
        drop(store);
        let store = reopen(&path);
        assert_eq!(store.sweep_stops().unwrap(), 0, "its turn has not committed");
        assert!(store.was_stopped(seq).unwrap());
        let turn = TurnCommit {
            journal_seq: Some(seq),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), turn).unwrap();
        assert_eq!(store.sweep_stops().unwrap(), 1, "a leftover once the turn committed");
        assert!(!store.was_stopped(seq).unwrap());
    }

    #[test]
    fn a_forgotten_stop_is_gone() {
        let (_dir, store) = open_temp();
        store.mark_stopped(7).unwrap();
        store.forget_stop(7).unwrap();
        assert!(!store.was_stopped(7).unwrap());
        assert_eq!(store.sweep_stops().unwrap(), 0);
    }
}
