//! `[signal]`: the Signal account the assistant answers on, through a
//! signal-cli daemon — where it listens (or how to start signal-cli as a
//! child instead), who may talk, who may approve.

use passepartout_gateway::GroupMode;
use serde::{Deserialize, Serialize};

use super::Problems;

/// signal-cli's own default for `daemon --tcp`.
pub const DEFAULT_SIGNAL_ENDPOINT: &str = "tcp:127.0.0.1:7583";
/// The program started in spawn mode: `signal-cli` on the `PATH`.
pub const DEFAULT_SIGNAL_SPAWN_PROGRAM: &str = passepartout_signal::spawn::DEFAULT_PROGRAM;

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
    /// Start signal-cli ourselves (`signal-cli [-a ACCOUNT] [--config DIR]
    /// jsonRpc --receive-mode=manual`, without `-a` when `multi_account`)
    /// and talk to it over its stdin and stdout, instead of connecting to
    /// `endpoint` (then ignored). A child that exits is started again.
    pub spawn: bool,
    /// The signal-cli program started in spawn mode: a path, or a name on the `PATH`.
    pub spawn_program: String,
    /// signal-cli's data directory (`--config`) in spawn mode; when not set,
    /// signal-cli's own default (`$XDG_DATA_HOME/signal-cli`).
    pub spawn_config_dir: Option<String>,
    /// Senders that may talk to the assistant: UUIDs, or numbers (`+` and
    /// digits), which match when signal-cli gives the sender's number.
    pub allowed_senders: Vec<String>,
    /// Group ids (base64, as signal-cli shows them) in which everyone may talk.
    pub allowed_groups: Vec<String>,
    /// Senders (UUIDs or numbers) that may approve, in the conversation the prompt went to;
    /// when not set, `allowed_senders`.
    pub approvers: Option<Vec<String>>,
    /// In groups: `mention_or_reply` or `all`.
    pub group_mode: GroupMode,
    /// What a sender who is not allowed is told, at most once an hour;
    /// empty: nothing at all.
    pub refusal: String,
}

impl Default for SignalConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            account: String::new(),
            account_uuid: None,
            endpoint: DEFAULT_SIGNAL_ENDPOINT.into(),
            multi_account: false,
            spawn: false,
            spawn_program: DEFAULT_SIGNAL_SPAWN_PROGRAM.into(),
            spawn_config_dir: None,
            allowed_senders: Vec::new(),
            allowed_groups: Vec::new(),
            approvers: None,
            group_mode: GroupMode::MentionOrReply,
            refusal: passepartout_signal::settings::DEFAULT_REFUSAL.into(),
        }
    }
}

impl SignalConfig {
    /// Who may approve: `approvers`, else `allowed_senders`.
    pub fn approver_ids(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_senders)
    }
}

impl SignalConfig {
    /// Notes what is wrong with `[signal]`.
    pub fn check(&self, problems: &mut Problems) {
        if self.enabled {
            let number = self.account.strip_prefix('+').unwrap_or_default();
            problems.check(
                !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()),
                format!(
                    "signal.account must be the bot's number, + and digits, not {:?}",
                    self.account
                ),
            );
            problems.check(
                !self.allowed_senders.is_empty() || !self.allowed_groups.is_empty(),
                "signal.allowed_senders (or allowed_groups) is empty: nobody could talk to the assistant",
            );
        }
        if self.spawn {
            // The endpoint is ignored: signal-cli is our child.
            problems.check(
                !self.spawn_program.trim().is_empty(),
                "signal.spawn_program is empty: name the signal-cli program (a path, or a name on the PATH)",
            );
            problems.check(
                self.spawn_config_dir
                    .as_deref()
                    .is_none_or(|dir| !dir.trim().is_empty()),
                "signal.spawn_config_dir is empty: give a directory, or leave it out for signal-cli's own",
            );
        } else {
            problems.check(
                self.endpoint.parse::<passepartout_signal::Endpoint>().is_ok(),
                format!(
                    "signal.endpoint must be tcp:HOST:PORT or unix:PATH, not {:?}",
                    self.endpoint
                ),
            );
        }
    }
}
