//! What the core answers an [`AdminRequest`](crate::AdminRequest).
//!
//! The envelope is typed, and so are the short answers (a decision, a loop
//! stopped or triggered). The status document, the approvals listing and the
//! loop statuses are documents the core assembles from its own types and the
//! CLI renders whole, so they stay JSON values here.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// The core's answer to an admin request.
#[derive(Clone, Debug, PartialEq)]
pub enum AdminReply {
    /// The daemon's status document (the answer to `Status` and `Recheck`).
    Status(serde_json::Value),
    /// The approvals listing: `{"approvals": […]}`, with `"audit": […]` when
    /// every approval was asked for.
    Approvals(Result<serde_json::Value, Unreadable>),
    /// What came of deciding an approval.
    Decision(Decision),
    /// What came of deciding every pending approval (of a conversation).
    Decisions(Decisions),
    /// The standing rules listing: `{"rules": […]}`, one per live rule.
    Rules(Result<serde_json::Value, Unreadable>),
    /// What came of revoking a standing rule.
    RuleRevoked(RuleRevoked),
    /// The background loops' statuses, a JSON list, one per loop.
    Loops(Result<serde_json::Value, Unreadable>),
    /// What came of stopping or triggering a loop.
    LoopControl(LoopControl),
    /// The tools listing: a JSON list, one per tool, with its source and gate.
    Tools(serde_json::Value),
    /// What came of a pairing or access request.
    Access(AccessAnswer),
    /// What came of reloading the configuration.
    Reloaded(Reloaded),
    /// What came of a web dashboard request.
    Web(WebAnswer),
    /// The document a page of the web dashboard asked for (see
    /// [`DashboardRequest`](crate::DashboardRequest)).
    Dashboard(Result<serde_json::Value, Unreadable>),
}

/// What came of a web dashboard request: a link, a listing, or what was done.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct WebAnswer {
    /// Whether it was done (false: refused, with why in `message`).
    pub ok: bool,
    /// The listing, or what happened or why not, for people.
    pub message: String,
    /// The sign-in link, for a `link` request that was answered.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

/// What came of reloading the configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Reloaded {
    /// Whether the file was taken (false: it was refused whole, and the
    /// running configuration is kept).
    pub applied: bool,
    /// What happened, for people.
    pub message: String,
    /// The settings that changed and now apply (`telegram.allowed_users`, …).
    pub changed: Vec<String>,
    /// The settings that changed in the file but apply only after a restart.
    pub need_restart: Vec<String>,
    /// Why the file was refused: every problem in it.
    pub problems: Vec<String>,
}

/// A listing the core could not produce (its store could not be read); the
/// message is for people.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("{message}")]
pub struct Unreadable {
    /// Why, for people.
    pub message: String,
}

impl Unreadable {
    /// Wraps `error`'s message.
    pub fn because(error: impl std::fmt::Display) -> Self {
        Self {
            message: error.to_string(),
        }
    }
}

/// What came of an approve or deny from the local user.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Whether this request decided the approval (false: it was decided
    /// before, has no such token, or the decision could not be kept).
    pub decided: bool,
    /// What happened, or why not, for people.
    pub message: String,
}

/// What came of deciding every pending approval (of one conversation).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decisions {
    /// Whether the request was taken (false: a conversation that is no
    /// `gateway:chat`, approving everywhere at once, a store that failed).
    pub ok: bool,
    /// What happened in all, or why not, for people.
    pub message: String,
    /// What came of each approval, oldest first.
    pub decisions: Vec<Decision>,
}

/// What came of revoking a standing rule.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleRevoked {
    /// Whether this request revoked it (false: no such rule).
    pub revoked: bool,
    /// What happened, or why not, for people.
    pub message: String,
}

/// What came of stopping or triggering a loop.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoopControl {
    /// Whether the loop was stopped (or triggered).
    pub ok: bool,
    /// What happened, or why not, for people.
    pub message: String,
}

/// What came of a pairing or access request: a listing, or what was done.
/// Its `Debug` leaves out the message, which may hold a link code.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AccessAnswer {
    /// Whether it was done (false: refused, with why in `message`).
    pub ok: bool,
    /// The listing, or what happened or why not, for people.
    pub message: String,
}

impl std::fmt::Debug for AccessAnswer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccessAnswer")
            .field("ok", &self.ok)
            .field("message", &format_args!("({} bytes)", self.message.len()))
            .finish()
    }
}
