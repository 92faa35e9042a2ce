//! A consistent copy of the assistant's Matrix folder, for the store's
//! backups: the session (`session.json`), the stores' passphrase
//! (`store.key`) and the SDK's state and encryption databases, each copied
//! with SQLite's `VACUUM INTO`, which reads one transaction's view, so a
//! sync writing meanwhile leaves the copy whole. The event cache and the
//! media cache are left out: they are caches, refilled from the
//! homeserver, and the largest files. The databases stay encrypted with
//! the passphrase, which travels with them: the backup folder is as
//! private as the data folder (mode 0700, files 0600).

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

/// The SDK's databases a backup keeps: the room state and the encryption
/// keys.
const KEPT_DATABASES: [&str; 2] = ["matrix-sdk-state.sqlite3", "matrix-sdk-crypto.sqlite3"];
/// The files beside them: the session and the stores' passphrase.
const KEPT_FILES: [&str; 2] = ["session.json", "store.key"];

/// Copies `folder` (the gateway's, in the data folder) into `into`, an
/// empty folder: whether there was a session to copy. Blocking.
pub fn snapshot(folder: &Path, into: &Path) -> io::Result<bool> {
    if !folder.join("session.json").exists() {
        return Ok(false);
    }
    for name in KEPT_FILES {
        let from = folder.join(name);
        if from.exists() {
            std::fs::copy(&from, into.join(name))?;
            private(&into.join(name))?;
        }
    }
    let stores = into.join("store");
    std::fs::DirBuilder::new().create(&stores)?;
    std::fs::set_permissions(&stores, std::fs::Permissions::from_mode(0o700))?;
    for name in KEPT_DATABASES {
        let from = folder.join("store").join(name);
        if from.exists() {
            let to = stores.join(name);
            copy_database(&from, &to)?;
            private(&to)?;
        }
    }
    Ok(true)
}

/// One database, as one transaction sees it.
fn copy_database(from: &Path, to: &Path) -> io::Result<()> {
    let sqlite = |error: rusqlite::Error| io::Error::other(format!("{}: {error}", from.display()));
    let connection = rusqlite::Connection::open_with_flags(
        from,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(sqlite)?;
    // The SDK writes in its own time: wait for a writer rather than fail.
    connection
        .busy_timeout(std::time::Duration::from_secs(10))
        .map_err(sqlite)?;
    let target = to
        .to_str()
        .ok_or_else(|| io::Error::other(format!("{} is not UTF-8", to.display())))?;
    connection.execute("VACUUM INTO ?1", [target]).map_err(sqlite)?;
    Ok(())
}

fn private(file: &Path) -> io::Result<()> {
    std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database like the SDK's, in WAL mode, with `rows` rows.
    fn database(path: &Path, rows: u32) -> rusqlite::Connection {
        let connection = rusqlite::Connection::open(path).unwrap();
        connection.pragma_update(None, "journal_mode", "WAL").unwrap();
        connection
            .execute("CREATE TABLE keys (id INTEGER, key BLOB)", [])
            .unwrap();
        for id in 0..rows {
            connection
                .execute("INSERT INTO keys VALUES (?1, ?2)", rusqlite::params![id, vec![7u8; 64]])
                .unwrap();
        }
        connection
    }

    fn rows(path: &Path) -> u32 {
        rusqlite::Connection::open(path)
            .unwrap()
            .query_row("SELECT count(*) FROM keys", [], |row| row.get(0))
            .unwrap()
    }

    #[test]
    fn the_session_and_the_key_databases_are_copied_whole_and_private_and_the_caches_left() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("matrix");
        std::fs::create_dir_all(folder.join("store")).unwrap();
        std::fs::write(folder.join("session.json"), "{}").unwrap();
        std::fs::write(folder.join("store.key"), "passphrase").unwrap();
        // Open while copied, its last rows still in the write-ahead log.
        let _writer = database(&folder.join("store/matrix-sdk-crypto.sqlite3"), 100);
        database(&folder.join("store/matrix-sdk-state.sqlite3"), 3);
        database(&folder.join("store/matrix-sdk-event-cache.sqlite3"), 1000);
        let into = dir.path().join("copy");
        std::fs::create_dir(&into).unwrap();

        assert!(snapshot(&folder, &into).unwrap());
        assert_eq!(rows(&into.join("store/matrix-sdk-crypto.sqlite3")), 100);
        assert_eq!(rows(&into.join("store/matrix-sdk-state.sqlite3")), 3);
        assert!(!into.join("store/matrix-sdk-event-cache.sqlite3").exists(), "a cache");
        assert_eq!(std::fs::read_to_string(into.join("store.key")).unwrap(), "passphrase");
        for file in ["session.json", "store.key", "store/matrix-sdk-crypto.sqlite3"] {
            let mode = std::fs::metadata(into.join(file)).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600, "{file}");
        }
    }

    #[test]
    fn a_folder_without_a_session_has_nothing_to_copy() {
        let dir = tempfile::tempdir().unwrap();
        let into = dir.path().join("copy");
        std::fs::create_dir(&into).unwrap();
        assert!(!snapshot(&dir.path().join("matrix"), &into).unwrap());
        assert_eq!(std::fs::read_dir(&into).unwrap().count(), 0);
    }

    #[test]
    fn a_damaged_database_fails_the_copy_with_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("matrix");
        std::fs::create_dir_all(folder.join("store")).unwrap();
        std::fs::write(folder.join("session.json"), "{}").unwrap();
        std::fs::write(folder.join("store/matrix-sdk-crypto.sqlite3"), vec![0x5a; 8192]).unwrap();
        let into = dir.path().join("copy");
        std::fs::create_dir(&into).unwrap();
        let error = snapshot(&folder, &into).unwrap_err();
        assert!(error.to_string().contains("matrix-sdk-crypto.sqlite3"), "{error}");
    }
}
