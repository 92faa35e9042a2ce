//! What an admin surface may ask the core: one variant per question, each
//! answered by one [`AdminReply`](crate::AdminReply) variant.
//!
//! A request is its own wire form: the local socket carries it as it is,
//! one JSON object tagged by its `"type"` ([`AdminRequest::KINDS`]), so a
//! request is written once, here. Who asks, and from where, is no part of
//! it: the surface hands that in beside it as an [`Asker`](crate::Asker).

use serde::{Deserialize, Serialize};

/// A question from the machine's owner to the daemon.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AdminRequest {
    /// The daemon's status document; answered [`Status`](crate::AdminReply::Status).
    Status,
    /// Probe every model provider again (a provider that answers is healthy
    /// again), then the status document; answered
    /// [`Status`](crate::AdminReply::Status).
    Recheck,
    /// The pending approvals; with `all`, every approval and the audit trail.
    /// Answered [`Approvals`](crate::AdminReply::Approvals).
    Approvals {
        /// Every approval and the audit trail, not only the pending ones.
        #[serde(default)]
        all: bool,
    },
    /// Approve or deny the approval with `token`, as the asker, who answers
    /// from the terminal or the web dashboard (its [`Via`]); with `always`,
    /// an approval also makes a standing rule (calls like it run in its
    /// conversation without asking). Answered
    /// [`Decision`](crate::AdminReply::Decision).
    Decide {
        /// The approval's token, as its prompt shows it.
        token: String,
        /// Approve (else deny).
        approve: bool,
        /// Approve and make a standing rule.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        always: bool,
    },
    /// Approve or deny, as the asker, every pending approval of the
    /// conversation named `from` (`gateway:chat`) — or, to deny, of every
    /// conversation when none is named. Each is decided on its own, as a
    /// single decision would be. Answered
    /// [`Decisions`](crate::AdminReply::Decisions).
    DecideAll {
        /// Approve (else deny).
        approve: bool,
        /// The conversation, `gateway:chat`; none: every conversation.
        #[serde(rename = "conversation", default, skip_serializing_if = "Option::is_none")]
        from: Option<String>,
    },
    /// The live standing rules; answered [`Rules`](crate::AdminReply::Rules).
    Rules,
    /// Revoke the standing rule `id` as the asker; answered
    /// [`RuleRevoked`](crate::AdminReply::RuleRevoked).
    RevokeRule {
        /// The rule's number, as the listing shows it.
        #[serde(rename = "rule")]
        id: u64,
    },
    /// The background loops' statuses; answered [`Loops`](crate::AdminReply::Loops).
    Loops,
    /// The tools offered in the asker's conversation, each with its source
    /// and its gate; answered [`Tools`](crate::AdminReply::Tools).
    Tools,
    /// Stop the loop called `name` until it is started again (or, for a
    /// configured loop, the daemon restarts); answered
    /// [`LoopControl`](crate::AdminReply::LoopControl).
    StopLoop {
        /// The loop's name.
        name: String,
    },
    /// Start the loop called `name` again, stopped on request, from its
    /// next time on; answered [`LoopControl`](crate::AdminReply::LoopControl).
    StartLoop {
        /// The loop's name.
        name: String,
    },
    /// Run the loop called `name` now; answered
    /// [`LoopControl`](crate::AdminReply::LoopControl).
    TriggerLoop {
        /// The loop's name.
        name: String,
    },
    /// A pairing or access question from the asker, in the asker's
    /// conversation; answered [`Access`](crate::AdminReply::Access).
    Access {
        /// What is asked.
        request: AccessRequest,
    },
    /// A question about the web dashboard's sign-in; answered
    /// [`Web`](crate::AdminReply::Web).
    Web {
        /// What is asked.
        request: WebRequest,
    },
    /// Read the configuration file again and apply what can change while
    /// the daemon runs; answered [`Reloaded`](crate::AdminReply::Reloaded).
    Reload,
    /// A question from a page of the web dashboard; answered
    /// [`Dashboard`](crate::AdminReply::Dashboard).
    Dashboard {
        /// What the page asks.
        request: crate::DashboardRequest,
    },
}

impl AdminRequest {
    /// The `"type"` of every request on the wire, in the order above.
    pub const KINDS: [&'static str; 16] = [
        "status",
        "recheck",
        "approvals",
        "decide",
        "decide_all",
        "rules",
        "revoke_rule",
        "loops",
        "tools",
        "stop_loop",
        "start_loop",
        "trigger_loop",
        "access",
        "web",
        "reload",
        "dashboard",
    ];
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
    Revoke {
        /// The start of the session's id.
        id: String,
    },
    /// The API keys: id prefix, made, name.
    Keys,
    /// Make an API key called `name`, one that answers its own
    /// conversations' approvals if `approver`; the answer shows it, once.
    CreateKey {
        /// The key's name.
        name: String,
        /// Whether the key answers its conversations' approvals.
        #[serde(default)]
        approver: bool,
    },
    /// Revoke the API key called `key`, or whose id starts with it.
    RevokeKey {
        /// The key's name, or the start of its id.
        key: String,
    },
}

/// What the owner may ask about who is let in, and who is linked.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum AccessRequest {
    /// The people waiting with a pairing code (never the codes).
    Waiting,
    /// Let in whoever `code` was sent to, as an approver too if `approver`.
    Approve {
        /// The pairing code.
        code: String,
        /// Let in as an approver too.
        approver: bool,
    },
    /// Everyone let in, per gateway, with where that comes from.
    List,
    /// Revoke the pairing of `person` (`gateway:user`).
    Revoke {
        /// The person, `gateway:user`.
        person: String,
    },
    /// Clear the pairing codes waiting: all, or those of `which` (a
    /// gateway, a person as `gateway:user`, or one code).
    Clear {
        /// A gateway, a person or a code; none: every code.
        #[serde(default)]
        which: Option<String>,
    },
    /// Everyone linked across channels, with their accounts.
    People,
    /// Link the asking terminal with whoever asked for `code`; without a
    /// code, a code for the terminal to name on another channel.
    Link {
        /// The code another channel was given; none: make one.
        code: Option<String>,
    },
    /// Take `person` apart: a linked person's number, or one account
    /// (`gateway:user`).
    Unlink {
        /// A linked person's number, or an account, `gateway:user`.
        person: String,
    },
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// One request of each kind: a new variant fails to compile here
    /// until it has a sample, and the test then asks for its kind.
    fn sample(kind: &AdminRequest) -> AdminRequest {
        match kind {
            AdminRequest::Status => AdminRequest::Status,
            AdminRequest::Recheck => AdminRequest::Recheck,
            AdminRequest::Approvals { .. } => AdminRequest::Approvals { all: true },
            AdminRequest::Decide { .. } => AdminRequest::Decide {
                token: "K7PX2Q".into(),
                approve: true,
                always: true,
            },
            AdminRequest::DecideAll { .. } => AdminRequest::DecideAll {
                approve: false,
                from: Some("socket:work".into()),
            },
            AdminRequest::Rules => AdminRequest::Rules,
            AdminRequest::RevokeRule { .. } => AdminRequest::RevokeRule { id: 3 },
            AdminRequest::Loops => AdminRequest::Loops,
            AdminRequest::Tools => AdminRequest::Tools,
            AdminRequest::StopLoop { .. } => AdminRequest::StopLoop { name: "x".into() },
            AdminRequest::StartLoop { .. } => AdminRequest::StartLoop { name: "x".into() },
            AdminRequest::TriggerLoop { .. } => AdminRequest::TriggerLoop { name: "x".into() },
            AdminRequest::Access { .. } => AdminRequest::Access {
                request: AccessRequest::List,
            },
            AdminRequest::Web { .. } => AdminRequest::Web {
                request: WebRequest::Link,
            },
            AdminRequest::Reload => AdminRequest::Reload,
            AdminRequest::Dashboard { .. } => AdminRequest::Dashboard {
                request: crate::DashboardRequest::Channels,
            },
        }
    }

    #[test]
    fn every_kind_is_listed_once_and_reads_back() {
        let every = [
            AdminRequest::Status,
            AdminRequest::Recheck,
            AdminRequest::Approvals { all: false },
            sample(&AdminRequest::Decide {
                token: String::new(),
                approve: false,
                always: false,
            }),
            sample(&AdminRequest::DecideAll {
                approve: false,
                from: None,
            }),
            AdminRequest::Rules,
            AdminRequest::RevokeRule { id: 0 },
            AdminRequest::Loops,
            AdminRequest::Tools,
            AdminRequest::StopLoop { name: String::new() },
            AdminRequest::StartLoop { name: String::new() },
            AdminRequest::TriggerLoop { name: String::new() },
            AdminRequest::Access {
                request: AccessRequest::People,
            },
            AdminRequest::Web {
                request: WebRequest::Keys,
            },
            AdminRequest::Reload,
            AdminRequest::Dashboard {
                request: crate::DashboardRequest::Config,
            },
        ];
        let kinds: Vec<String> = every
            .iter()
            .map(|request| {
                let request = sample(request);
                let wire = serde_json::to_value(&request).unwrap();
                assert_eq!(serde_json::from_value::<AdminRequest>(wire.clone()).unwrap(), request);
                wire["type"].as_str().unwrap().to_owned()
            })
            .collect();
        assert_eq!(kinds, AdminRequest::KINDS);
    }

    #[test]
    fn requests_keep_the_wire_form_of_the_sockets_frames() {
        let wire = |request: AdminRequest| serde_json::to_value(request).unwrap();
        assert_eq!(wire(AdminRequest::Status), json!({"type": "status"}));
        assert_eq!(
            wire(AdminRequest::Decide {
                token: "K7PX2Q".into(),
                approve: true,
                always: false
            }),
            json!({"type": "decide", "token": "K7PX2Q", "approve": true})
        );
        assert_eq!(
            wire(AdminRequest::DecideAll {
                approve: true,
                from: Some("socket:work".into())
            }),
            json!({"type": "decide_all", "approve": true, "conversation": "socket:work"})
        );
        assert_eq!(
            wire(AdminRequest::RevokeRule { id: 12 }),
            json!({"type": "revoke_rule", "rule": 12})
        );
        assert_eq!(
            wire(AdminRequest::Access {
                request: AccessRequest::Clear { which: None }
            }),
            json!({"type": "access", "request": {"action": "clear", "which": null}})
        );
        let read = |line: serde_json::Value| serde_json::from_value::<AdminRequest>(line).unwrap();
        assert_eq!(read(json!({"type": "status", "extra": 1})), AdminRequest::Status);
        assert_eq!(
            read(json!({"type": "approvals"})),
            AdminRequest::Approvals { all: false }
        );
    }
}
