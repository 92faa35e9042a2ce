//! `[signal]`: the Signal account the assistant answers on, through a
//! signal-cli daemon — where it listens (or how to start signal-cli as a
//! child instead), who may talk, who may approve, whether the account is a
//! person's own (Note to Self) — and the checks on it serde cannot express. The daemon turns the section into [`SignalSettings`](crate::SignalSettings).

use serde::{Deserialize, Serialize};

use crate::{Endpoint, GroupMode};

/// signal-cli's own default for `daemon --tcp`.
pub const DEFAULT_SIGNAL_ENDPOINT: &str = "tcp:127.0.0.1:7583";
/// The program started in spawn mode: `signal-cli` on the `PATH`.
pub const DEFAULT_SIGNAL_SPAWN_PROGRAM: &str = crate::spawn::DEFAULT_PROGRAM;

/// `[signal]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SignalConfig {
    /// Whether the daemon runs the Signal gateway.
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
    /// The account is your own, the assistant a linked device of it
    /// (`passepartout signal link`): what you write to Note to Self, on any
    /// of your devices, goes to the assistant, which answers there and asks
    /// its approvals there; you may approve. Everyone else who writes to
    /// you is ignored without a word (no refusal, no pairing code), unless
    /// `allowed_senders` or `allowed_groups` names them. Off: a number of
    /// the assistant's own.
    pub note_to_self: bool,
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
            refusal: crate::settings::DEFAULT_REFUSAL.into(),
            note_to_self: false,
        }
    }
}

impl SignalConfig {
    /// Who may approve: `approvers`, else `allowed_senders`.
    pub fn approver_ids(&self) -> &[String] {
        self.approvers.as_deref().unwrap_or(&self.allowed_senders)
    }

    /// The Note-to-Self conversation's chat, when the account is a person's own.
    pub fn note_to_self_chat(&self) -> Option<String> {
        (self.note_to_self && !self.account.is_empty()).then(|| crate::note_to_self_chat(&self.account))
    }

    /// What is valid but unwise: senders and approvers listed by phone
    /// number, which trusts whoever holds that number (a number changes
    /// hands; a UUID names one account for good).
    pub fn warnings(&self) -> Vec<String> {
        if !self.enabled {
            return Vec::new();
        }
        let numbers = |key: &str, listed: &[String]| {
            let by_number: Vec<&str> = (listed.iter())
                .filter(|id| id.starts_with('+'))
                .map(String::as_str)
                .collect();
            (!by_number.is_empty()).then(|| {
                format!(
                    "signal.{key} names {} by phone number: that trusts whoever holds the number, which \
                     can change hands; list the account's UUID instead (signal-cli shows it as sourceUuid)",
                    by_number.join(", ")
                )
            })
        };
        let senders = numbers("allowed_senders", &self.allowed_senders);
        let approvers = (self.approvers.as_deref()).and_then(|approvers| numbers("approvers", approvers));
        senders.into_iter().chain(approvers).collect()
    }

    /// Every problem with the section, as sentences naming the key. Empty when valid.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if self.enabled {
            let number = self.account.strip_prefix('+').unwrap_or_default();
            if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
                problems.push(format!(
                    "signal.account must be the bot's number, + and digits, not {:?}",
                    self.account
                ));
            }
            if self.allowed_senders.is_empty() && self.allowed_groups.is_empty() && !self.note_to_self {
                problems.push(
                    "signal.allowed_senders (or allowed_groups) is empty and signal.note_to_self is off: nobody could talk to the assistant".into(),
                );
            }
        }
        if self.spawn {
            // The endpoint is ignored: signal-cli is our child.
            if self.spawn_program.trim().is_empty() {
                problems.push(
                    "signal.spawn_program is empty: name the signal-cli program (a path, or a name on the PATH)".into(),
                );
            }
            if self
                .spawn_config_dir
                .as_deref()
                .is_some_and(|dir| dir.trim().is_empty())
            {
                problems.push(
                    "signal.spawn_config_dir is empty: give a directory, or leave it out for signal-cli's own".into(),
                );
            }
        } else if self.endpoint.parse::<Endpoint>().is_err() {
            problems.push(format!(
                "signal.endpoint must be tcp:HOST:PORT or unix:PATH, not {:?}",
                self.endpoint
            ));
        }
        problems
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn people_listed_by_phone_number_are_warned_of() {
        let section = SignalConfig {
            enabled: true,
            account: "+15550000001".into(),
            allowed_senders: vec!["0a0a0a0a-0000-4000-8000-00000000000a".into(), "+15557654321".into()],
            approvers: Some(vec!["+15557654321".into()]),
            ..SignalConfig::default()
        };
        let warnings = section.warnings();
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].starts_with("signal.allowed_senders names +15557654321 by phone number"));
        assert!(warnings[1].starts_with("signal.approvers names +15557654321"));
        let by_uuid = SignalConfig {
            allowed_senders: vec!["0a0a0a0a-0000-4000-8000-00000000000a".into()],
            approvers: None,
            ..section
        };
        assert!(by_uuid.warnings().is_empty());
    }

    #[test]
    fn the_defaults_are_valid_and_an_enabled_account_needs_a_number_and_someone_to_talk_to() {
        assert!(SignalConfig::default().problems().is_empty());
        let section = SignalConfig {
            enabled: true,
            account: "bot".into(),
            endpoint: "http://localhost".into(),
            ..SignalConfig::default()
        };
        let problems = section.problems();
        for expected in ["signal.account", "nobody could talk", "signal.endpoint"] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
    }

    #[test]
    fn a_personal_account_needs_no_list_since_note_to_self_talks() {
        let mut section = SignalConfig {
            enabled: true,
            account: "+15550000001".into(),
            ..SignalConfig::default()
        };
        assert!(section.problems().iter().any(|p| p.contains("nobody could talk")));
        assert_eq!(section.note_to_self_chat(), None);
        section.note_to_self = true;
        assert!(section.problems().is_empty(), "{:?}", section.problems());
        assert_eq!(section.note_to_self_chat().as_deref(), Some("+15550000001"));
    }

    #[test]
    fn approvers_default_to_the_allowed_senders() {
        let mut section = SignalConfig {
            allowed_senders: vec!["uuid-a".into()],
            ..SignalConfig::default()
        };
        assert_eq!(section.approver_ids(), ["uuid-a".to_owned()]);
        section.approvers = Some(vec!["+15550000002".into()]);
        assert_eq!(section.approver_ids(), ["+15550000002".to_owned()]);
    }
}
