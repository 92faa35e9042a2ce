//! The pipeline's event: a [`Signal`] is one thing for the assistant to
//! perceive, reason about and act on — a person's message, media they sent
//! (read when the turn runs), the output of tools it called (fed back at
//! depth + 1), a correction of the model's malformed output (also fed back),
//! or something it cannot read.

use passepartout_gateway::{Attachment, ConversationKey, MessageId, UserId};

/// Where a signal comes from: the conversation, the person and the message
/// that started the turn. Replies go back to the origin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Origin {
    pub conversation: ConversationKey,
    pub sender: UserId,
    pub message_id: MessageId,
    /// What the sender's platform calls them, to show them by (never to
    /// decide by): empty for the daemon's own turns (loops, settlements).
    pub sender_names: crate::store::Names,
}

/// One step of a turn.
#[derive(Clone, Debug, PartialEq)]
pub struct Signal {
    pub origin: Origin,
    /// 0 for the person's message; each feedback step adds one.
    pub depth: u32,
    pub body: SignalBody,
}

/// What a signal carries.
#[derive(Clone, Debug, PartialEq)]
pub enum SignalBody {
    Message(Message),
    Media(MediaMessage),
    ToolResults(ToolResults),
    Correction(Correction),
    Unreadable(Unreadable),
}

/// The model's last output could not be used; `problem` tells it why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Correction {
    pub problem: String,
}

/// Text from a person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    pub text: String,
}

/// Media from a person (a voice note, a photo, a file), with the caption
/// they wrote; fetched and read when the turn runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaMessage {
    pub attachments: Vec<Attachment>,
    pub caption: Option<String>,
}

/// The outputs of the tool calls the model asked for, in call order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolResults {
    pub results: Vec<ToolOutput>,
}

/// One tool call's output (or its error, which the model sees as well).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolOutput {
    pub call_id: String,
    pub name: String,
    pub content: String,
    pub is_error: bool,
}

/// Something that arrived but that the assistant cannot read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unreadable {
    pub what: String,
}

impl Signal {
    /// The feedback signal that follows this one.
    pub fn feedback(&self, body: SignalBody) -> Signal {
        Signal {
            origin: self.origin.clone(),
            depth: self.depth + 1,
            body,
        }
    }
}
