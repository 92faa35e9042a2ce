//! What the web dashboard's pages ask the core beyond what the CLI asks:
//! the conversations and their history, a search over it, the usage over
//! days, and the configuration file as the daemon reads it. Each is
//! answered [`AdminReply::Dashboard`](crate::AdminReply::Dashboard) with a
//! JSON document the page renders whole, as the status document is.

use passepartout_gateway::ConversationKey;
use serde::{Deserialize, Serialize};

/// A question one of the dashboard's pages asks.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ask", rename_all = "snake_case")]
pub enum DashboardRequest {
    /// Every conversation with kept history, newest activity first:
    /// `{"conversations": [{"gateway", "chat", "turns", "last_ms"}]}`.
    Conversations,
    /// One conversation's history, oldest first, and its running summary:
    /// `{"turns": [{"at_ms", "messages": [{"role", "content", "tool_calls",
    /// "tool_call_id"}]}], "summary": "…" | null}`.
    History {
        /// The conversation.
        conversation: ConversationKey,
    },
    /// How far one conversation's history has come, for a page that shows
    /// it to learn of a new turn: `{"turns", "last_ms"}`.
    Latest {
        /// The conversation.
        conversation: ConversationKey,
    },
    /// The turns of every conversation that best match `query`, best first,
    /// ranked as the `search_history` tool ranks them:
    /// `{"results": [{"gateway", "chat", "at_ms", "text"}]}`.
    Search {
        /// The words searched for.
        query: String,
    },
    /// Tokens in and out over the last `days` UTC days: per day and
    /// provider, and per conversation.
    Usage {
        /// How many days back, today included.
        days: u32,
    },
    /// The configuration file with every secret masked, and what
    /// `check-config` says of it; with `"based_on"`, a digest of the file
    /// as read, which an [`EditConfig`](Self::EditConfig) hands back.
    Config,
    /// Write the configuration file as edited on the page: `text` is the
    /// file as shown (masked), edited; a value left masked keeps the
    /// file's. Refused when the file is no longer the one `based_on`
    /// names, or when `check-config` finds a problem in the result (the
    /// file then untouched); else the old file is kept as `FILE.bak`, the
    /// new one written and the daemon reloaded:
    /// `{"written", "message", "problems": […], "reloaded": Reloaded | null}`.
    EditConfig {
        /// The file as edited, secrets still masked where left so.
        text: String,
        /// The digest of the file the page showed.
        based_on: String,
    },
    /// The daemon's recent log lines after `after`, at `level` or more
    /// severe, from targets starting with `target`, the newest `limit`:
    /// `{"kept": bool, "last": seq, "lines": [{"seq", "at_ms", "level",
    /// "target", "text"}]}`, every configured secret redacted.
    Logs {
        /// The last line seen before (0: from the start).
        after: u64,
        /// The least severe level shown; none: every level.
        level: Option<String>,
        /// The start of the targets shown; none: every target.
        target: Option<String>,
        /// How many lines at most, the newest.
        limit: u32,
    },
    /// The API keys and the signed-in browsers, as `web keys` and `web
    /// sessions` list them: `{"keys": [{"id", "name", "made_ms",
    /// "approver"}], "sessions": [{"id", "created_ms", "seen_ms", "agent"}]}`.
    WebAccess,
    /// Each channel's state and last error, and where linking a Signal
    /// account stands: `{"channels": [{"name", "state", "detail",
    /// "configured", "last_error"}], "telegram": {…}, "signal": {…},
    /// "matrix": {…}}`.
    Channels,
    /// Connect the Telegram bot whose token is `token` (checked with
    /// `getMe`, stored in a file of mode 0600), let in `owner` if given,
    /// through the same checks, `.bak` and reload as
    /// [`EditConfig`](Self::EditConfig): the same answer.
    ConnectTelegram {
        /// The bot's token, from BotFather.
        token: String,
        /// The Telegram user id to let in, if any.
        owner: Option<i64>,
    },
    /// Start linking the owner's own Signal account (as `signal link`
    /// does); its link and then its outcome are in [`Channels`](Self::Channels).
    LinkSignal,
    /// Log the assistant's Matrix account in once, as a new device, and
    /// keep that device's access token (a file of mode 0600) instead of
    /// the password, as `setup` does; let in `owner` if given, as one who
    /// talks and approves; through the same checks, `.bak` and reload as
    /// [`EditConfig`](Self::EditConfig): the same answer.
    ConnectMatrix {
        /// The homeserver's address.
        homeserver: String,
        /// The assistant's own user id.
        user: String,
        /// That account's password: used once, never kept.
        password: String,
        /// The owner's own user id, if given.
        owner: Option<String>,
    },
}

impl std::fmt::Debug for DashboardRequest {
    /// Without an edited file or a token, which may hold secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Conversations => f.write_str("Conversations"),
            Self::History { conversation } => f.debug_struct("History").field("conversation", conversation).finish(),
            Self::Latest { conversation } => f.debug_struct("Latest").field("conversation", conversation).finish(),
            Self::Search { .. } => f.write_str("Search"),
            Self::Usage { days } => f.debug_struct("Usage").field("days", days).finish(),
            Self::Config => f.write_str("Config"),
            Self::EditConfig { text, .. } => write!(f, "EditConfig({} bytes)", text.len()),
            Self::Logs {
                after,
                level,
                target,
                limit,
            } => f
                .debug_struct("Logs")
                .field("after", after)
                .field("level", level)
                .field("target", target)
                .field("limit", limit)
                .finish(),
            Self::WebAccess => f.write_str("WebAccess"),
            Self::Channels => f.write_str("Channels"),
            Self::ConnectTelegram { owner, .. } => f
                .debug_struct("ConnectTelegram")
                .field("owner", owner)
                .finish_non_exhaustive(),
            Self::LinkSignal => f.write_str("LinkSignal"),
            Self::ConnectMatrix {
                homeserver,
                user,
                owner,
                ..
            } => f
                .debug_struct("ConnectMatrix")
                .field("homeserver", homeserver)
                .field("user", user)
                .field("owner", owner)
                .finish_non_exhaustive(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_or_an_edited_file_never_reaches_a_debug_line() {
        let connect = DashboardRequest::ConnectTelegram {
            token: "123:secret-token".into(),
            owner: Some(7),
        };
        let edit = DashboardRequest::EditConfig {
            text: "api_key = \"sk-live\"".into(),
            based_on: "x".into(),
        };
        let matrix = DashboardRequest::ConnectMatrix {
            homeserver: "https://matrix.example.org".into(),
            user: "@assistant:example.org".into(),
            password: "hunter2-matrix".into(),
            owner: None,
        };
        let shown = format!("{connect:?} {edit:?} {matrix:?}");
        assert!(!shown.contains("secret-token") && !shown.contains("sk-live"), "{shown}");
        assert!(
            !shown.contains("hunter2") && shown.contains("@assistant:example.org"),
            "{shown}"
        );
    }
}
