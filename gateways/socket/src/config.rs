//! How the socket gateway is set up: where the socket lives and its limits.

use std::path::PathBuf;

/// The longest line accepted by default, in bytes (without the newline).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024;

/// How many clients may be connected at once by default.
pub const DEFAULT_MAX_CLIENTS: usize = 64;

/// The socket gateway's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SocketConfig {
    /// Where the socket file is created (its directory too, mode 0700, when missing).
    pub path: PathBuf,
    /// The longest line a client may send, in bytes; longer ones are refused
    /// with `line_too_long` and skipped.
    pub max_line_bytes: usize,
    /// How many clients may be connected at once; one more is refused with `busy`.
    pub max_clients: usize,
}

impl SocketConfig {
    /// Settings for a socket at `path`, with the default limits.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_clients: DEFAULT_MAX_CLIENTS,
        }
    }
}
