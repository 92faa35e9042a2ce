//! `[signal]`: the Signal account the assistant answers on, through a
//! signal-cli daemon — where it listens, who may talk, who may approve.

use passepartout_gateway::GroupMode;
use serde::{Deserialize, Serialize};

/// signal-cli's own default for `daemon --tcp`.
pub const DEFAULT_SIGNAL_ENDPOINT: &str = "tcp:127.0.0.1:7583";

/// `[signal]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignalConfig {
    pub enabled: bool,
    /// The bot's account, its number as registered with signal-cli (`+` and digits).
    pub account: String,
    /// The account's UUID (`signal-cli -a NUMBER listAccounts`), to recognise
    /// mentions and quotes that carry only it.
    pub account_uuid: Option<String>,
    /// Where signal-cli's daemon listens: `tcp:HOST:PORT` or `unix:PATH`. Run
    /// it with `--receive-mode=manual`, so nothing is taken while the
    /// assistant is not connected.
    pub endpoint: String,
    /// Whether the daemon serves several accounts (started without `-a`).
    pub multi_account: bool,
    /// Sender UUIDs that may talk to the assistant.
    pub allowed_senders: Vec<String>,
    /// Group ids (base64, as signal-cli shows them) in which everyone may talk.
    pub allowed_groups: Vec<String>,
    /// Sender UUIDs that may approve, in the conversation the prompt went to;
    /// when not set, `allowed_senders`.
    pub approvers: Option<Vec<String>>,
    /// In groups: `mention_or_reply` or `all`.
    pub group_mode: GroupMode,
}

impl Default for SignalConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            account: String::new(),
            account_uuid: None,
            endpoint: DEFAULT_SIGNAL_ENDPOINT.into(),
            multi_account: false,
            allowed_senders: Vec::new(),
            allowed_groups: Vec::new(),
            approvers: None,
            group_mode: GroupMode::MentionOrReply,
        }
    }
}

impl SignalConfig {
    /// Who may approve: `approvers`, else `allowed_senders`.
    pub fn approver_ids(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_senders)
    }
}
