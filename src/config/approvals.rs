//! `[approvals]`: how long an action waits for a person, who may decide
//! from any conversation, and how long a standing rule ("always") lasts.

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_EXPIRE_AFTER_S: u64 = 900;
/// Seconds before an approval times out that its conversation is reminded.
pub const DEFAULT_REMIND_BEFORE_S: u64 = 300;
pub const DEFAULT_WRONG_TOKENS_PER_HOUR: u32 = 10;
pub const DEFAULT_KEEP_DECIDED_DAYS: u64 = 30;
pub const DEFAULT_RULE_DAYS: u64 = 30;
/// Longest a standing rule may last: a year.
pub const MAX_RULE_DAYS: u64 = 365;

/// `[approvals]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApprovalsConfig {
    /// Seconds an approval waits for an answer before it times out (nothing runs).
    pub expire_after_s: u64,
    /// Seconds before the timeout that the prompt is sent once more, as a
    /// reminder; 0 sends none, and neither does a value not less than
    /// `expire_after_s`.
    pub remind_before_s: u64,
    /// People who may decide from any conversation, as `gateway:user`
    /// (`telegram:123456789`, `signal:+15551234567`). Every other approver
    /// decides only in the conversation the prompt went to.
    pub global_approvers: Vec<String>,
    /// Answers naming a token that does not exist, per sender and hour,
    /// before further token answers from that sender are refused unread.
    pub wrong_tokens_per_hour: u32,
    /// Days a decided approval stays listed (`approvals --all`) after its
    /// outcome was told; the audit trail keeps its decision for
    /// `audit.keep_days`.
    pub keep_decided_days: u64,
    /// Days a standing rule lasts: made by answering a prompt with
    /// "always", it lets calls like the approved one run in that
    /// conversation without asking, until then (or until revoked).
    pub rule_days: u64,
}

impl Default for ApprovalsConfig {
    fn default() -> Self {
        Self {
            expire_after_s: DEFAULT_EXPIRE_AFTER_S,
            remind_before_s: DEFAULT_REMIND_BEFORE_S,
            global_approvers: Vec::new(),
            wrong_tokens_per_hour: DEFAULT_WRONG_TOKENS_PER_HOUR,
            keep_decided_days: DEFAULT_KEEP_DECIDED_DAYS,
            rule_days: DEFAULT_RULE_DAYS,
        }
    }
}

impl ApprovalsConfig {
    /// `global_approvers` split into gateway and user, or the entries that
    /// are not `gateway:user`.
    pub fn global(&self) -> Result<Vec<(String, String)>, Vec<String>> {
        let mut parsed = Vec::new();
        let mut bad = Vec::new();
        for entry in &self.global_approvers {
            match entry.split_once(':') {
                Some((gateway, user)) if !gateway.is_empty() && !user.trim().is_empty() => {
                    parsed.push((gateway.to_owned(), user.trim().to_owned()));
                }
                _ => bad.push(entry.clone()),
            }
        }
        if bad.is_empty() { Ok(parsed) } else { Err(bad) }
    }
}

impl ApprovalsConfig {
    /// Notes what is wrong with `[approvals]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(self.expire_after_s > 0, "approvals.expire_after_s must be at least 1");
        problems.check(
            (1..=MAX_RULE_DAYS).contains(&self.rule_days),
            format!("approvals.rule_days must be between 1 and {MAX_RULE_DAYS} (a standing rule always ends)"),
        );
        if let Err(bad) = self.global() {
            for entry in bad {
                problems.push(format!(
                    "approvals.global_approvers: {entry:?} is not gateway:user (e.g. \"telegram:123456789\")"
                ));
            }
        }
    }
}
