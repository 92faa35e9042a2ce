//! What can go wrong in the store.

use std::path::PathBuf;
use std::sync::Arc;

use thiserror::Error;

#[derive(Debug, Error)]
pub enum StoreError {
    #[error("cannot open the store at {}: {source} (is another passepartout using it?)", path.display())]
    Open { path: PathBuf, source: sled::Error },
    #[error("store schema version {found:?} is not the expected {expected}")]
    Schema { found: Option<u64>, expected: u64 },
    #[error("store I/O failed: {0}")]
    Io(#[from] sled::Error),
    #[error("a record in the {tree} tree cannot be read: {reason}")]
    Corrupt { tree: &'static str, reason: String },
    #[error("journal entry {seq} was processed already")]
    AlreadyProcessed { seq: u64 },
    #[error("a grouped commit failed: {0}")]
    Group(Arc<StoreError>),
    #[error("the store could not flush earlier and takes no more writes until restarted")]
    Poisoned,
    #[error("a store task failed: {0}")]
    Task(String),
    #[error("backup failed: {0}")]
    Backup(String),
    #[error("file system: {0}")]
    Fs(#[from] std::io::Error),
}

impl StoreError {
    /// Whether the storage itself failed (a full disk, an I/O error), as
    /// opposed to a record or a request being wrong.
    pub fn is_storage(&self) -> bool {
        match self {
            StoreError::Io(_) | StoreError::Fs(_) => true,
            StoreError::Group(inner) => inner.is_storage(),
            _ => false,
        }
    }
}

impl From<sled::transaction::TransactionError<StoreError>> for StoreError {
    fn from(error: sled::transaction::TransactionError<StoreError>) -> Self {
        match error {
            sled::transaction::TransactionError::Abort(inner) => inner,
            sled::transaction::TransactionError::Storage(inner) => StoreError::Io(inner),
        }
    }
}
