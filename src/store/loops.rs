//! The `loops` tree: the definitions of the loops that must outlive a
//! restart (those made with the `schedule` tool, and the next runs of the
//! config's `[[loops.entries]]`), by loop name, as JSON. The store only keeps
//! the bytes; `crate::schedules` gives them their meaning.

use super::Store;
use super::error::StoreError;

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
        self.gated(move |store| store.inner.loops.insert(name.as_bytes(), record))
            .await??;
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
            .await??;
        self.durable().await?;
        Ok(swapped.is_ok())
    }

    /// Forgets loop `name`, durably; whether it was stored.
    pub async fn remove_loop_record(&self, name: &str) -> Result<bool, StoreError> {
        let name = name.to_owned();
        let removed = self
            .gated(move |store| store.inner.loops.remove(name.as_bytes()))
            .await??;
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
}
