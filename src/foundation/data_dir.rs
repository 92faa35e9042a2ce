//! The data directory: created private (0700), and locked by the daemon that
//! uses it, so a second daemon — or a restore — cannot run against the same
//! store. The kernel releases the lock when the process ends, however it ends.

use std::fs::{DirBuilder, File, OpenOptions, TryLockError};
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use thiserror::Error;

const LOCK_FILE: &str = "passepartout.lock";

/// Why the data directory cannot be used.
#[derive(Debug, Error)]
pub enum DataDirError {
    #[error("cannot create the data directory {}: {source}", path.display())]
    Create { path: PathBuf, source: std::io::Error },
    #[error("another passepartout is using {} (its lock file is held)", path.display())]
    InUse { path: PathBuf },
    #[error("cannot lock {}: {source}", path.display())]
    Lock { path: PathBuf, source: std::io::Error },
}

/// The data directory, locked for as long as this value lives.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

/// How often a held lock is tried, [`LOCK_RETRY`] apart: half a second in
/// all.
const LOCK_TRIES: u32 = 50;
const LOCK_RETRY: std::time::Duration = std::time::Duration::from_millis(10);

impl DataDirLock {
    /// Creates `dir` if needed and takes its lock, or says who holds it.
    pub fn acquire(dir: &Path) -> Result<DataDirLock, DataDirError> {
        DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|source| DataDirError::Create {
                path: dir.to_path_buf(),
                source,
            })?;
        let path = dir.join(LOCK_FILE);
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| DataDirError::Lock {
                path: path.clone(),
                source,
            })?;
        // A daemon that just ended may leave the lock held for a moment by
        // a child it was starting: a tool's process between `fork` and the
        // point where it closes what it inherited. So a held lock is tried
        // again for a short while before it counts as another daemon's.
        let mut tries = LOCK_TRIES;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(DataDirLock { _file: file }),
                Err(TryLockError::WouldBlock) if tries > 1 => {
                    tries -= 1;
                    std::thread::sleep(LOCK_RETRY);
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(DataDirError::InUse {
                        path: dir.to_path_buf(),
                    });
                }
                Err(TryLockError::Error(source)) => return Err(DataDirError::Lock { path, source }),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_is_exclusive_until_released() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let held = DataDirLock::acquire(&data).unwrap();
        assert!(matches!(DataDirLock::acquire(&data), Err(DataDirError::InUse { .. })));
        drop(held);
        assert!(DataDirLock::acquire(&data).is_ok());
    }

    #[test]
    fn the_directory_is_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let _held = DataDirLock::acquire(&data).unwrap();
        assert_eq!(std::fs::metadata(&data).unwrap().permissions().mode() & 0o777, 0o700);
    }
}
