//! When the periodic backup last ran and when it is next due, kept in the
//! `meta` tree so that a restart does not push the next backup back: a
//! daemon restarted more often than the backup period still backs up, and a
//! backup that fell due while the daemon was down runs at the first beat.

use super::Store;
use super::error::StoreError;
use super::keys;

const NEXT: &[u8] = b"backup_next_ms";
const LAST: &[u8] = b"backup_last_ms";

/// The stored backup times, in milliseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackupTimes {
    /// When the last backup was written; `None` before the first.
    pub last_ms: Option<u64>,
    /// When the next backup is due; `None` before the heartbeat planned one.
    pub next_ms: Option<u64>,
}

impl Store {
    /// The stored backup times.
    pub fn backup_times(&self) -> Result<BackupTimes, StoreError> {
        let read = |key: &[u8]| -> Result<Option<u64>, StoreError> {
            Ok(self.inner.meta.get(key)?.and_then(|bytes| keys::decode_u64(&bytes)))
        };
        Ok(BackupTimes {
            last_ms: read(LAST)?,
            next_ms: read(NEXT)?,
        })
    }

    /// Plans the next backup for `next_ms`. Not flushed on its own: a plan
    /// lost in a crash only moves the next backup by one period at most.
    pub fn plan_backup(&self, next_ms: u64) -> Result<(), StoreError> {
        self.inner.meta.insert(NEXT, &next_ms.to_be_bytes())?;
        Ok(())
    }

    /// Records that a backup was written at `at_ms`.
    pub fn backup_written(&self, at_ms: u64) -> Result<(), StoreError> {
        self.inner.meta.insert(LAST, &at_ms.to_be_bytes())?;
        Ok(())
    }
}
