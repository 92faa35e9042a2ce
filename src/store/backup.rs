//! Verified backups: every tree written to one file with a CRC, read back and
//! checked before it replaces the oldest; restore rebuilds a store from one.
//!
//! Format: `PPBACKUP1\n`, then records — `T len name` opens a tree, `E len key
//! len value` is an entry (lengths u32 big-endian) — then `Z crc32`.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::Store;
use super::error::StoreError;
use crate::foundation::clock::Clock;

const MAGIC: &[u8] = b"PPBACKUP1\n";
const EXTENSION: &str = "ppbk";

/// A backup that was written and verified.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupInfo {
    pub path: PathBuf,
    pub bytes: u64,
    pub entries: u64,
}

struct Checked<W: Write> {
    out: W,
    crc: crc32fast::Hasher,
}

impl<W: Write> Checked<W> {
    fn put(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.crc.update(bytes);
        self.out.write_all(bytes)
    }

    fn put_chunk(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        let len = u32::try_from(bytes.len()).map_err(|_| std::io::Error::other("record over 4 GiB"))?;
        self.put(&len.to_be_bytes())?;
        self.put(bytes)
    }
}

impl Store {
    /// Writes a verified backup into `dir`, named by the time `clock` reads,
    /// and deletes all but the newest `keep`. Blocking: call it from a
    /// blocking task.
    pub fn backup(&self, dir: &Path, keep: usize, clock: &Clock) -> Result<BackupInfo, StoreError> {
        fs::create_dir_all(dir)?;
        let mut millis = clock.now_ms();
        let mut path = dir.join(format!("backup-{millis:016}.{EXTENSION}"));
        while path.exists() {
            millis += 1;
            path = dir.join(format!("backup-{millis:016}.{EXTENSION}"));
        }
        let partial = path.with_extension("partial");
        // A backup that fails (a full disk, most likely) leaves no partial
        // file taking the space, and does not poison the store: the store's
        // own writes are elsewhere. The caller reports the error.
        let entries = match self.write_verified(&partial) {
            Ok(entries) => entries,
            Err(error) => {
                let _ = fs::remove_file(&partial);
                return Err(error);
            }
        };
        fs::rename(&partial, &path)?;
        prune(dir, keep)?;
        let bytes = fs::metadata(&path)?.len();
        Ok(BackupInfo { path, bytes, entries })
    }

    /// Writes a snapshot of every tree to `partial`, syncs it and reads it
    /// back; the number of entries in it.
    fn write_verified(&self, partial: &Path) -> Result<u64, StoreError> {
        let mut file = Checked {
            out: BufWriter::new(fs::File::create(partial)?),
            crc: crc32fast::Hasher::new(),
        };
        file.put(MAGIC)?;
        let mut entries = 0;
        // No turn or journal write lands halfway through: a consistent snapshot.
        let quiesced = self.quiesced();
        for name in self.inner.db.tree_names() {
            let tree = self.inner.db.open_tree(&name)?;
            file.put(b"T")?;
            file.put_chunk(&name)?;
            for item in tree.iter() {
                let (key, value) = item?;
                file.put(b"E")?;
                file.put_chunk(&key)?;
                file.put_chunk(&value)?;
                entries += 1;
            }
        }
        drop(quiesced);
        let crc = file.crc.clone().finalize();
        file.out.write_all(b"Z")?;
        file.out.write_all(&crc.to_be_bytes())?;
        let inner = file.out.into_inner().map_err(|e| e.into_error())?;
        inner.sync_all()?;
        drop(inner);
        let read_back = read_backup(partial)?;
        if read_back.iter().map(|(_, e)| e.len() as u64).sum::<u64>() != entries {
            return Err(StoreError::Backup("read-back entry count differs".into()));
        }
        Ok(entries)
    }
}

type Trees = Vec<(Vec<u8>, Vec<(Vec<u8>, Vec<u8>)>)>;

/// Reads and verifies a backup file.
fn read_backup(path: &Path) -> Result<Trees, StoreError> {
    let bytes = fs::read(path)?;
    let bad = |why: &str| StoreError::Backup(format!("{}: {why}", path.display()));
    if bytes.len() < MAGIC.len() + 5 || !bytes.starts_with(MAGIC) {
        return Err(bad("not a passepartout backup"));
    }
    let (body, trailer) = bytes.split_at(bytes.len() - 5);
    if trailer[0] != b'Z' || u32::from_be_bytes(trailer[1..].try_into().unwrap_or_default()) != crc32fast::hash(body) {
        return Err(bad("checksum mismatch: the file is damaged"));
    }
    let mut at = MAGIC.len();
    let chunk = |at: &mut usize| -> Result<Vec<u8>, StoreError> {
        let len = body.get(*at..*at + 4).ok_or_else(|| bad("truncated"))?;
        let len = u32::from_be_bytes(len.try_into().unwrap_or_default()) as usize;
        let data = body.get(*at + 4..*at + 4 + len).ok_or_else(|| bad("truncated"))?;
        *at += 4 + len;
        Ok(data.to_vec())
    };
    let mut trees: Trees = Vec::new();
    while at < body.len() {
        let tag = body[at];
        at += 1;
        match (tag, trees.last_mut()) {
            (b'T', _) => trees.push((chunk(&mut at)?, Vec::new())),
            (b'E', Some((_, entries))) => {
                let key = chunk(&mut at)?;
                entries.push((key, chunk(&mut at)?));
            }
            _ => return Err(bad("unexpected record")),
        }
    }
    Ok(trees)
}

fn prune(dir: &Path, keep: usize) -> Result<(), StoreError> {
    let mut backups = list_backups(dir)?;
    while backups.len() > keep {
        fs::remove_file(backups.remove(0))?;
    }
    Ok(())
}

/// Backups in `dir`, oldest first.
pub fn list_backups(dir: &Path) -> Result<Vec<PathBuf>, StoreError> {
    let mut backups: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|e| e == EXTENSION))
            .collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    backups.sort();
    Ok(backups)
}

/// Rebuilds a store at `store_dir`, which must not exist yet, from `backup`.
pub fn restore_backup(backup: &Path, store_dir: &Path) -> Result<u64, StoreError> {
    if store_dir.exists() {
        return Err(StoreError::Backup(format!(
            "{} exists; move it away before restoring",
            store_dir.display()
        )));
    }
    let trees = read_backup(backup)?;
    let db = sled::Config::new()
        .path(store_dir)
        .open()
        .map_err(|source| StoreError::Open {
            path: store_dir.to_path_buf(),
            source,
        })?;
    let mut restored = 0;
    for (name, entries) in trees {
        let tree = db.open_tree(name)?;
        for (key, value) in entries {
            tree.insert(key, value)?;
            restored += 1;
        }
    }
    db.flush()?;
    Ok(restored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{inbound, open_temp};

    // Paused time: the clock reads what it was given, however long the writes take.
    #[tokio::test(start_paused = true)]
    async fn a_backup_restores_to_an_equal_store() {
        let (dir, store) = open_temp();
        for n in 0..10 {
            store.journal_accept(&inbound("c", &n.to_string(), "text"), 0).unwrap();
        }
        let info = store.backup(&dir.path().join("backups"), 3, &Clock::at(1_000)).unwrap();
        assert_eq!(
            info.path.file_name().unwrap(),
            "backup-0000000000001000.ppbk",
            "named by the clock's time"
        );
        assert!(info.entries >= 30, "journal, dedupe and pending entries: {info:?}");
        let restored = dir.path().join("restored");
        restore_backup(&info.path, &restored).unwrap();
        let copy = crate::store::tests::reopen(&restored);
        assert_eq!(
            copy.pending_conversations().unwrap(),
            store.pending_conversations().unwrap()
        );
    }

    #[test]
    fn only_the_newest_backups_are_kept() {
        let (dir, store) = open_temp();
        let backups = dir.path().join("backups");
        let mut paths = Vec::new();
        for n in 0..4 {
            paths.push(store.backup(&backups, 2, &Clock::at(1_000 + n)).unwrap().path);
        }
        assert_eq!(list_backups(&backups).unwrap(), paths[2..]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_backup_taken_at_the_same_time_moves_on_a_millisecond() {
        let (dir, store) = open_temp();
        let backups = dir.path().join("backups");
        let clock = Clock::at(1_000);
        store.backup(&backups, 3, &clock).unwrap();
        let second = store.backup(&backups, 3, &clock).unwrap();
        assert_eq!(second.path.file_name().unwrap(), "backup-0000000000001001.ppbk");
    }

    #[test]
    fn a_damaged_backup_is_refused() {
        let (dir, store) = open_temp();
        store.journal_accept(&inbound("c", "m", "text"), 0).unwrap();
        let info = store.backup(&dir.path().join("backups"), 3, &Clock::start()).unwrap();
        let mut bytes = fs::read(&info.path).unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 0xff;
        fs::write(&info.path, bytes).unwrap();
        let error = restore_backup(&info.path, &dir.path().join("restored")).unwrap_err();
        assert!(error.to_string().contains("checksum"), "{error}");
    }

    #[test]
    fn a_failed_backup_is_reported_and_leaves_the_store_usable() {
        let (dir, store) = open_temp();
        // A backup directory that cannot be made stands for a full disk:
        // the backup fails, the store does not.
        let blocked = dir.path().join("blocked");
        fs::write(&blocked, b"").unwrap();
        let error = store.backup(&blocked.join("backups"), 3, &Clock::start()).unwrap_err();
        assert!(matches!(error, StoreError::Fs(_)), "{error:?}");
        assert!(!store.is_poisoned());
        assert_eq!(store.failure(), None);
        store.journal_accept(&inbound("c", "m", "text"), 0).unwrap();
    }
}
