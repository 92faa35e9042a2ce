//! Writing a configuration file (or a secret beside it) so that a reader
//! sees the old file or the new one, never half of one: the bytes go to a
//! temporary file beside it, made with exactly `mode`, flushed, and renamed
//! over it. A failed write leaves no temporary file behind.

use std::fs::{OpenOptions, Permissions};
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Replaces the file at `path` with `bytes`, of mode `mode`.
pub fn replace_file(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{}.new", std::process::id()));
    let temporary = path.with_file_name(name);
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&temporary)?;
        // The mode given at creation is masked by the umask; set it exactly.
        file.set_permissions(Permissions::from_mode(mode))?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_is_replaced_whole_with_exactly_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.toml");
        std::fs::write(&file, "old").unwrap();
        replace_file(&file, b"new", 0o640).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        let missing = dir.path().join("no such folder").join("config.toml");
        assert!(replace_file(&missing, b"x", 0o600).is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file is left: {names:?}");
    }
}
