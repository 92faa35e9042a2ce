//! The socket file on disk: taking over a stale one, refusing a live one,
//! creating it with mode 0600, and removing it again only while it is ours.

use std::fs::{self, DirBuilder, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::{UnixListener, UnixStream};

use crate::error::SocketError;
use crate::key::{SocketKey, key_path};

/// The mode of the socket file: only our user may connect.
const SOCKET_MODE: u32 = 0o600;
/// The mode of a socket directory we create.
const DIR_MODE: u32 = 0o700;

/// A socket file this process created, recognized by its inode and change
/// time, so a file another daemon put at the same path is never removed.
#[derive(Debug)]
pub(crate) struct SocketFile {
    path: PathBuf,
    identity: Identity,
    removed: AtomicBool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    ctime: i64,
    ctime_nsec: i64,
}

impl Identity {
    fn of(meta: &fs::Metadata) -> Self {
        Self {
            dev: meta.dev(),
            ino: meta.ino(),
            ctime: meta.ctime(),
            ctime_nsec: meta.ctime_nsec(),
        }
    }
}

impl SocketFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the file if it is still the one we created. Idempotent.
    pub fn remove_if_ours(&self) {
        if self.removed.swap(true, Ordering::AcqRel) {
            return;
        }
        let ours = fs::symlink_metadata(&self.path).is_ok_and(|meta| Identity::of(&meta) == self.identity);
        if !ours {
            return;
        }
        let _ = fs::remove_file(key_path(&self.path));
        match fs::remove_file(&self.path) {
            Ok(()) => tracing::debug!(path = %self.path.display(), "socket file removed"),
            Err(error) => {
                tracing::warn!(path = %self.path.display(), %error, "cannot remove the socket file")
            }
        }
    }
}

/// Binds a listener at `path`: replaces a stale socket file, refuses a live
/// one, creates a missing parent directory (0700), writes `key` beside it
/// (only once no other daemon answers there, whose key it would replace)
/// and sets the socket's mode to 0600 right after binding.
pub(crate) async fn bind(path: &Path, key: &SocketKey) -> Result<(UnixListener, SocketFile), SocketError> {
    clear_stale(path).await?;
    create_parent(path)?;
    key.write_for(path).map_err(|source| SocketError::Io {
        action: "write the key of",
        path: path.to_owned(),
        source,
    })?;
    let listener = UnixListener::bind(path).map_err(|source| match source.kind() {
        // Someone bound between our check and our bind.
        io::ErrorKind::AddrInUse => SocketError::InUse { path: path.to_owned() },
        _ => SocketError::Io {
            action: "bind",
            path: path.to_owned(),
            source,
        },
    })?;
    let identity = fs::set_permissions(path, Permissions::from_mode(SOCKET_MODE))
        .and_then(|()| fs::symlink_metadata(path))
        .map(|meta| Identity::of(&meta));
    match identity {
        Ok(identity) => Ok((
            listener,
            SocketFile {
                path: path.to_owned(),
                identity,
                removed: AtomicBool::new(false),
            },
        )),
        Err(source) => {
            // Leave no socket behind that others might reach.
            drop(listener);
            let _ = fs::remove_file(path);
            Err(SocketError::Io {
                action: "set the mode of",
                path: path.to_owned(),
                source,
            })
        }
    }
}

/// Removes a socket file nobody answers on; refuses a live one and anything
/// that is not a socket.
async fn clear_stale(path: &Path) -> Result<(), SocketError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => {
            return Err(SocketError::Io {
                action: "inspect",
                path: path.to_owned(),
                source,
            });
        }
    };
    if !meta.file_type().is_socket() {
        return Err(SocketError::NotASocket { path: path.to_owned() });
    }
    match UnixStream::connect(path).await {
        Ok(_probe) => Err(SocketError::InUse { path: path.to_owned() }),
        Err(error) if error.kind() == io::ErrorKind::ConnectionRefused => {
            tracing::info!(path = %path.display(), "removing a stale socket file");
            match fs::remove_file(path) {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(source) => Err(SocketError::Io {
                    action: "remove the stale socket",
                    path: path.to_owned(),
                    source,
                }),
            }
        }
        Err(source) => Err(SocketError::Io {
            action: "probe the existing socket",
            path: path.to_owned(),
            source,
        }),
    }
}

fn create_parent(path: &Path) -> Result<(), SocketError> {
    let Some(parent) = path.parent() else {
        return Ok(());
    };
    if parent.as_os_str().is_empty() || parent.exists() {
        return Ok(());
    }
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(parent)
        .map_err(|source| SocketError::Io {
            action: "create the directory",
            path: parent.to_owned(),
            source,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_regular_file_in_the_way_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sock");
        fs::write(&path, b"precious").unwrap();
        assert!(matches!(
            bind(&path, &SocketKey::generate().unwrap()).await,
            Err(SocketError::NotASocket { .. })
        ));
        assert_eq!(fs::read(&path).unwrap(), b"precious");
    }

    #[tokio::test]
    async fn a_missing_parent_is_created_private() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run/passepartout/sock");
        let (_listener, file) = bind(&path, &SocketKey::generate().unwrap()).await.unwrap();
        let mode = fs::metadata(dir.path().join("run/passepartout"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o077, 0, "group/other may not enter: {mode:o}");
        assert_eq!(file.path(), path);
    }

    #[tokio::test]
    async fn a_file_replaced_by_someone_else_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sock");
        let (listener, file) = bind(&path, &SocketKey::generate().unwrap()).await.unwrap();
        drop(listener);
        fs::remove_file(&path).unwrap();
        fs::write(&path, b"theirs").unwrap();
        file.remove_if_ours();
        assert_eq!(fs::read(&path).unwrap(), b"theirs");
    }

    #[tokio::test]
    async fn our_file_is_removed_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sock");
        let (_listener, file) = bind(&path, &SocketKey::generate().unwrap()).await.unwrap();
        file.remove_if_ours();
        assert!(!path.exists());
        file.remove_if_ours();
    }
}
