//! Settings: one serde struct per component, built-in defaults equal to
//! `config.example.toml`, loaded from a TOML file and then `PASSEPARTOUT_…`
//! environment overrides, and validated with every problem reported at once:
//! each section checks itself beside its type, and [`validate()`] collects
//! what they find.

mod approvals;
mod audit;
pub mod bridges;
mod consensus;
pub mod edited;
mod environment;
mod file_access;
pub mod interview;
mod key_path;
mod llm;
mod load;
mod log;
mod loop_entry;
mod loop_rules;
mod loops;
pub mod masked;
mod mcp;
mod media;
mod memory;
mod pairing;
mod pipeline;
mod redaction;
mod replace;
mod runtime;
mod salvage;
mod sandbox;
mod secret;
mod skills;
mod startable;
mod store;
mod structure;
mod tools;
mod transcription;
mod validate;
mod web_search;
mod wording;

use std::path::{Path, PathBuf};

// Each gateway's section is a typed field of the file's struct, its type
// from the gateway's crate, so the whole file is checked at once: the one
// place outside src/gateways/ that names a gateway's crate.
pub use passepartout_matrix::MatrixSection;
pub use passepartout_signal::SignalConfig;
pub use passepartout_socket::SocketSection;
pub use passepartout_telegram::TelegramConfig;
pub use passepartout_web::WebSection;
use serde::{Deserialize, Serialize};

pub use approvals::*;
pub use audit::*;
pub use bridges::BridgeConfig;
pub use consensus::*;
pub use file_access::FileProblem;
pub use llm::*;
pub use load::{ConfigError, default_config_file, default_config_path, load, load_checked};
pub use log::*;
#[cfg(test)]
pub(crate) use loop_entry::testing as loop_entry_testing;
pub use loop_entry::*;
pub use loop_rules::*;
pub use loops::*;
pub use mcp::*;
pub use media::*;
pub use memory::*;
pub use pairing::*;
pub use pipeline::*;
pub use redaction::{SecretPlaces, configured_secrets};
pub use replace::replace_file;
pub use runtime::*;
pub use salvage::salvage;
pub use sandbox::*;
pub use secret::{Secret, SecretError};
pub use skills::*;
pub use startable::unreadable_secret;
pub use store::*;
pub use tools::*;
pub use transcription::*;
pub use validate::{Problems, validate};
pub use web_search::*;

/// Where the store, the socket and the backups live unless `data_dir` (or
/// `XDG_DATA_HOME`) says otherwise.
pub const DEFAULT_DATA_DIR: &str = "~/.local/share/passepartout";

/// The whole configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Directory for the store, the socket and backups; `~` is the home directory.
    pub data_dir: PathBuf,
    pub store: StoreConfig,
    pub pipeline: PipelineConfig,
    pub llm: LlmConfig,
    pub tools: ToolsConfig,
    pub skills: SkillsConfig,
    pub memory: MemoryConfig,
    pub media: MediaConfig,
    pub transcription: TranscriptionConfig,
    pub approvals: ApprovalsConfig,
    pub pairing: PairingConfig,
    pub audit: AuditConfig,
    pub log: LogConfig,
    pub runtime: RuntimeConfig,
    pub loops: LoopsConfig,
    pub mcp: McpConfig,
    pub socket: SocketSection,
    pub telegram: TelegramConfig,
    pub signal: SignalConfig,
    pub web: WebSection,
    pub matrix: MatrixSection,
    /// `[[bridges]]`: group chats on different gateways joined into one.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bridges: Vec<BridgeConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            data_dir: PathBuf::from(DEFAULT_DATA_DIR),
            store: StoreConfig::default(),
            pipeline: PipelineConfig::default(),
            llm: LlmConfig::default(),
            tools: ToolsConfig::default(),
            skills: SkillsConfig::default(),
            memory: MemoryConfig::default(),
            media: MediaConfig::default(),
            transcription: TranscriptionConfig::default(),
            approvals: ApprovalsConfig::default(),
            pairing: PairingConfig::default(),
            audit: AuditConfig::default(),
            log: LogConfig::default(),
            runtime: RuntimeConfig::default(),
            loops: LoopsConfig::default(),
            mcp: McpConfig::default(),
            socket: SocketSection::default(),
            telegram: TelegramConfig::default(),
            signal: SignalConfig::default(),
            web: WebSection::default(),
            matrix: MatrixSection::default(),
            bridges: Vec::new(),
        }
    }
}

impl Config {
    /// `data_dir` with a leading `~` replaced by the home directory; the
    /// default one is `$XDG_DATA_HOME/passepartout` where that is set (an
    /// absolute path, as the XDG base directory rules require).
    pub fn data_dir(&self) -> PathBuf {
        data_dir_in(&self.data_dir, std::env::var_os("XDG_DATA_HOME").map(PathBuf::from))
    }

    /// The sled store's directory.
    pub fn store_dir(&self) -> PathBuf {
        self.data_dir().join("store")
    }

    /// Where photos people sent are kept, by content hash.
    pub fn media_dir(&self) -> PathBuf {
        self.data_dir().join("media")
    }

    /// Where each stdio MCP server has its own `HOME`.
    pub fn mcp_homes(&self) -> PathBuf {
        self.data_dir().join("mcp")
    }

    /// Where verified backups are kept.
    pub fn backup_dir(&self) -> PathBuf {
        self.data_dir().join("backups")
    }

    /// The directory the file tools and the shell are confined to.
    pub fn workspace(&self) -> PathBuf {
        match &self.tools.workspace {
            Some(path) => expand_home(path),
            None => self.data_dir().join("workspace"),
        }
    }

    /// The local socket's path: where the daemon binds it and the CLI finds it.
    pub fn socket_path(&self) -> PathBuf {
        match &self.socket.path {
            Some(path) => expand_home(path),
            None => self.data_dir().join("passepartout.sock"),
        }
    }

    /// The file beside the socket holding the key a client presents: never
    /// readable by a tool's process.
    pub fn socket_key_path(&self) -> PathBuf {
        passepartout_socket::key_path(&self.socket_path())
    }
}

/// The data directory `configured`, given `XDG_DATA_HOME`'s value.
fn data_dir_in(configured: &Path, xdg_data_home: Option<PathBuf>) -> PathBuf {
    match xdg_data_home {
        Some(xdg) if configured == Path::new(DEFAULT_DATA_DIR) && xdg.is_absolute() => xdg.join("passepartout"),
        _ => expand_home(configured),
    }
}

/// `path` with a leading `~` read as the home folder.
pub fn expand_home(path: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => path.to_path_buf(),
        },
        Err(_) => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_data_dir_follows_xdg_data_home_and_a_chosen_one_does_not() {
        let xdg = Some(PathBuf::from("/xdg/data"));
        let default = Path::new(DEFAULT_DATA_DIR);
        assert_eq!(data_dir_in(default, xdg.clone()), Path::new("/xdg/data/passepartout"));
        assert_eq!(data_dir_in(Path::new("/srv/pp"), xdg), Path::new("/srv/pp"));
        // A relative value is to be ignored, by the XDG rules.
        assert_eq!(data_dir_in(default, Some(PathBuf::from("rel"))), expand_home(default));
        assert_eq!(data_dir_in(default, None), expand_home(default));
    }
}
