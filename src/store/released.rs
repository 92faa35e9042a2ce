//! Waiting, briefly, for a store that was just closed to let go of its
//! lock.
//!
//! sled locks its file (`flock`) for as long as any part of the database
//! lives, and its background flusher outlives the handle by up to a flush
//! interval. A daemon started again in the same process (as the tests do)
//! would find the store "in use" by its own predecessor. So before opening,
//! a held lock is waited on for a short while; a lock still held after that
//! is another process's, and sled's own error says so.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

/// How long a held lock is waited on, in steps of [`STEP`].
const PATIENCE: Duration = Duration::from_secs(2);
const STEP: Duration = Duration::from_millis(10);

/// Returns once the lock of the database file `db` is free (or the file
/// does not exist), or after [`PATIENCE`].
pub(super) fn wait_for_release(db: &Path) {
    within(db, PATIENCE);
}

/// Whether the lock of `db` was free, or let go, within `patience`.
fn within(db: &Path, patience: Duration) -> bool {
    let Ok(file) = File::open(db) else {
        return true;
    };
    let mut waited = Duration::ZERO;
    loop {
        // Taken and let go at once: only whether it can be taken matters.
        if file.try_lock().is_ok() {
            let _ = file.unlock();
            return true;
        }
        if waited >= patience {
            return false;
        }
        std::thread::sleep(STEP);
        waited += STEP;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_lock_is_waited_on_and_one_let_go_meanwhile_ends_the_wait() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("db");
        let holder = File::create(&db).unwrap();
        holder.lock().unwrap();
        assert!(!within(&db, STEP * 3), "still held");
        let letting_go = std::thread::spawn(move || {
            std::thread::sleep(STEP * 5);
            drop(holder);
        });
        assert!(within(&db, PATIENCE), "let go meanwhile");
        letting_go.join().unwrap();
        assert!(within(&dir.path().join("missing"), Duration::ZERO));
    }
}
