//! An audit event as the store keeps it: an approval requested or decided,
//! a standing rule made or revoked, or a tool call that ran, with who and
//! when. The store writes one in the
//! same transaction as what it records.

use passepartout_gateway::{ApprovalToken, ConversationKey, UserId};
use serde::{Deserialize, Serialize};

use super::approval::{How, Person, Status};

/// One audited event.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AuditEvent {
    pub at_ms: u64,
    pub conversation: ConversationKey,
    #[serde(flatten)]
    pub what: Audited,
}

/// What happened.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Audited {
    /// An action was held for approval.
    Requested {
        token: ApprovalToken,
        action: String,
        requester: UserId,
        reason: String,
    },
    /// An approval was decided.
    Decided {
        token: ApprovalToken,
        action: String,
        outcome: Status,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<Person>,
        how: How,
    },
    /// A tool call ran (approved, or needing no approval).
    ToolRan {
        tool: String,
        action: String,
        /// Who sent the message that led to it.
        requester: UserId,
        is_error: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        approval: Option<ApprovalToken>,
        /// The standing rule that let it run without asking.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<u64>,
    },
    /// A person answered "always": a standing rule was made.
    RuleMade {
        rule: u64,
        tool: String,
        /// What it covers, as the person was shown.
        scope: String,
        by: Person,
        /// The approval it was made with.
        token: ApprovalToken,
        expires_ms: u64,
    },
    /// A standing rule was revoked.
    RuleRevoked {
        rule: u64,
        tool: String,
        scope: String,
        by: Person,
    },
}
