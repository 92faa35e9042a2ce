//! The `web_links` and `web_sessions` trees: the dashboard's one-time
//! sign-in links (hash → when it expires) and the browsers signed in (hash
//! → [`WebSession`]). Keys are SHA-256 hashes the caller made, so what a
//! browser holds is never on disk. A link is taken out in the same
//! operation that reads it, so it is used at most once even by two browsers
//! at the same moment.

use serde::{Deserialize, Serialize};

use super::Store;
use super::approvals::{decode, encode};
use super::error::StoreError;

/// A browser signed in to the dashboard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebSession {
    pub created_ms: u64,
    pub seen_ms: u64,
    /// What the browser said it is, cut short.
    pub user_agent: String,
}

impl Store {
    /// Keeps the link hashed `hash`, valid until `expires_ms`.
    pub fn keep_web_link(&self, hash: &[u8], expires_ms: u64) -> Result<(), StoreError> {
        let _writing = self.writing();
        let written = self.inner.web_links.insert(hash, &expires_ms.to_be_bytes()[..]);
        self.wrote(written.map(drop).map_err(StoreError::from))
    }

    /// Takes out the link hashed `hash`: when it expires, or none when there
    /// is no such link (never issued, or used).
    pub fn take_web_link(&self, hash: &[u8]) -> Result<Option<u64>, StoreError> {
        let _writing = self.writing();
        let taken = self.inner.web_links.remove(hash).map_err(StoreError::from);
        let taken = self.wrote(taken)?;
        Ok(taken.and_then(|value| <[u8; 8]>::try_from(value.as_ref()).ok().map(u64::from_be_bytes)))
    }

    /// Forgets the links that expired before `now_ms`.
    pub fn forget_web_links(&self, now_ms: u64) -> Result<(), StoreError> {
        let _writing = self.writing();
        let mut batch = sled::Batch::default();
        for item in self.inner.web_links.iter() {
            let (key, value) = item?;
            let expired = <[u8; 8]>::try_from(value.as_ref()).map_or(true, |b| u64::from_be_bytes(b) < now_ms);
            if expired {
                batch.remove(key);
            }
        }
        self.wrote(self.inner.web_links.apply_batch(batch).map_err(StoreError::from))
    }

    /// Keeps (or updates) the session hashed `hash`.
    pub fn keep_web_session(&self, hash: &[u8], session: &WebSession) -> Result<(), StoreError> {
        let _writing = self.writing();
        let value = encode("web_sessions", session)?;
        let written = self.inner.web_sessions.insert(hash, value);
        self.wrote(written.map(drop).map_err(StoreError::from))
    }

    /// Marks the session hashed `hash`, read as `was`, as `now`, unless it
    /// has been forgotten since (signed out or revoked): a session is never
    /// brought back by a request that was checking it meanwhile. Whether the
    /// session is still there.
    pub fn touch_web_session(&self, hash: &[u8], was: &WebSession, now: &WebSession) -> Result<bool, StoreError> {
        let _writing = self.writing();
        let (was, now) = (encode("web_sessions", was)?, encode("web_sessions", now)?);
        let swapped = self
            .inner
            .web_sessions
            .compare_and_swap(hash, Some(was), Some(now))
            .map_err(StoreError::from);
        // Changed by another request meanwhile is still there; gone is gone.
        Ok(match self.wrote(swapped)? {
            Ok(()) => true,
            Err(changed) => changed.current.is_some(),
        })
    }

    /// The session hashed `hash`, if there is one.
    pub fn web_session(&self, hash: &[u8]) -> Result<Option<WebSession>, StoreError> {
        match self.inner.web_sessions.get(hash)? {
            Some(value) => decode("web_sessions", &value).map(Some),
            None => Ok(None),
        }
    }

    /// Every session, by its hash; an unreadable one is left out (it cannot
    /// be shown, and it is forgotten when next looked up).
    pub fn web_sessions(&self) -> Result<Vec<(Vec<u8>, WebSession)>, StoreError> {
        let mut sessions = Vec::new();
        for item in self.inner.web_sessions.iter() {
            let (key, value) = item?;
            if let Ok(session) = decode("web_sessions", &value) {
                sessions.push((key.to_vec(), session));
            }
        }
        Ok(sessions)
    }

    /// Forgets the session hashed `hash`; whether there was one.
    pub fn forget_web_session(&self, hash: &[u8]) -> Result<bool, StoreError> {
        let _writing = self.writing();
        let removed = self.inner.web_sessions.remove(hash).map_err(StoreError::from);
        Ok(self.wrote(removed)?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{open_temp, reopen};

    #[test]
    fn a_link_is_taken_once_and_sessions_outlive_a_reopen() {
        let (dir, store) = open_temp();
        store.keep_web_link(b"link", 500).unwrap();
        store.keep_web_link(b"old", 100).unwrap();
        store.forget_web_links(200).unwrap();
        assert_eq!(store.take_web_link(b"old").unwrap(), None, "expired ones are forgotten");
        assert_eq!(store.take_web_link(b"link").unwrap(), Some(500));
        assert_eq!(store.take_web_link(b"link").unwrap(), None, "taken once");
        let session = WebSession {
            created_ms: 1,
            seen_ms: 2,
            user_agent: "Firefox".into(),
        };
        store.keep_web_session(b"session", &session).unwrap();
        drop(store);
        let store = reopen(&dir.path().join("store"));
        assert_eq!(store.web_session(b"session").unwrap(), Some(session.clone()));
        assert_eq!(store.web_sessions().unwrap(), vec![(b"session".to_vec(), session)]);
        assert!(store.forget_web_session(b"session").unwrap());
        assert!(!store.forget_web_session(b"session").unwrap());
        assert_eq!(store.web_session(b"session").unwrap(), None);
    }

    #[test]
    fn a_session_forgotten_while_it_was_checked_stays_forgotten() {
        let (_dir, store) = open_temp();
        let was = WebSession {
            created_ms: 1,
            seen_ms: 1,
            user_agent: "a browser".into(),
        };
        let later = WebSession {
            seen_ms: 90_000,
            ..was.clone()
        };
        store.keep_web_session(b"h", &was).unwrap();
        assert!(store.touch_web_session(b"h", &was, &later).unwrap());
        assert_eq!(store.web_session(b"h").unwrap(), Some(later.clone()));
        let stale = later.clone();
        let newer = WebSession {
            seen_ms: 95_000,
            ..was.clone()
        };
        assert!(
            store.touch_web_session(b"h", &was, &newer).unwrap(),
            "touched by another meanwhile: still there"
        );
        assert_eq!(
            store.web_session(b"h").unwrap(),
            Some(later),
            "and left as the other made it"
        );
        assert!(store.forget_web_session(b"h").unwrap());
        assert!(!store.touch_web_session(b"h", &stale, &newer).unwrap());
        assert_eq!(
            store.web_session(b"h").unwrap(),
            None,
            "a revoked session is not brought back"
        );
    }
}
