//! Verified backups: every tree written to one file with a CRC, read back and
//! checked before it replaces the oldest; restore rebuilds a store from one.
//! Folders kept beside the store by others (a gateway's own databases, such
//! as Matrix's encryption keys) are copied by their owners, consistent,
//! next to the backup file as `<backup>.<name>/`, pruned with it, and put
//! back by restore.
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

/// A folder kept beside the store that a backup copies next to its file:
/// `<backup>.<name>/`, which restore puts back as `<data folder>/<name>`.
pub trait KeptBeside: Send + Sync {
    /// Its name, the folder's in the data folder.
    fn name(&self) -> &'static str;

    /// Copies a consistent snapshot of the folder into `into`, a new empty
    /// folder of mode 0700; whether there was anything to copy. Blocking.
    fn snapshot(&self, into: &Path) -> std::io::Result<bool>;
}

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
        self.backup_with(dir, keep, clock, &[])
    }

    /// [`backup`](Self::backup), with a snapshot of each folder in
    /// `beside` next to the file. A folder that cannot be copied fails the
    /// backup, as the store would: half a backup is not one.
    pub fn backup_with(
        &self,
        dir: &Path,
        keep: usize,
        clock: &Clock,
        beside: &[std::sync::Arc<dyn KeptBeside>],
    ) -> Result<BackupInfo, StoreError> {
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
        for kept in beside {
            if let Err(error) = snapshot_beside(&path, kept.as_ref()) {
                let _ = fs::remove_file(&partial);
                remove_beside(&path);
                return Err(error);
            }
        }
        if let Err(error) = fs::rename(&partial, &path) {
            let _ = fs::remove_file(&partial);
            remove_beside(&path);
            return Err(error.into());
        }
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

/// Copies `kept` into `<backup>.<name>/`, made private, atomically: a
/// partial copy is never left under that name.
fn snapshot_beside(backup: &Path, kept: &dyn KeptBeside) -> Result<(), StoreError> {
    use std::os::unix::fs::DirBuilderExt;
    let name = kept.name();
    let into = beside_path(backup, name);
    let partial = beside_path(backup, &format!("{name}.partial"));
    let _ = fs::remove_dir_all(&partial);
    fs::DirBuilder::new().mode(0o700).create(&partial)?;
    match kept.snapshot(&partial) {
        Ok(true) => Ok(fs::rename(&partial, &into)?),
        Ok(false) => Ok(fs::remove_dir_all(&partial)?),
        Err(error) => {
            let _ = fs::remove_dir_all(&partial);
            Err(StoreError::Backup(format!("copying {name}/: {error}")))
        }
    }
}

/// `<backup>.<name>`: where a folder kept beside the store is copied.
fn beside_path(backup: &Path, name: &str) -> PathBuf {
    let mut file = backup.as_os_str().to_owned();
    file.push(format!(".{name}"));
    PathBuf::from(file)
}

/// The folders copied beside `backup`: each one's name and place.
pub fn beside_backup(backup: &Path) -> Result<Vec<(String, PathBuf)>, StoreError> {
    let Some(file) = backup.file_name() else {
        return Ok(Vec::new());
    };
    // A bare file name is in the current folder.
    let dir = match backup.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let prefix = format!("{}.", file.to_string_lossy());
    let mut found = Vec::new();
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(kept) = name.strip_prefix(&prefix) else {
            continue;
        };
        if !kept.is_empty() && !kept.ends_with(".partial") && entry.file_type()?.is_dir() {
            found.push((kept.to_owned(), entry.path()));
        }
    }
    found.sort();
    Ok(found)
}

fn remove_beside(backup: &Path) {
    for (_, folder) in beside_backup(backup).unwrap_or_default() {
        let _ = fs::remove_dir_all(folder);
    }
}

fn prune(dir: &Path, keep: usize) -> Result<(), StoreError> {
    let mut backups = list_backups(dir)?;
    while backups.len() > keep {
        let oldest = backups.remove(0);
        remove_beside(&oldest);
        fs::remove_file(oldest)?;
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

    /// A folder beside the store: one file, or nothing, or a failure.
    struct Folder(Option<&'static str>);

    impl KeptBeside for Folder {
        fn name(&self) -> &'static str {
            "keys"
        }

        fn snapshot(&self, into: &Path) -> std::io::Result<bool> {
            match self.0 {
                Some("fail") => Err(std::io::Error::other("the database is locked")),
                Some(text) => fs::write(into.join("keys.db"), text).map(|()| true),
                None => Ok(false),
            }
        }
    }

    #[test]
    fn a_folder_kept_beside_is_copied_next_to_its_backup_and_pruned_with_it() {
        use std::os::unix::fs::PermissionsExt;
        let (dir, store) = open_temp();
        let backups = dir.path().join("backups");
        let kept: Vec<std::sync::Arc<dyn KeptBeside>> = vec![std::sync::Arc::new(Folder(Some("secret keys")))];
        let mut paths = Vec::new();
        for n in 0..3 {
            paths.push(
                store
                    .backup_with(&backups, 2, &Clock::at(1_000 + n), &kept)
                    .unwrap()
                    .path,
            );
        }
        let beside = beside_backup(&paths[2]).unwrap();
        assert_eq!(beside.len(), 1, "{beside:?}");
        assert_eq!(beside[0].0, "keys");
        assert_eq!(fs::read_to_string(beside[0].1.join("keys.db")).unwrap(), "secret keys");
        let mode = fs::metadata(&beside[0].1).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(beside_backup(&paths[0]).unwrap().is_empty(), "pruned with its backup");
        assert_eq!(fs::read_dir(&backups).unwrap().count(), 4, "two backups, two folders");

        let nothing: Vec<std::sync::Arc<dyn KeptBeside>> = vec![std::sync::Arc::new(Folder(None))];
        let info = store.backup_with(&backups, 5, &Clock::at(2_000), &nothing).unwrap();
        assert!(
            beside_backup(&info.path).unwrap().is_empty(),
            "nothing to copy, no folder"
        );
        assert!(
            beside_backup(Path::new("backup-0.ppbk")).unwrap().is_empty(),
            "a bare file name is looked for in the current folder"
        );
    }

    #[test]
    fn a_folder_that_cannot_be_copied_fails_the_backup_and_leaves_nothing_half_made() {
        let (dir, store) = open_temp();
        let backups = dir.path().join("backups");
        let failing: Vec<std::sync::Arc<dyn KeptBeside>> = vec![std::sync::Arc::new(Folder(Some("fail")))];
        let error = store.backup_with(&backups, 2, &Clock::at(1_000), &failing).unwrap_err();
        assert!(
            error.to_string().contains("copying keys/: the database is locked"),
            "{error}"
        );
        assert_eq!(fs::read_dir(&backups).unwrap().count(), 0, "no file, no folder");
    }
}
