//! `[skills]`: the deterministic gates every proposed tool call passes —
//! shell patterns refused outright, a per-conversation rate limit, tool
//! allowlists per conversation, and declarative rules — and the models'
//! vote on some calls (`[skills.consensus]`, in `consensus.rs`).

use passepartout_gateway::{ChatId, ConversationKey, GatewayId};
use serde::{Deserialize, Serialize};

use super::{ConsensusConfig, Problems};

/// Shell command lines refused outright (regular expressions, searched
/// anywhere in the line): deleting the root or a home directory, making file
/// systems, fork bombs, writing to block devices, wiping disks, opening up
/// the root's permissions.
pub const DEFAULT_DENY_SHELL: &[&str] = &[
    r#"\brm\s+(\S+\s+)*["']?(/+\.?|/\*|/home(/[^/\s]+)?/?|/root/?|~/?\*?|\$\{?HOME\}?/?\*?)["']?(\s|;|&|\||$)"#,
    r"--no-preserve-root",
    r"(?:^|[;&|(`])\s*(?:sudo\s+)?mkfs\b",
    r":\(\)\s*\{\s*:\s*\|\s*:\s*&\s*\}\s*;\s*:",
    r">\s*/dev/(sd|hd|vd|xvd|nvme|mmcblk|dm-|md)",
    r"\bof=/dev/(sd|hd|vd|xvd|nvme|mmcblk|dm-|md)",
    r"\b(wipefs|shred)\b.*\s/dev/",
    r"\bchmod\s+(-\S+\s+)*([0-7]{3,4}|[ugoa]*[+=][rwxXst]+)\s+/(\s|$)",
];
pub const DEFAULT_TOOL_CALLS_PER_MINUTE: u32 = 30;

/// `[skills]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SkillsConfig {
    /// Shell command lines matching any of these regular expressions are
    /// refused outright, approval or not.
    pub deny_shell: Vec<String>,
    /// Most tool calls per conversation in any minute; 0 means no limit.
    pub tool_calls_per_minute: u32,
    /// Conversations restricted to some tools.
    pub allowlists: Vec<AllowlistConfig>,
    /// Declarative gates, checked in order; the first that matches decides.
    pub rules: Vec<RuleConfig>,
    /// Other models voting on some calls before they run.
    pub consensus: ConsensusConfig,
}

impl Default for SkillsConfig {
    fn default() -> Self {
        Self {
            deny_shell: DEFAULT_DENY_SHELL.iter().map(|s| s.to_string()).collect(),
            tool_calls_per_minute: DEFAULT_TOOL_CALLS_PER_MINUTE,
            allowlists: Vec::new(),
            rules: Vec::new(),
            consensus: ConsensusConfig::default(),
        }
    }
}

/// `[[skills.allowlists]]`: in `conversation`, only `tools` are offered and run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowlistConfig {
    /// `gateway:chat`, e.g. `telegram:123456` or `socket:default`.
    pub conversation: String,
    pub tools: Vec<String>,
}

impl AllowlistConfig {
    /// `conversation` as a key, if it is a valid `gateway:chat`.
    pub fn conversation_key(&self) -> Option<ConversationKey> {
        conversation_key(&self.conversation)
    }
}

/// `text` as a conversation key, if it is a valid `gateway:chat` (the way
/// the config names a conversation).
pub(super) fn conversation_key(text: &str) -> Option<ConversationKey> {
    let (gateway, chat) = text.split_once(':')?;
    Some(ConversationKey::new(
        GatewayId::new(gateway).ok()?,
        ChatId::new(chat).ok()?,
    ))
}

/// What a matching rule decides.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleVerdict {
    /// Refuse the call.
    Deny,
    /// Run it only after a person approves.
    RequireApproval,
    /// Run it without asking (lower-priority gates such as the approval
    /// policy are skipped; shell safety, allowlists and the rate limit still apply).
    Allow,
}

/// `[[skills.rules]]`: when `tool` is called and `pattern` matches, `verdict`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// Tool name, or `"*"` for every tool.
    pub tool: String,
    /// A regular expression matched against `argument` (a string argument,
    /// e.g. `command` for the shell, `path` for files, `url` for http_get), or
    /// the whole arguments object as JSON text when `argument` is not set.
    /// Deny and require_approval search anywhere, ignoring case; allow must
    /// match the whole value and never matches a chained shell command.
    #[serde(default)]
    pub pattern: Option<String>,
    #[serde(default)]
    pub argument: Option<String>,
    pub verdict: RuleVerdict,
    /// Shown to the person and the model when the rule denies or asks.
    #[serde(default)]
    pub reason: Option<String>,
}

impl SkillsConfig {
    /// Notes what is wrong with `[skills]`: patterns that are not regular
    /// expressions, conversations that are not `gateway:chat`, rules without a tool.
    pub fn check(&self, problems: &mut Problems) {
        for (index, pattern) in self.deny_shell.iter().enumerate() {
            if let Err(error) = regex::Regex::new(pattern) {
                problems.push(format!(
                    "skills.deny_shell[{index}] is not a valid regular expression: {error}"
                ));
            }
        }
        for (index, list) in self.allowlists.iter().enumerate() {
            problems.check(
                list.conversation_key().is_some(),
                format!(
                    "skills.allowlists[{index}].conversation {:?} must be gateway:chat, e.g. \"telegram:123456\"",
                    list.conversation
                ),
            );
        }
        for (index, rule) in self.rules.iter().enumerate() {
            problems.check(
                !rule.tool.trim().is_empty(),
                format!("skills.rules[{index}].tool must name a tool or be \"*\""),
            );
            if let Some(Err(error)) = rule.pattern.as_deref().map(regex::Regex::new) {
                problems.push(format!(
                    "skills.rules[{index}].pattern is not a valid regular expression: {error}"
                ));
            }
        }
    }
}
