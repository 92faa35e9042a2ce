//! What a client that keeps its own copy of a conversation sends beside its
//! message (an OpenAI-compatible API client resends the whole exchange
//! each time): its own instructions for the model, and, when the
//! conversation is new to the daemon, the messages that came before. The
//! core gives the model the instructions after the assistant's own, marked
//! as the client's, and keeps the earlier messages as the conversation's
//! history before its first turn: never as messages to answer.

use serde::{Deserialize, Serialize};

/// The client's side of a conversation, carried with one message.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientContext {
    /// The client's own system message(s), joined.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// The messages before this one, oldest first, for a conversation the
    /// daemon has no history of yet (it ignores them otherwise).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub earlier: Vec<EarlierMessage>,
}

/// One message of a conversation's past, as the client sent it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EarlierMessage {
    /// Who said it.
    pub role: EarlierRole,
    /// What was said.
    pub text: String,
}

/// Who said an earlier message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EarlierRole {
    /// The person.
    User,
    /// The assistant (as the client showed its answer).
    Assistant,
}

impl ClientContext {
    /// Whether it carries nothing.
    pub fn is_empty(&self) -> bool {
        self.instructions.is_none() && self.earlier.is_empty()
    }
}
