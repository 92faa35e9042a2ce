//! What the web dashboard's pages ask the core beyond what the CLI asks:
//! the conversations and their history, a search over it, the usage over
//! days, and the configuration file as the daemon reads it. Each is
//! answered [`AdminReply::Dashboard`](crate::AdminReply::Dashboard) with a
//! JSON document the page renders whole, as the status document is.

use passepartout_gateway::ConversationKey;
use serde::{Deserialize, Serialize};

/// A question one of the dashboard's pages asks.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub enum DashboardRequest {
    /// Every conversation with kept history, newest activity first:
    /// `{"conversations": [{"gateway", "chat", "turns", "last_ms"}]}`.
    Conversations,
    /// One conversation's history, oldest first, and its running summary:
    /// `{"turns": [{"at_ms", "messages": [{"role", "content", "tool_calls",
    /// "tool_call_id"}]}], "summary": "…" | null}`.
    History { conversation: ConversationKey },
    /// How far one conversation's history has come, for a page that shows
    /// it to learn of a new turn: `{"turns", "last_ms"}`.
    Latest { conversation: ConversationKey },
    /// The turns of every conversation that best match `query`, best first,
    /// ranked as the `search_history` tool ranks them:
    /// `{"results": [{"gateway", "chat", "at_ms", "text"}]}`.
    Search { query: String },
    /// Tokens in and out over the last `days` UTC days: per day and
    /// provider, and per conversation.
    Usage { days: u32 },
    /// The configuration file with every secret masked, and what
    /// `check-config` says of it.
    Config,
}
