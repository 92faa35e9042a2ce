//! The `web_keys` tree: the API keys of the web gateway's OpenAI-compatible
//! API, by the SHA-256 hash the caller made of the key, so what a client
//! holds is never on disk.

use serde::{Deserialize, Serialize};

use super::Store;
use super::approvals::{decode, encode};
use super::error::StoreError;

/// An API key, as kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebKey {
    /// What the owner called it (unique among the keys).
    pub name: String,
    pub created_ms: u64,
    /// Made with `--approver`: it answers the approvals of its own
    /// conversations. Keys kept before there was a choice do not.
    #[serde(default)]
    pub approver: bool,
}

impl Store {
    /// Keeps the key hashed `hash`.
    pub fn keep_web_key(&self, hash: &[u8], key: &WebKey) -> Result<(), StoreError> {
        let _writing = self.writing();
        let value = encode("web_keys", key)?;
        let written = self.inner.web_keys.insert(hash, value);
        self.wrote(written.map(drop).map_err(StoreError::from))
    }

    /// The key hashed `hash`, if there is one.
    pub fn web_key(&self, hash: &[u8]) -> Result<Option<WebKey>, StoreError> {
        match self.inner.web_keys.get(hash)? {
            Some(value) => decode("web_keys", &value).map(Some),
            None => Ok(None),
        }
    }

    /// Every key, by its hash; an unreadable one is left out.
    pub fn web_keys(&self) -> Result<Vec<(Vec<u8>, WebKey)>, StoreError> {
        let mut keys = Vec::new();
        for item in self.inner.web_keys.iter() {
            let (hash, value) = item?;
            if let Ok(key) = decode("web_keys", &value) {
                keys.push((hash.to_vec(), key));
            }
        }
        Ok(keys)
    }

    /// Forgets the key hashed `hash`; whether there was one.
    pub fn forget_web_key(&self, hash: &[u8]) -> Result<bool, StoreError> {
        let _writing = self.writing();
        let removed = self.inner.web_keys.remove(hash).map_err(StoreError::from);
        Ok(self.wrote(removed)?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{open_temp, reopen};

    #[test]
    fn keys_outlive_a_reopen_until_forgotten() {
        let (dir, store) = open_temp();
        let key = WebKey {
            name: "laptop".into(),
            created_ms: 5,
            approver: true,
        };
        store.keep_web_key(b"hash", &key).unwrap();
        drop(store);
        let store = reopen(&dir.path().join("store"));
        assert_eq!(store.web_key(b"hash").unwrap(), Some(key.clone()));
        assert_eq!(store.web_keys().unwrap(), vec![(b"hash".to_vec(), key)]);
        assert!(store.forget_web_key(b"hash").unwrap());
        assert!(!store.forget_web_key(b"hash").unwrap());
        assert_eq!(store.web_key(b"hash").unwrap(), None);
    }
}
