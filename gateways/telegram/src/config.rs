//! `[telegram]`: the Telegram bot as the configuration file describes it —
//! its token, who may talk to it, who may approve, and how it behaves in
//! groups — and the checks on it serde cannot express. The daemon reads the
//! token and turns the section into [`TelegramSettings`](crate::TelegramSettings).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::GroupMode;
use crate::settings::DEFAULT_POLL_TIMEOUT_S;

/// Telegram's own Bot API server, where the bot is polled unless another is set.
pub const DEFAULT_TELEGRAM_API_URL: &str = "https://api.telegram.org";
/// The environment variable the bot token is read from unless another is named.
pub const DEFAULT_TELEGRAM_TOKEN_ENV: &str = "TELEGRAM_BOT_TOKEN";

/// `[telegram]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    /// Whether the daemon runs the Telegram gateway.
    pub enabled: bool,
    /// Environment variable holding the bot token (from @BotFather).
    pub token_env: Option<String>,
    /// Or a file holding it; when set, it is used instead of `token_env`.
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
    /// Show a reply while it is written, as a message edited about once a
    /// second; when not set, `pipeline.stream`.
    pub stream: Option<bool>,
    /// A proxy for the Bot API (`http://`, `https://`, `socks5://`,
    /// `socks5h://`), instead of `https_proxy` / `all_proxy`.
    pub proxy: Option<String>,
    /// The most messages the bot sends to one group in a minute: Telegram
    /// allows 20; what waits is sent as slots free, never dropped. Higher
    /// only against a Bot API server of one's own.
    pub group_messages_per_minute: u32,
}

/// Telegram's own limit of messages a bot sends to one group in a minute.
pub const DEFAULT_GROUP_MESSAGES_PER_MINUTE: u32 = 20;

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
            stream: None,
            proxy: None,
            group_messages_per_minute: DEFAULT_GROUP_MESSAGES_PER_MINUTE,
        }
    }
}

impl TelegramConfig {
    /// Who may approve: `approvers`, else `allowed_users`.
    pub fn approver_ids(&self) -> &[i64] {
        self.approvers.as_deref().unwrap_or(&self.allowed_users)
    }

    /// Every problem with the section, as sentences naming the key. Empty when valid.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.enabled {
            if self.token_env.is_none() && self.token_file.is_none() {
                problems.push("telegram.token_env or telegram.token_file must say where the bot token is".into());
            }
            // Not quoted: a value that is no variable's name may be the token itself.
            if self.token_env.as_deref().is_some_and(|name| !is_variable_name(name)) {
                problems.push(
                    "telegram.token_env must name the environment variable holding the bot token \
                     (letters, digits and _), not hold the token itself"
                        .into(),
                );
            }
            if self.allowed_users.is_empty() && self.allowed_chats.is_empty() {
                problems
                    .push("telegram.allowed_users (or allowed_chats) is empty: nobody could talk to the bot".into());
            }
        }
        if !(self.api_url.starts_with("http://") || self.api_url.starts_with("https://")) {
            problems.push(format!(
                "telegram.api_url must start with http:// or https://, not {:?}",
                self.api_url
            ));
        }
        if self.group_messages_per_minute == 0 {
            problems.push("telegram.group_messages_per_minute must be at least 1".into());
        }
        if !(1..=50).contains(&self.poll_timeout_s) {
            problems.push("telegram.poll_timeout_s must be between 1 and 50".into());
        }
        let proxy = |url: &str| {
            reqwest::Url::parse(url).is_ok_and(|url| {
                matches!(url.scheme(), "http" | "https" | "socks5" | "socks5h") && url.host().is_some()
            })
        };
        if self.proxy.as_deref().is_some_and(|url| !proxy(url)) {
            problems.push("telegram.proxy is not an http://, https://, socks5:// or socks5h:// URL".into());
        }
        problems
    }
}

/// Whether `name` can be an environment variable's name as a shell sets one.
fn is_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_valid_and_an_enabled_bot_needs_a_token_and_someone_to_talk_to() {
        assert!(TelegramConfig::default().problems().is_empty());
        let section = TelegramConfig {
            enabled: true,
            token_env: None,
            api_url: "ftp://x".into(),
            poll_timeout_s: 0,
            proxy: Some("proxy.example:3128".into()),
            ..TelegramConfig::default()
        };
        let problems = section.problems();
        for expected in [
            "telegram.token_env",
            "nobody could talk",
            "api_url",
            "poll_timeout_s",
            "telegram.proxy",
        ] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
    }

    #[test]
    fn a_token_pasted_in_place_of_its_variable_is_refused_without_being_shown() {
        let section = TelegramConfig {
            enabled: true,
            token_env: Some("123456:AAF-secret".into()),
            allowed_users: vec![42],
            ..TelegramConfig::default()
        };
        let problems = section.problems();
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("telegram.token_env must name"), "{problems:?}");
        assert!(!problems[0].contains("secret"), "{problems:?}");
        for name in ["TELEGRAM_BOT_TOKEN", "_t0"] {
            assert!(is_variable_name(name), "{name}");
        }
    }

    #[test]
    fn approvers_default_to_the_allowed_users() {
        let mut section = TelegramConfig {
            allowed_users: vec![42],
            ..TelegramConfig::default()
        };
        assert_eq!(section.approver_ids(), &[42]);
        section.approvers = Some(vec![7]);
        assert_eq!(section.approver_ids(), &[7]);
    }
}
