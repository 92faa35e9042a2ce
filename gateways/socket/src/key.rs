//! The socket's key: a secret a client proves it may read before the daemon
//! takes any frame from it.
//!
//! The socket file's mode and the peer's uid keep other users out, but not a
//! process of the daemon's own user that a tool started: the sandbox confines
//! what such a process reads, not whom it connects to. So each start of the
//! daemon writes a fresh random key to a file of mode 0600 beside the socket
//! ([`key_path`]), which the sandbox never lets a tool read, and a client
//! presents it in `hello`. A connection that does not is refused and closed.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Random bytes in a key.
const KEY_BYTES: usize = 32;

/// The key file's mode: the daemon's user alone reads it.
const KEY_MODE: u32 = 0o600;

/// Where the key of the socket at `socket` is kept: beside it, named after it
/// (`passepartout.sock.key`).
pub fn key_path(socket: &Path) -> PathBuf {
    let mut name = socket.file_name().map(ToOwned::to_owned).unwrap_or_default();
    name.push(".key");
    socket.with_file_name(name)
}

/// A socket key, as the hex text that is written to the file and sent in
/// `hello`.
#[derive(Clone, PartialEq, Eq)]
pub struct SocketKey(String);

impl std::fmt::Debug for SocketKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SocketKey(…)")
    }
}

impl SocketKey {
    /// A new random key, from the kernel's random source.
    pub fn generate() -> io::Result<Self> {
        let mut bytes = [0u8; KEY_BYTES];
        let mut filled = 0;
        while filled < KEY_BYTES {
            filled += rustix::rand::getrandom(&mut bytes[filled..], rustix::rand::GetRandomFlags::empty())
                .map_err(io::Error::from)?;
        }
        Ok(Self(bytes.iter().map(|b| format!("{b:02x}")).collect()))
    }

    /// The key of the socket at `socket`, read from its file.
    pub fn read_for(socket: &Path) -> io::Result<Self> {
        let text = fs::read_to_string(key_path(socket))?;
        Ok(Self(text.trim().to_owned()))
    }

    /// A key as a client sent it.
    pub fn presented(text: impl Into<String>) -> Self {
        Self(text.into())
    }

    /// Writes this key to the file beside `socket`, mode 0600, replacing
    /// the file whole (a reader never sees half a key).
    pub fn write_for(&self, socket: &Path) -> io::Result<PathBuf> {
        let path = key_path(socket);
        let mut staged = path.clone().into_os_string();
        staged.push(".new");
        let staged = PathBuf::from(staged);
        let _ = fs::remove_file(&staged);
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(KEY_MODE)
            .open(&staged)?;
        file.write_all(self.0.as_bytes())?;
        file.write_all(b"\n")?;
        file.sync_all()?;
        fs::rename(&staged, &path)?;
        Ok(path)
    }

    /// The text sent in `hello`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether `presented` is this key, compared in time that does not depend
    /// on where they differ.
    pub fn admits(&self, presented: &str) -> bool {
        let (ours, theirs) = (self.0.as_bytes(), presented.as_bytes());
        ours.len() == theirs.len() && ours.iter().zip(theirs).fold(0u8, |diff, (a, b)| diff | (a ^ b)) == 0
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_key_is_written_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("passepartout.sock");
        let key = SocketKey::generate().unwrap();
        let path = key.write_for(&socket).unwrap();
        assert_eq!(path, dir.path().join("passepartout.sock.key"));
        let mode = fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(SocketKey::read_for(&socket).unwrap(), key);
        let again = SocketKey::generate().unwrap();
        assert_ne!(again, key, "each key is new");
        again.write_for(&socket).unwrap();
        assert_eq!(SocketKey::read_for(&socket).unwrap(), again, "replaced whole");
    }

    #[test]
    fn only_the_same_key_is_admitted() {
        let key = SocketKey::generate().unwrap();
        assert_eq!(key.as_str().len(), 64);
        assert!(key.admits(key.as_str()));
        assert!(!key.admits(""));
        assert!(!key.admits(&key.as_str()[..63]));
        let mut wrong = key.as_str().to_owned();
        wrong.replace_range(63.., if wrong.ends_with('0') { "1" } else { "0" });
        assert!(!key.admits(&wrong));
        assert!(!format!("{key:?}").contains(key.as_str()), "never in a log");
    }
}
