//! The `loops` tree: the definitions of the loops that must outlive a
//! restart (those made with the `remind` and `schedule` tools, and the next
//! runs of the config's `[[loops.entries]]`), by loop name, as JSON. The
//! store only keeps the bytes; the loops' book (`src/engine/loops/schedules.rs`)
//! gives them their meaning.
//! A loop's iteration updates its record in the turn's own transaction
//! ([`LoopRecordWrite`]), so the run and its next run are kept together.

use sled::transaction::{ConflictableTransactionError, TransactionalTree};

use super::Store;
use super::error::StoreError;

/// A loop's record replaced in a turn's commit — only if it is still
/// `expected`: a loop removed (or changed) meanwhile is left as it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopRecordWrite {
    pub name: String,
    pub expected: Vec<u8>,
    pub new: Vec<u8>,
}

impl LoopRecordWrite {
    pub(super) fn apply_in(&self, loops: &TransactionalTree) -> Result<(), ConflictableTransactionError<StoreError>> {
        let current = loops.get(self.name.as_bytes())?;
        if current.is_some_and(|current| current == self.expected.as_slice()) {
            loops.insert(self.name.as_bytes(), self.new.as_slice())?;
        }
        Ok(())
    }
}

impl Store {
    /// Every stored loop: its name and its record.
    pub fn loop_records(&self) -> Result<Vec<(String, Vec<u8>)>, StoreError> {
        let mut records = Vec::new();
        for item in self.inner.loops.iter() {
            let (name, value) = item?;
            let name = String::from_utf8(name.to_vec()).map_err(|e| StoreError::Corrupt {
                tree: "loops",
                reason: e.to_string(),
            })?;
            records.push((name, value.to_vec()));
        }
        Ok(records)
    }

    /// The stored record of loop `name`, if any.
    pub fn loop_record(&self, name: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.inner.loops.get(name)?.map(|value| value.to_vec()))
    }

    /// Stores loop `name`'s record, durably.
    pub async fn put_loop_record(&self, name: &str, record: Vec<u8>) -> Result<(), StoreError> {
        let name = name.to_owned();
        let written = self
            .gated(move |store| store.inner.loops.insert(name.as_bytes(), record))
            .await?;
        self.wrote(written.map_err(StoreError::from))?;
        self.durable().await
    }

    /// Replaces loop `name`'s record with `new` (none: forgets it) if it
    /// is still `expected` (none: there is none), durably; whether it was.
    pub async fn swap_loop_record(
        &self,
        name: &str,
        expected: Option<Vec<u8>>,
        new: Option<Vec<u8>>,
    ) -> Result<bool, StoreError> {
        let name = name.to_owned();
        let swapped = self
            .gated(move |store| store.inner.loops.compare_and_swap(name.as_bytes(), expected, new))
            .await?;
        let swapped = self.wrote(swapped.map_err(StoreError::from))?;
        self.durable().await?;
        Ok(swapped.is_ok())
    }

    /// Forgets loop `name`, durably; whether it was stored.
    pub async fn remove_loop_record(&self, name: &str) -> Result<bool, StoreError> {
        let name = name.to_owned();
        let removed = self
            .gated(move |store| store.inner.loops.remove(name.as_bytes()))
            .await?;
        let removed = self.wrote(removed.map_err(StoreError::from))?;
        self.durable().await?;
        Ok(removed.is_some())
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests_support::{open_temp, reopen};

    #[tokio::test]
    async fn records_survive_a_reopen_and_can_be_removed() {
        let (dir, store) = open_temp();
        store.put_loop_record("pills", b"{\"a\":1}".to_vec()).await.unwrap();
        store.put_loop_record("mail", b"{}".to_vec()).await.unwrap();
        let path = store.path().to_path_buf();
        drop(store);
        let store = reopen(&path);
        let names: Vec<_> = store.loop_records().unwrap().into_iter().map(|(n, _)| n).collect();
        assert_eq!(names, ["mail", "pills"]);
        assert_eq!(store.loop_record("pills").unwrap().unwrap(), b"{\"a\":1}");
        assert!(
            !store.swap_loop_record("mail", None, Some(b"x".to_vec())).await.unwrap(),
            "taken"
        );
        let changed = store.swap_loop_record("mail", Some(b"{}".to_vec()), Some(b"y".to_vec()));
        assert!(changed.await.unwrap());
        assert!(
            !store
                .swap_loop_record("mail", Some(b"{}".to_vec()), None)
                .await
                .unwrap(),
            "changed since"
        );
        assert!(store.remove_loop_record("pills").await.unwrap());
        assert!(!store.remove_loop_record("pills").await.unwrap());
        assert_eq!(store.loop_records().unwrap().len(), 1);
        assert_eq!(store.loop_record("mail").unwrap().unwrap(), b"y");
        drop(dir);
    }

    #[test]
    fn an_iteration_stores_the_next_run_with_its_commit_unless_the_loop_changed() {
        use crate::store::tests_support::conversation;
        use crate::store::{LoopRecordWrite, TurnCommit};
        let (_dir, store) = open_temp();
        store.inner.loops.insert("tea", b"old".as_slice()).unwrap();
        let iteration = |expected: &[u8], new: &[u8]| TurnCommit {
            history_record: Some(b"1".to_vec()),
            loop_record: Some(LoopRecordWrite {
                name: "tea".into(),
                expected: expected.to_vec(),
                new: new.to_vec(),
            }),
            ..TurnCommit::default()
        };
        store
            .commit_turn(&conversation("c"), iteration(b"old", b"next"))
            .unwrap();
        assert_eq!(store.loop_record("tea").unwrap().unwrap(), b"next");
        store
            .commit_turn(&conversation("c"), iteration(b"old", b"stale"))
            .unwrap();
        assert_eq!(
            store.loop_record("tea").unwrap().unwrap(),
            b"next",
            "changed meanwhile: left alone"
        );
        store.inner.loops.remove("tea").unwrap();
        store
            .commit_turn(&conversation("c"), iteration(b"next", b"back"))
            .unwrap();
        assert!(
            store.loop_record("tea").unwrap().is_none(),
            "a removed loop stays removed"
        );
        assert_eq!(
            store.history_len(&conversation("c")),
            3,
            "the turns themselves were kept"
        );
    }
}
