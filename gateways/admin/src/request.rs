//! What an admin surface may ask the core: one variant per question, each
//! answered by one [`AdminReply`](crate::AdminReply) variant.

use passepartout_gateway::{ConversationKey, UserId};

/// A question from the machine's owner to the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AdminRequest {
    /// The daemon's status document; answered [`Status`](crate::AdminReply::Status).
    Status,
    /// Probe every model provider again (a provider that answers is healthy
    /// again), then the status document; answered
    /// [`Status`](crate::AdminReply::Status).
    Recheck,
    /// The pending approvals; with `all`, every approval and the audit trail.
    /// Answered [`Approvals`](crate::AdminReply::Approvals).
    Approvals { all: bool },
    /// Approve or deny the approval with `token`, as the local user `by`;
    /// with `always`, an approval also makes a standing rule (calls like it
    /// run in its conversation without asking). Answered
    /// [`Decision`](crate::AdminReply::Decision).
    Decide {
        token: String,
        approve: bool,
        always: bool,
        by: UserId,
    },
    /// Approve or deny, as the local user `by`, every pending approval of
    /// the conversation named `from` (`gateway:chat`) — or, to deny, of
    /// every conversation when none is named. Each is decided on its own,
    /// as a single decision would be. Answered
    /// [`Decisions`](crate::AdminReply::Decisions).
    DecideAll {
        approve: bool,
        from: Option<String>,
        by: UserId,
    },
    /// The live standing rules; answered [`Rules`](crate::AdminReply::Rules).
    Rules,
    /// Revoke the standing rule `id` as the local user `by`; answered
    /// [`RuleRevoked`](crate::AdminReply::RuleRevoked).
    RevokeRule { id: u64, by: UserId },
    /// The tools offered in `conversation` (the asking user's), each with its
    /// source and its gate; answered [`Tools`](crate::AdminReply::Tools).
    Tools { conversation: ConversationKey, by: UserId },
    /// The background loops' statuses; answered [`Loops`](crate::AdminReply::Loops).
    Loops,
    /// Stop the loop called `name` for good; answered
    /// [`LoopControl`](crate::AdminReply::LoopControl).
    StopLoop { name: String },
    /// Run the loop called `name` now; answered
    /// [`LoopControl`](crate::AdminReply::LoopControl).
    TriggerLoop { name: String },
}
