//! What an admin surface may ask the core: one variant per question, each
//! answered by one [`AdminReply`](crate::AdminReply) variant.

use passepartout_gateway::{ConversationKey, UserId};
use serde::{Deserialize, Serialize};

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
    /// Approve or deny the approval with `token`, as the local user `by`
    /// answering `via` the terminal or the web dashboard; with `always`, an
    /// approval also makes a standing rule (calls like it run in its
    /// conversation without asking). Answered
    /// [`Decision`](crate::AdminReply::Decision).
    Decide {
        token: String,
        approve: bool,
        always: bool,
        by: UserId,
        via: Via,
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
    /// Read the configuration file again and apply what can change while
    /// the daemon runs; answered [`Reloaded`](crate::AdminReply::Reloaded).
    Reload,
    /// The background loops' statuses; answered [`Loops`](crate::AdminReply::Loops).
    Loops,
    /// Stop the loop called `name` until it is started again (or, for a
    /// configured loop, the daemon restarts); answered
    /// [`LoopControl`](crate::AdminReply::LoopControl).
    StopLoop { name: String },
    /// Start the loop called `name` again, stopped on request, from its
    /// next time on; answered [`LoopControl`](crate::AdminReply::LoopControl).
    StartLoop { name: String },
    /// Run the loop called `name` now; answered
    /// [`LoopControl`](crate::AdminReply::LoopControl).
    TriggerLoop { name: String },
    /// A pairing or access question from the local user `by`, asking in
    /// `conversation`; answered [`Access`](crate::AdminReply::Access).
    Access {
        request: AccessRequest,
        conversation: ConversationKey,
        by: UserId,
    },
    /// A question about the web dashboard's sign-in; answered
    /// [`Web`](crate::AdminReply::Web).
    Web { request: WebRequest },
    /// A question from a page of the web dashboard; answered
    /// [`Dashboard`](crate::AdminReply::Dashboard).
    Dashboard { request: crate::DashboardRequest },
}

/// Where the machine's owner answered from, kept with a decision and shown
/// in the audit trail ("from the terminal", "from the web").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Via {
    /// `passepartout approvals approve|deny`, through the local socket.
    Terminal,
    /// A button on the web dashboard's Approvals page.
    Web,
}

/// What the owner may ask about signing in to the web dashboard.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum WebRequest {
    /// A one-time sign-in link (valid for minutes, good for one use).
    Link,
    /// The signed-in browsers: id prefix, created, last seen, user agent.
    Sessions,
    /// Sign out the browser whose session id starts with `id`.
    Revoke { id: String },
    /// The API keys: id prefix, made, name.
    Keys,
    /// Make an API key called `name`, one that answers its own
    /// conversations' approvals if `approver`; the answer shows it, once.
    CreateKey {
        name: String,
        #[serde(default)]
        approver: bool,
    },
    /// Revoke the API key called `key`, or whose id starts with it.
    RevokeKey { key: String },
}

/// What the owner may ask about who is let in, and who is linked.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum AccessRequest {
    /// The people waiting with a pairing code (never the codes).
    Waiting,
    /// Let in whoever `code` was sent to, as an approver too if `approver`.
    Approve { code: String, approver: bool },
    /// Everyone let in, per gateway, with where that comes from.
    List,
    /// Revoke the pairing of `person` (`gateway:user`).
    Revoke { person: String },
    /// Clear the pairing codes waiting: all, or those of `which` (a
    /// gateway, a person as `gateway:user`, or one code).
    Clear {
        #[serde(default)]
        which: Option<String>,
    },
    /// Everyone linked across channels, with their accounts.
    People,
    /// Link the asking terminal with whoever asked for `code`; without a
    /// code, a code for the terminal to name on another channel.
    Link { code: Option<String> },
    /// Take `person` apart: a linked person's number, or one account
    /// (`gateway:user`).
    Unlink { person: String },
}

impl std::fmt::Debug for AccessRequest {
    /// Without the code, so it cannot reach a log.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Waiting => f.write_str("Waiting"),
            Self::Approve { approver, .. } => f
                .debug_struct("Approve")
                .field("approver", approver)
                .finish_non_exhaustive(),
            Self::List => f.write_str("List"),
            Self::Revoke { person } => f.debug_struct("Revoke").field("person", person).finish(),
            // It may be a code.
            Self::Clear { which } => f
                .debug_struct("Clear")
                .field("which", &which.as_ref().map(|_| "…"))
                .finish(),
            Self::People => f.write_str("People"),
            Self::Link { code } => f
                .debug_struct("Link")
                .field("code", &code.as_ref().map(|_| "…"))
                .finish(),
            Self::Unlink { person } => f.debug_struct("Unlink").field("person", person).finish(),
        }
    }
}
