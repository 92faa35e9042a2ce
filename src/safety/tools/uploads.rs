//! What each gateway takes of a file the assistant sends: its size limit,
//! the platform's name for the model's words, and whether the gateway reads
//! a copy or the file in place. Each gateway component says its own
//! ([`Upload`]); the daemon hands them to `send_file` by gateway id
//! ([`Uploads`]), so the tool never names a gateway.

use std::collections::HashMap;

use passepartout_gateway::GatewayId;

/// The largest file sent through a gateway that names no limit of its own
/// (the local socket): the copy waits on this machine's disk.
pub const OTHER_MAX_BYTES: u64 = 100 * 1024 * 1024;

/// What one gateway takes of a file sent through it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upload {
    /// The largest file, in bytes.
    pub max_bytes: u64,
    /// The platform as the model tells the person (`Telegram`).
    pub platform: &'static str,
    /// Whether the file is copied out of the workspace for the gateway to
    /// send (so a later change there does not change what goes). A gateway
    /// whose client reads the file on this machine is given the path itself.
    pub copied: bool,
}

impl Default for Upload {
    /// What a gateway that says nothing takes.
    fn default() -> Self {
        Self {
            max_bytes: OTHER_MAX_BYTES,
            platform: "this conversation",
            copied: true,
        }
    }
}

/// Each gateway's [`Upload`], by id.
#[derive(Clone, Debug, Default)]
pub struct Uploads(HashMap<GatewayId, Upload>);

impl Uploads {
    pub fn new(uploads: impl IntoIterator<Item = (GatewayId, Upload)>) -> Self {
        Self(uploads.into_iter().collect())
    }

    /// What `gateway` takes; the default for one not known.
    pub fn of(&self, gateway: &GatewayId) -> Upload {
        self.0.get(gateway).cloned().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_not_known_gets_the_default() {
        let telegram = GatewayId::new("telegram").unwrap();
        let small = Upload {
            max_bytes: 10,
            platform: "Small",
            copied: false,
        };
        let uploads = Uploads::new([(telegram.clone(), small.clone())]);
        assert_eq!(uploads.of(&telegram), small);
        assert_eq!(uploads.of(&GatewayId::new("matrix").unwrap()), Upload::default());
    }
}
