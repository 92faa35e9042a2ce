//! A standing rule as the store keeps it: made when a person answered an
//! approval with "always", it lets calls like the approved one run in that
//! conversation without asking again, until it expires or is revoked. The
//! approvals desk derives its scope and matches calls against it; this is
//! only its form.

use passepartout_gateway::{ApprovalToken, ConversationKey};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::approval::{How, Person};

/// Calls of one tool in one conversation that run without asking.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StandingRule {
    /// Unique, never reused; what a person revokes it by. The store gives
    /// it when the rule is kept.
    pub id: u64,
    /// The only conversation it applies in.
    pub conversation: ConversationKey,
    /// The only tool it applies to.
    pub tool: String,
    /// Which of that tool's calls it covers.
    pub scope: Scope,
    pub created_ms: u64,
    /// From then on it covers nothing (and the store forgets it).
    pub expires_ms: u64,
    /// Who made it, answering "always".
    pub by: Person,
    /// How they answered: the owner's answers from the terminal and the
    /// web are shown as made from there, not by the local account they
    /// came through. None in a rule kept before this was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub how: Option<How>,
    /// The approval whose "always" made it.
    pub approval: ApprovalToken,
}

/// Which calls of the rule's tool a standing rule covers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Scope {
    /// A shell command line, exactly.
    Command { command: String },
    /// A plain shell command beginning with these words, followed by
    /// nothing or by further plain options.
    CommandPrefix { words: Vec<String> },
    /// The call's `argument` naming exactly this path; other arguments free.
    Path { argument: String, path: String },
    /// The call's `argument` naming a path directly in this directory
    /// (`""`: the top); other arguments free.
    Directory { argument: String, directory: String },
    /// The call's `argument` a URL on this host; other arguments free.
    Host { argument: String, host: String },
    /// Exactly these arguments.
    Arguments { arguments: Value },
}
