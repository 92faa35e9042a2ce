//! Where the gateway keeps its sync token: the daemon's store, written only
//! after the messages a sync brought were journaled, so a restart resumes
//! from the last sync whose messages are safe, and what came after is
//! fetched again (the journal drops what it already has).

use std::sync::Mutex;

use async_trait::async_trait;

/// The saved sync token.
#[async_trait]
pub trait SyncCursor: Send + Sync {
    /// The token saved last, if any.
    fn load(&self) -> Option<String>;

    /// Saves `token` durably; an error says why not (the gateway logs it and
    /// goes on: at worst, events come again and the core sees duplicates).
    async fn save(&self, token: &str) -> Result<(), String>;
}

/// A [`SyncCursor`] in memory: for tests.
#[derive(Debug, Default)]
pub struct MemoryCursor {
    token: Mutex<Option<String>>,
}

#[async_trait]
impl SyncCursor for MemoryCursor {
    fn load(&self) -> Option<String> {
        self.token
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    async fn save(&self, token: &str) -> Result<(), String> {
        *self.token.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(token.to_owned());
        Ok(())
    }
}
