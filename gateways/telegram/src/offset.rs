//! Where the gateway keeps its `getUpdates` offset between runs.
//!
//! The offset is the id of the first update not yet handed to the core. The
//! gateway saves it after every batch, before it asks Telegram for more (which
//! is what confirms the earlier updates to Telegram), and starts from it after
//! a restart, so a restart neither loses nor repeats an update. The daemon
//! implements [`OffsetStore`] over its durable store.

use std::sync::Mutex;
use std::sync::PoisonError;

use async_trait::async_trait;

/// Durable storage of the polling offset.
#[async_trait]
pub trait OffsetStore: Send + Sync {
    /// The offset saved last, if any.
    fn load(&self) -> Option<i64>;

    /// Saves `offset` durably; an error says why not (the gateway logs it and
    /// goes on: at worst, updates come again and the core sees duplicates).
    async fn save(&self, offset: i64) -> Result<(), String>;
}

/// An [`OffsetStore`] in memory: for tests, and for running without a store.
#[derive(Debug, Default)]
pub struct MemoryOffsetStore {
    offset: Mutex<Option<i64>>,
}

impl MemoryOffsetStore {
    /// A store holding `offset`.
    pub fn new(offset: Option<i64>) -> Self {
        Self {
            offset: Mutex::new(offset),
        }
    }
}

#[async_trait]
impl OffsetStore for MemoryOffsetStore {
    fn load(&self) -> Option<i64> {
        *self.offset.lock().unwrap_or_else(PoisonError::into_inner)
    }

    async fn save(&self, offset: i64) -> Result<(), String> {
        *self.offset.lock().unwrap_or_else(PoisonError::into_inner) = Some(offset);
        Ok(())
    }
}
