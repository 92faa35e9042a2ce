//! Why a file the configuration names (the config file itself, an
//! `api_key_file`) cannot be used, told apart by the kind of the operating
//! system's error. A folder the daemon's user may not enter makes every file
//! in it look absent to a plain "is it a file?" test; saying "does not exist"
//! then sends people looking for a file that is right there, so a denied
//! permission is reported as such.

use std::fs::File;
use std::io;
use std::path::Path;

use thiserror::Error;

/// What is wrong with a named file. Displays as the end of a sentence that
/// starts with the file's name: "config file /etc/x.toml does not exist".
#[derive(Debug, Error)]
pub enum FileProblem {
    #[error("does not exist")]
    Missing,
    #[error("cannot be read: permission denied (this user may not read it, or may not enter a folder above it)")]
    PermissionDenied,
    #[error("is not a file")]
    NotAFile,
    #[error("cannot be read: {0}")]
    Other(io::Error),
}

impl From<io::Error> for FileProblem {
    fn from(error: io::Error) -> Self {
        match error.kind() {
            // A path through something that is not a folder names nothing.
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory => FileProblem::Missing,
            io::ErrorKind::PermissionDenied => FileProblem::PermissionDenied,
            _ => FileProblem::Other(error),
        }
    }
}

/// Whether `path` is a file, as far as its metadata says (the file itself is
/// not opened).
pub fn find_file(path: &Path) -> Result<(), FileProblem> {
    if std::fs::metadata(path)?.is_file() {
        Ok(())
    } else {
        Err(FileProblem::NotAFile)
    }
}

/// Opens `path` for reading: it exists, is a file, and this process may read it.
pub fn open_file(path: &Path) -> Result<File, FileProblem> {
    let file = File::open(path)?;
    if file.metadata()?.is_file() {
        Ok(file)
    } else {
        Err(FileProblem::NotAFile)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_and_a_missing_folder_are_missing() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(open_file(&dir.path().join("no")), Err(FileProblem::Missing)));
        assert!(matches!(find_file(&dir.path().join("no/x")), Err(FileProblem::Missing)));
        let file = dir.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(matches!(find_file(&file.join("below")), Err(FileProblem::Missing)));
    }

    #[test]
    fn a_folder_is_not_a_file() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(open_file(dir.path()), Err(FileProblem::NotAFile)));
        assert!(matches!(find_file(dir.path()), Err(FileProblem::NotAFile)));
    }

    #[test]
    fn a_readable_file_opens() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, "x").unwrap();
        assert!(open_file(&file).is_ok());
        assert!(find_file(&file).is_ok());
    }

    #[test]
    fn the_error_kind_decides_not_its_text() {
        let denied = io::Error::from(io::ErrorKind::PermissionDenied);
        assert!(matches!(FileProblem::from(denied), FileProblem::PermissionDenied));
        let other = io::Error::other("permission denied, says the text");
        assert!(matches!(FileProblem::from(other), FileProblem::Other(_)));
        assert_eq!(
            FileProblem::PermissionDenied.to_string(),
            "cannot be read: permission denied (this user may not read it, or may not enter a folder above it)"
        );
    }
}
