//! Settings: one serde struct per component, built-in defaults equal to
//! `config.example.toml`, loaded from a TOML file and then `PASSEPARTOUT_…`
//! environment overrides, and validated with every problem reported at once.

mod approvals;
mod load;
mod loop_entry;
mod loops;
mod memory;
mod secret;
mod skills;
mod tools;
mod validate;

use std::path::{Path, PathBuf};

pub use passepartout_signal::SignalConfig;
pub use passepartout_socket::SocketSection;
pub use passepartout_telegram::TelegramConfig;
use serde::{Deserialize, Serialize};

pub use approvals::*;
pub use load::{ConfigError, default_config_file, load};
pub use loop_entry::*;
pub use loops::*;
pub use memory::*;
pub use secret::{Secret, SecretError};
pub use skills::*;
pub use tools::*;
pub use validate::validate;

/// Where the store, the socket and the backups live unless `data_dir` says otherwise.
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
    pub approvals: ApprovalsConfig,
    pub loops: LoopsConfig,
    pub socket: SocketSection,
    pub telegram: TelegramConfig,
    pub signal: SignalConfig,
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
            approvals: ApprovalsConfig::default(),
            loops: LoopsConfig::default(),
            socket: SocketSection::default(),
            telegram: TelegramConfig::default(),
            signal: SignalConfig::default(),
        }
    }
}

impl Config {
    /// `data_dir` with a leading `~` replaced by the home directory.
    pub fn data_dir(&self) -> PathBuf {
        expand_home(&self.data_dir)
    }

    /// The sled store's directory.
    pub fn store_dir(&self) -> PathBuf {
        self.data_dir().join("store")
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

    /// Every gateway section's problems, each section checking itself.
    pub(crate) fn gateway_problems(&self) -> Vec<String> {
        [self.telegram.problems(), self.signal.problems(), self.socket.problems()].concat()
    }

    /// The local socket's path: where the daemon binds it and the CLI finds it.
    pub fn socket_path(&self) -> PathBuf {
        match &self.socket.path {
            Some(path) => expand_home(path),
            None => self.data_dir().join("passepartout.sock"),
        }
    }
}

fn expand_home(path: &Path) -> PathBuf {
    match path.strip_prefix("~") {
        Ok(rest) => match std::env::var_os("HOME") {
            Some(home) => PathBuf::from(home).join(rest),
            None => path.to_path_buf(),
        },
        Err(_) => path.to_path_buf(),
    }
}

pub const DEFAULT_FLUSH_EVERY_MS: u64 = 500;
pub const DEFAULT_BACKUP_EVERY_S: u64 = 3600;
pub const DEFAULT_BACKUPS_KEPT: usize = 5;
pub const DEFAULT_CACHE_MB: u64 = 8;
pub const DEFAULT_DEDUPE_WINDOW_S: u64 = 7 * 24 * 3600;

/// `[store]`: the embedded database.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StoreConfig {
    /// Background flush interval of the store, in milliseconds. Journal writes
    /// and turn commits are flushed explicitly as well; this bounds what any
    /// other write can lose.
    pub flush_every_ms: u64,
    /// Seconds between verified backups; 0 turns periodic backups off.
    pub backup_every_s: u64,
    /// How many backups to keep; older ones are deleted.
    pub backups_kept: usize,
    /// Memory the store may use to cache pages, in MiB.
    pub cache_mb: u64,
    /// How long a platform message id is remembered to drop duplicates, in seconds.
    pub dedupe_window_s: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            flush_every_ms: DEFAULT_FLUSH_EVERY_MS,
            backup_every_s: DEFAULT_BACKUP_EVERY_S,
            backups_kept: DEFAULT_BACKUPS_KEPT,
            cache_mb: DEFAULT_CACHE_MB,
            dedupe_window_s: DEFAULT_DEDUPE_WINDOW_S,
        }
    }
}

pub const DEFAULT_MAX_DEPTH: u32 = 10;
pub const DEFAULT_HISTORY_TURNS: usize = 20;
pub const DEFAULT_TURN_TIMEOUT_S: u64 = 300;
pub const DEFAULT_QUEUE_CAPACITY: usize = 64;
pub const DEFAULT_IDLE_WORKER_S: u64 = 300;
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024;
pub const DEFAULT_SHUTDOWN_GRACE_S: u64 = 10;
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are passepartout, a helpful personal assistant. Answer briefly and plainly.";

/// `[pipeline]`: how a turn runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PipelineConfig {
    /// Most feedback steps (tool call → result → model) in one turn before it stops.
    pub max_depth: u32,
    /// Earlier turns of the conversation given to the model.
    pub history_turns: usize,
    /// A turn taking longer is abandoned with a message to the user.
    pub turn_timeout_s: u64,
    /// Messages waiting per conversation; more are refused as busy (not lost:
    /// the gateway retries or tells the sender).
    pub queue_capacity: usize,
    /// An idle conversation worker is stopped after this many seconds.
    pub idle_worker_s: u64,
    /// Largest inbound text accepted, in bytes.
    pub max_message_bytes: usize,
    /// On shutdown, running turns get this long to finish.
    pub shutdown_grace_s: u64,
    /// The system prompt that opens every request to the model.
    pub system_prompt: String,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
            history_turns: DEFAULT_HISTORY_TURNS,
            turn_timeout_s: DEFAULT_TURN_TIMEOUT_S,
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            idle_worker_s: DEFAULT_IDLE_WORKER_S,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            shutdown_grace_s: DEFAULT_SHUTDOWN_GRACE_S,
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
        }
    }
}

/// `[llm]`: the language models, tried in order.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    pub providers: Vec<ProviderConfig>,
    /// How long a provider that answered 429 is skipped when it did not say
    /// how long to wait, in seconds.
    pub cooldown_s: u64,
    /// Malformed model output (arguments that are not JSON, unknown tools, a
    /// tool call written as text) is sent back to the model as an error at
    /// most this many times per turn; then the turn stops and says so.
    pub max_repairs: u32,
}

pub const DEFAULT_COOLDOWN_S: u64 = 30;
pub const DEFAULT_MAX_REPAIRS: u32 = 3;

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            providers: vec![ProviderConfig::default()],
            cooldown_s: DEFAULT_COOLDOWN_S,
            max_repairs: DEFAULT_MAX_REPAIRS,
        }
    }
}

/// Which wire protocol a provider speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProviderKind {
    /// OpenAI-compatible chat completions: OpenAI, OpenRouter, Ollama, llama.cpp, vLLM, LM Studio.
    Openai,
    /// The Anthropic Messages API.
    Anthropic,
}

pub const DEFAULT_PROVIDER_NAME: &str = "local";
pub const DEFAULT_PROVIDER_URL: &str = "http://127.0.0.1:11434/v1";
pub const DEFAULT_PROVIDER_MODEL: &str = "llama3.2";
pub const DEFAULT_PROVIDER_TIMEOUT_S: u64 = 60;
pub const DEFAULT_PROVIDER_CONNECT_TIMEOUT_S: u64 = 5;

/// One `[[llm.providers]]` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProviderConfig {
    /// A short name, shown in status, doctor and error messages.
    pub name: String,
    pub kind: ProviderKind,
    /// The API's base URL, up to and including `/v1`.
    pub base_url: String,
    pub model: String,
    /// Name of the environment variable holding the API key.
    pub api_key_env: Option<String>,
    /// A file holding the API key (e.g. a systemd credential).
    pub api_key_file: Option<PathBuf>,
    /// Whole-request timeout, in seconds.
    pub timeout_s: u64,
    /// Connection timeout, in seconds.
    pub connect_timeout_s: u64,
    /// Longest answer, in tokens (Anthropic requires it; OpenAI-compatible
    /// servers ignore it here).
    pub max_tokens: u32,
}

pub const DEFAULT_MAX_TOKENS: u32 = 4096;

impl Default for ProviderConfig {
    fn default() -> Self {
        Self {
            name: DEFAULT_PROVIDER_NAME.to_owned(),
            kind: ProviderKind::Openai,
            base_url: DEFAULT_PROVIDER_URL.to_owned(),
            model: DEFAULT_PROVIDER_MODEL.to_owned(),
            api_key_env: None,
            api_key_file: None,
            timeout_s: DEFAULT_PROVIDER_TIMEOUT_S,
            connect_timeout_s: DEFAULT_PROVIDER_CONNECT_TIMEOUT_S,
            max_tokens: DEFAULT_MAX_TOKENS,
        }
    }
}
