//! How the socket gateway is set up: `[socket]` as the configuration file
//! describes it (and the checks on it serde cannot express), and the
//! [`SocketConfig`] the gateway is bound with: where the socket lives and its limits.

use std::path::PathBuf;

/// The longest line accepted by default, in bytes (without the newline).
pub const DEFAULT_MAX_LINE_BYTES: usize = 64 * 1024;

use serde::{Deserialize, Serialize};

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
    /// The longest message the core accepts, in bytes, when it has a limit:
    /// told to clients in `welcome`, and named when a message is refused.
    pub max_message_bytes: Option<usize>,
}

impl SocketConfig {
    /// Settings for a socket at `path`, with the default limits.
    pub fn new(path: impl Into<PathBuf>) -> Self {
        Self {
            path: path.into(),
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_clients: DEFAULT_MAX_CLIENTS,
            max_message_bytes: None,
        }
    }
}

/// `[socket]`: the local socket gateway used by the CLI.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SocketSection {
    /// Whether the socket is served (`[socket] enabled`).
    pub enabled: bool,
    /// Socket path; default `<data_dir>/passepartout.sock`.
    pub path: Option<PathBuf>,
    /// Longest protocol line accepted, in bytes.
    pub max_line_bytes: usize,
    /// Most clients connected at once.
    pub max_clients: usize,
    /// Send a reply's text to the client as it is written; when not set,
    /// `pipeline.stream`.
    pub stream: Option<bool>,
}

impl Default for SocketSection {
    fn default() -> Self {
        Self {
            enabled: true,
            path: None,
            max_line_bytes: DEFAULT_MAX_LINE_BYTES,
            max_clients: DEFAULT_MAX_CLIENTS,
            stream: None,
        }
    }
}

impl SocketSection {
    /// Every problem with the section, as sentences naming the key. Empty when valid.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.max_line_bytes < 1024 {
            problems.push("socket.max_line_bytes must be at least 1024".into());
        }
        if self.max_clients == 0 {
            problems.push("socket.max_clients must be at least 1".into());
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_the_limits_have_floors() {
        assert!(SocketSection::default().problems().is_empty());
        let section = SocketSection {
            max_line_bytes: 10,
            max_clients: 0,
            ..SocketSection::default()
        };
        assert_eq!(
            section.problems(),
            [
                "socket.max_line_bytes must be at least 1024",
                "socket.max_clients must be at least 1"
            ]
        );
    }
}
