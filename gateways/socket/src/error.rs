//! Why the socket gateway could not start.

use std::io;
use std::path::PathBuf;

use thiserror::Error;

/// A failure to set up the socket.
#[derive(Debug, Error)]
pub enum SocketError {
    /// A daemon already answers on the socket: this one must not take it over.
    #[error("another daemon is listening on {}", path.display())]
    InUse {
        /// The socket file.
        path: PathBuf,
    },
    /// Something that is not a socket is in the way; it is left alone.
    #[error("{} exists and is not a socket; not removing it", path.display())]
    NotASocket {
        /// The file in the way.
        path: PathBuf,
    },
    /// The file system refused a step (`action` names it). The cause is part
    /// of the message too: callers print these with plain `Display`.
    #[error("cannot {action} {}: {source}", path.display())]
    Io {
        /// What was done to it (`bind`, `remove`, …).
        action: &'static str,
        /// The socket file.
        path: PathBuf,
        #[source]
        /// Why it failed.
        source: io::Error,
    },
}
