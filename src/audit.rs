//! The audit trail: every approval requested and decided, and every tool
//! call that ran, with who and when. Written by the store in the same
//! transaction as what it records; read by `passepartout approvals --all`.

use passepartout_gateway::{ApprovalToken, ConversationKey, UserId};
use serde::{Deserialize, Serialize};

use crate::approvals::{How, Person, Status};

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
    },
}

impl AuditEvent {
    /// One line for a person: what, where, who.
    pub fn describe(&self) -> String {
        match &self.what {
            Audited::Requested {
                token,
                action,
                requester,
                ..
            } => format!(
                "requested {} `{action}` by {} in {}",
                token.as_str(),
                requester.as_str(),
                self.conversation
            ),
            Audited::Decided {
                token,
                action,
                outcome,
                by,
                how,
            } => {
                let by = by.as_ref().map(|p| format!(" by {p}")).unwrap_or_default();
                format!(
                    "{} {} `{action}`{by} ({}) in {}",
                    outcome.as_str(),
                    token.as_str(),
                    how.as_str(),
                    self.conversation
                )
            }
            Audited::ToolRan {
                action,
                requester,
                is_error,
                approval,
                ..
            } => {
                let approved = approval
                    .as_ref()
                    .map(|t| format!(", approved {}", t.as_str()))
                    .unwrap_or_default();
                let failed = if *is_error { " (failed)" } else { "" };
                format!(
                    "ran `{action}`{failed} for {}{approved} in {}",
                    requester.as_str(),
                    self.conversation
                )
            }
        }
    }
}
