//! `[tools.sandbox]` (and the same keys in each `[[mcp.servers]]` entry): what
//! a process a tool starts may touch. By default it reads the system's
//! directories, reads and writes the workspace and a private temporary
//! directory, and nothing else; the lists here add folders. The resource
//! limits apply to each process it starts.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::Problems;

/// CPU seconds one process may use; stops a runaway `yes` well before the
/// shell's timeout would on a busy machine.
pub const DEFAULT_SANDBOX_CPU_S: u64 = 60;
/// Writable data one process may map, in MiB.
pub const DEFAULT_SANDBOX_MEMORY_MB: u64 = 2048;
/// Processes the daemon's user may have while a tool runs; a fork bomb
/// meets this limit.
pub const DEFAULT_SANDBOX_PROCESSES: u64 = 512;
/// Largest file one process may write, in MiB: a runaway `yes > file` stops
/// there instead of filling the disk.
pub const DEFAULT_SANDBOX_FILE_SIZE_MB: u64 = 256;

/// Whether a confined process may open TCP connections and listen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxNetwork {
    /// Any TCP connection or port.
    #[default]
    Any,
    /// No TCP connect and no bind (where the kernel's Landlock has ABI 4 or
    /// later).
    None,
}

/// `[tools.sandbox]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SandboxConfig {
    /// Absolute folders (or files) a confined process may also read.
    pub allow_read: Vec<PathBuf>,
    /// Absolute folders (or files) a confined process may also read and write.
    pub allow_write: Vec<PathBuf>,
    /// `"any"` or `"none"`: TCP connections and listening.
    pub network: SandboxNetwork,
    /// Unix sockets a confined process may connect to, by path (the session
    /// bus, an ssh-agent, `docker.sock`). Empty, it may create no Unix socket
    /// at all. Landlock limits a grant to these paths from ABI 9 on; on an
    /// older kernel a grant opens every Unix socket of the daemon's user
    /// except the daemon's own (which asks for a key no tool can read).
    pub unix_sockets: Vec<PathBuf>,
    /// Refuse to run tool processes at all where the kernel cannot confine
    /// them (no Landlock); off, they run unconfined with a warning.
    pub require: bool,
    /// CPU seconds each process may use; 0 for no limit.
    pub cpu_s: u64,
    /// Writable memory each process may map, in MiB; 0 for no limit.
    pub memory_mb: u64,
    /// Processes the daemon's user may have while a tool runs (the kernel
    /// counts them per user, and does not hold root to it); 0 for no limit.
    pub processes: u64,
    /// Largest file each process may write, in MiB; 0 for no limit.
    pub file_size_mb: u64,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            allow_read: Vec::new(),
            allow_write: Vec::new(),
            network: SandboxNetwork::Any,
            unix_sockets: Vec::new(),
            require: false,
            cpu_s: DEFAULT_SANDBOX_CPU_S,
            memory_mb: DEFAULT_SANDBOX_MEMORY_MB,
            processes: DEFAULT_SANDBOX_PROCESSES,
            file_size_mb: DEFAULT_SANDBOX_FILE_SIZE_MB,
        }
    }
}

impl SandboxConfig {
    /// Notes what is wrong with the section found at `key` (e.g.
    /// `tools.sandbox`): every folder named must be absolute and exist.
    pub fn check(&self, key: &str, problems: &mut Problems) {
        for path in &self.unix_sockets {
            if !path.is_absolute() {
                problems.push(format!(
                    "{key}.unix_sockets: {} must be an absolute path",
                    path.display()
                ));
            }
        }
        for (list, paths) in [("allow_read", &self.allow_read), ("allow_write", &self.allow_write)] {
            for path in paths {
                if !path.is_absolute() {
                    problems.push(format!("{key}.{list}: {} must be an absolute path", path.display()));
                } else if !path.exists() {
                    problems.push(format!("{key}.{list}: {} does not exist", path.display()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_and_missing_folders_are_problems() {
        let config = SandboxConfig {
            allow_read: vec![PathBuf::from("notes"), PathBuf::from("/usr")],
            allow_write: vec![PathBuf::from("/no/such/folder/here")],
            ..SandboxConfig::default()
        };
        let mut problems = Problems::default();
        config.check("tools.sandbox", &mut problems);
        let problems = problems.into_vec();
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("tools.sandbox.allow_read: notes must be an absolute path"));
        assert!(problems[1].contains("tools.sandbox.allow_write: /no/such/folder/here does not exist"));
    }

    #[test]
    fn network_is_any_or_none_in_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        std::fs::write(&path, "[tools.sandbox]\nnetwork = \"none\"\nprocesses = 64\n").unwrap();
        let config = crate::config::load(Some(&path), Some(Default::default())).unwrap();
        assert_eq!(config.tools.sandbox.network, SandboxNetwork::None);
        assert_eq!(config.tools.sandbox.processes, 64);
        std::fs::write(&path, "[tools.sandbox]\nnetwork = \"some\"\n").unwrap();
        let error = crate::config::load(Some(&path), Some(Default::default())).unwrap_err();
        assert!(error.to_string().contains("network"), "{error}");
    }
}
