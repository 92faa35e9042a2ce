//! `[telegram]`: the Telegram bot — its token, who may talk to it, who may
//! approve, and how it behaves in groups.

use std::path::PathBuf;

use passepartout_telegram::GroupMode;
use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_TELEGRAM_API_URL: &str = "https://api.telegram.org";
pub const DEFAULT_TELEGRAM_TOKEN_ENV: &str = "TELEGRAM_BOT_TOKEN";
pub const DEFAULT_POLL_TIMEOUT_S: u32 = 25;

/// `[telegram]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    pub enabled: bool,
    /// Environment variable holding the bot token (from @BotFather).
    pub token_env: Option<String>,
    /// Or a file holding it; used when `token_env` is not set.
    pub token_file: Option<PathBuf>,
    /// The Bot API server (a local `telegram-bot-api` server, or a test fake).
    pub api_url: String,
    /// Telegram user ids that may talk to the bot; everyone else gets one short refusal.
    pub allowed_users: Vec<i64>,
    /// Chats (groups) in which everyone may talk to the bot.
    pub allowed_chats: Vec<i64>,
    /// User ids that may approve actions, in the chat the prompt went to;
    /// when not set, `allowed_users`.
    pub approvers: Option<Vec<i64>>,
    /// In groups: `mention_or_reply` (only messages that mention the bot or
    /// reply to it) or `all`.
    pub group_mode: GroupMode,
    /// Seconds a long poll waits for updates.
    pub poll_timeout_s: u32,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            token_env: Some(DEFAULT_TELEGRAM_TOKEN_ENV.into()),
            token_file: None,
            api_url: DEFAULT_TELEGRAM_API_URL.into(),
            allowed_users: Vec::new(),
            allowed_chats: Vec::new(),
            approvers: None,
            group_mode: GroupMode::MentionOrReply,
            poll_timeout_s: DEFAULT_POLL_TIMEOUT_S,
        }
    }
}

impl TelegramConfig {
    /// Who may approve: `approvers`, else `allowed_users`.
    pub fn approver_ids(&self) -> &[i64] {
        self.approvers.as_deref().unwrap_or(&self.allowed_users)
    }
}

impl TelegramConfig {
    /// Notes what is wrong with `[telegram]`.
    pub fn check(&self, problems: &mut Problems) {
        if self.enabled {
            problems.check(
                self.token_env.is_some() || self.token_file.is_some(),
                "telegram.token_env or telegram.token_file must say where the bot token is",
            );
            problems.check(
                !self.allowed_users.is_empty() || !self.allowed_chats.is_empty(),
                "telegram.allowed_users (or allowed_chats) is empty: nobody could talk to the bot",
            );
        }
        problems.check(
            self.api_url.starts_with("http://") || self.api_url.starts_with("https://"),
            format!(
                "telegram.api_url must start with http:// or https://, not {:?}",
                self.api_url
            ),
        );
        problems.check(
            (1..=50).contains(&self.poll_timeout_s),
            "telegram.poll_timeout_s must be between 1 and 50",
        );
    }
}
