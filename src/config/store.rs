//! `[store]`: the embedded database — how often it flushes, how often it is
//! backed up and how many backups are kept, its cache, and how long
//! duplicate messages are remembered.

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_FLUSH_EVERY_MS: u64 = 500;
pub const DEFAULT_BACKUP_EVERY_S: u64 = 3600;
pub const DEFAULT_BACKUPS_KEPT: usize = 5;
pub const DEFAULT_CACHE_MB: u64 = 8;
pub const DEFAULT_DEDUPE_WINDOW_S: u64 = 7 * 24 * 3600;

/// `[store]`: the embedded database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// Background flush interval of the store, in milliseconds. Journal writes
    /// and turn commits are flushed explicitly as well; this bounds what any
    /// other write can lose.
    pub flush_every_ms: u64,
    /// Seconds between verified backups; 0 turns periodic backups off.
    pub backup_every_s: u64,
    /// How many backups to keep; older ones are deleted.
    pub backups_kept: usize,
    /// Memory the store may use to cache pages, in MiB.
    pub cache_mb: u64,
    /// How long a platform message id is remembered to drop duplicates, in seconds.
    pub dedupe_window_s: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            flush_every_ms: DEFAULT_FLUSH_EVERY_MS,
            backup_every_s: DEFAULT_BACKUP_EVERY_S,
            backups_kept: DEFAULT_BACKUPS_KEPT,
            cache_mb: DEFAULT_CACHE_MB,
            dedupe_window_s: DEFAULT_DEDUPE_WINDOW_S,
        }
    }
}

impl StoreConfig {
    /// Notes what is wrong with `[store]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(self.flush_every_ms > 0, "store.flush_every_ms must be at least 1");
        problems.check(self.backups_kept > 0, "store.backups_kept must be at least 1");
    }
}
