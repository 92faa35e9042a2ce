//! An audit event as the store keeps it: an approval requested or decided,
//! a standing rule made or revoked, a tool call that ran, the models' vote
//! on a proposed call, a step of pairing (a code offered, approved or
//! refused, a person revoked) or of linking (identities linked or unlinked, a
//! link code refused), with who and when. The store writes one in the
//! same transaction as what it records.

use passepartout_gateway::{ApprovalToken, ConversationKey, UserId};
use serde::{Deserialize, Serialize};

use super::approval::{How, Names, Person, Status};

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
        /// What the requester's platform calls them, to show them by.
        #[serde(default, skip_serializing_if = "Names::is_empty")]
        requester_names: Names,
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
    /// Models voted on a proposed call before anything was done with it.
    Voted {
        tool: String,
        action: String,
        /// Who sent the message that led to it.
        requester: UserId,
        outcome: VoteOutcome,
        agree: u32,
        disagree: u32,
        /// Voters that failed, timed out or answered malformed.
        abstain: u32,
        /// How each voted, as a person is shown it.
        summary: String,
        /// Whether the vote refused the call outright.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        refused: bool,
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
        /// The sandbox its process ran in, when it started one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        confined: Option<String>,
    },
    /// A person answered "always": a standing rule was made.
    RuleMade {
        rule: u64,
        tool: String,
        /// What it covers, as the person was shown.
        scope: String,
        by: Person,
        /// How they answered (see [`StandingRule::how`](super::StandingRule)).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        how: Option<How>,
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
    /// Someone not allowed was sent a pairing code (the code itself is
    /// never recorded).
    PairingOffered {
        person: UserId,
        /// What they are called.
        #[serde(default, skip_serializing_if = "Names::is_empty")]
        names: Names,
    },
    /// An owner approved a pairing code: `person` is let in.
    Paired {
        person: UserId,
        approver: bool,
        by: Person,
        /// What `person` is called.
        #[serde(default, skip_serializing_if = "Names::is_empty")]
        names: Names,
    },
    /// An owner named a pairing code that does not exist or has expired.
    PairingRefused { by: Person },
    /// An owner revoked a paired person.
    Unpaired { person: UserId, by: Person },
    /// An owner cleared the pairing code `person` waits with (the code
    /// itself is never recorded).
    PairingCleared { person: UserId, by: Person },
    /// `by` named a link code: their identity and the one that asked for
    /// the code (`gateway:user` each) are one person now (the code itself
    /// is never recorded).
    Linked { person: u64, by: Person, with: String },
    /// Someone named a link code that does not exist or has expired.
    LinkRefused { by: Person },
    /// Identities were taken out of a linked person (`by` the person
    /// themselves, or the owner at the terminal).
    Unlinked {
        person: u64,
        identities: Vec<String>,
        by: Person,
    },
}

/// What the models' vote on a call came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoteOutcome {
    /// At least the quorum agreed.
    Agreed,
    /// Fewer than the quorum agreed, and at least one disagreed.
    Rejected,
    /// Fewer than the quorum agreed, and none disagreed: too many did not vote.
    Inconclusive,
}

impl VoteOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            VoteOutcome::Agreed => "agreed",
            VoteOutcome::Rejected => "rejected",
            VoteOutcome::Inconclusive => "inconclusive",
        }
    }
}
