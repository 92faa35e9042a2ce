//! Writing what the wizard decided: the folder (mode 0700 when it is made),
//! the secret files and the configuration file (mode 0600 each). Each file
//! is written to a temporary file beside it and renamed into place, so a
//! failure leaves the old one whole; a configuration file replaced with
//! `--force` is kept as `FILE.bak`.

use std::fs::DirBuilder;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};

use super::error::SetupError;
use crate::config::Secret;

/// A secret to store in a file.
pub struct SecretFile {
    pub path: PathBuf,
    pub secret: Secret,
}

/// Refuses to go on when `file` exists and `force` is not given.
pub fn may_write(file: &Path, force: bool) -> Result<(), SetupError> {
    if file.exists() && !force {
        return Err(SetupError::Exists {
            path: file.to_path_buf(),
        });
    }
    Ok(())
}

/// Makes the folder of `file` (mode 0700, parents included) if it is not there.
pub fn make_folder(file: &Path) -> Result<(), SetupError> {
    let Some(folder) = file.parent().filter(|folder| !folder.as_os_str().is_empty()) else {
        return Ok(());
    };
    DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(folder)
        .map_err(|source| SetupError::Write {
            path: folder.to_path_buf(),
            source,
        })
}

/// Writes each secret to its file, mode 0600.
pub fn write_secrets(secrets: &[SecretFile]) -> Result<(), SetupError> {
    for secret in secrets {
        write_private(&secret.path, format!("{}\n", secret.secret.expose()).as_bytes())?;
    }
    Ok(())
}

/// Writes the configuration file, mode 0600; an old one is kept as `.bak`.
pub fn write_config(file: &Path, text: &str) -> Result<(), SetupError> {
    if file.exists() {
        let backup = backup_path(file);
        std::fs::copy(file, &backup).map_err(|source| SetupError::Write { path: backup, source })?;
    }
    write_private(file, text.as_bytes())
}

/// Puts `text`, the file as it was, back in place; its `.bak` stays.
pub fn restore(file: &Path, text: &str) -> Result<(), SetupError> {
    write_private(file, text.as_bytes())
}

/// `FILE.bak`.
pub fn backup_path(file: &Path) -> PathBuf {
    let mut name = file.as_os_str().to_owned();
    name.push(".bak");
    PathBuf::from(name)
}

/// Writes `bytes` to `path` through a temporary file of mode 0600 beside it.
fn write_private(path: &Path, bytes: &[u8]) -> Result<(), SetupError> {
    crate::config::replace_file(path, bytes, 0o600).map_err(|source| SetupError::Write {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn files_are_private_and_an_old_config_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("new").join("deeper").join("config.toml");
        make_folder(&file).unwrap();
        assert_eq!(mode(file.parent().unwrap()), 0o700);
        let token = file.with_file_name("telegram.token");
        write_secrets(&[SecretFile {
            path: token.clone(),
            secret: Secret::new("1:abc"),
        }])
        .unwrap();
        assert_eq!(mode(&token), 0o600);
        assert_eq!(std::fs::read_to_string(&token).unwrap(), "1:abc\n");
        may_write(&file, false).unwrap();
        write_config(&file, "old").unwrap();
        assert_eq!(mode(&file), 0o600);
        assert!(matches!(may_write(&file, false), Err(SetupError::Exists { .. })));
        may_write(&file, true).unwrap();
        write_config(&file, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "new");
        assert_eq!(std::fs::read_to_string(backup_path(&file)).unwrap(), "old");
        let left: Vec<_> = std::fs::read_dir(file.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().into_string().unwrap())
            .filter(|name| name.ends_with(".new"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }
}
