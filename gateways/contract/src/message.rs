//! Normalized messages: what a gateway hands in, stamped with the time it
//! was received ([`unix_ms`]), and what the core sends out.

use serde::{Deserialize, Serialize};

use crate::ids::{ApprovalToken, ConversationKey, MessageId, UserId};
use crate::media::Attachment;

/// Who sent an inbound message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Sender {
    /// The platform's stable id of the person: the key of conversations and requests.
    pub id: UserId,
    /// Other ids the platform knows the same person by (Signal: the phone
    /// number beside the UUID). Allowlists and approvers may name any of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<UserId>,
    /// A human-readable name when the platform gives one; never used for decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    /// The platform's handle for them, without the `@` (Telegram's
    /// username); never used for decisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
}

impl Sender {
    /// A sender known by `id` alone.
    pub fn new(id: UserId) -> Self {
        Self {
            id,
            aliases: Vec::new(),
            display_name: None,
            username: None,
        }
    }

    /// How the sender is shown to people: name, `@username`, then
    /// `gateway:id` ([`crate::names::shown`]).
    pub fn shown(&self, gateway: &crate::GatewayId) -> String {
        let id = format!("{gateway}:{}", self.id.as_str());
        crate::names::shown(self.display_name.as_deref(), self.username.as_deref(), &id)
    }

    /// Whether `id` is this sender's id or one of their aliases.
    pub fn is(&self, id: &str) -> bool {
        self.ids().any(|own| own.as_str() == id)
    }

    /// The sender's id, then their aliases.
    pub fn ids(&self) -> impl Iterator<Item = &UserId> {
        std::iter::once(&self.id).chain(&self.aliases)
    }
}

/// One platform update, normalized.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inbound {
    /// The chat it was written in, on the gateway that received it.
    pub conversation: ConversationKey,
    /// Who wrote it.
    pub sender: Sender,
    /// The platform's id for this message: the dedupe key within the conversation.
    pub message_id: MessageId,
    /// The message this one replies to (quotes), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reply_to: Option<MessageId>,
    /// What it carries: text, a button press, a reaction, media.
    pub body: InboundBody,
    /// When the gateway received it, in milliseconds since the Unix epoch
    /// (a gateway stamps it with [`unix_ms`]).
    pub received_at_ms: u64,
    /// Heard in a bridged group without being addressed to the assistant
    /// (no mention, no reply to it, no command): only to be relayed to the
    /// bridge's other chats, never answered. Gateways pass such messages
    /// only for the chats they were told are bridged, and, from any group,
    /// one that names a link code ([`names_a_link_code`](crate::names_a_link_code)),
    /// which the core only voids.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub overheard: bool,
    /// Addressed to the assistant only by replying to one of the bot's
    /// messages (no mention, no command). In a bridged group that message
    /// may be a relayed copy of someone's, which makes the reply meant for
    /// them: the core, which knows the copies, tells the two apart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_reply_only: bool,
    /// What a client keeping its own copy of the conversation sent beside
    /// the message (an API client's instructions and earlier messages).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<crate::client::ClientContext>,
}

/// Milliseconds since the Unix epoch, read from the system clock now: an
/// inbound message's `received_at_ms`.
pub fn unix_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_millis() as u64)
}

/// What an inbound message carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum InboundBody {
    /// Text typed by a person.
    Text {
        /// The text, as the platform gave it.
        text: String,
    },
    /// A press on a button the bot sent (Telegram inline keyboard); `data` is
    /// the button's payload.
    Button {
        /// The payload the bot put on the button.
        data: String,
    },
    /// A reaction put on (or taken off) an earlier message.
    Reaction {
        /// The reaction, as the platform spells it (an emoji).
        emoji: String,
        /// The message reacted to.
        target: MessageId,
        /// The reaction was taken off rather than put on.
        removed: bool,
    },
    /// Media (a voice note, a photo, a file), with the caption the person
    /// wrote under it. The core fetches the bytes through the gateway's
    /// [`Fetch`](crate::Fetch) when it reads the message.
    Media {
        /// The files that came with the message.
        attachments: Vec<Attachment>,
        /// The text written under them, if any.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        caption: Option<String>,
    },
    /// Something the gateway received but the core cannot read (a poll, a
    /// game); `what` names it so the core can say so.
    Unsupported {
        /// What it was, in a word or a few ("contact").
        what: String,
    },
    /// The person changed the text of their message `target` to `text`.
    /// Passed on only in bridged groups, to change the copies.
    Edited {
        /// The message that was changed.
        target: MessageId,
        /// Its text now.
        text: String,
    },
    /// The person deleted their message `target` for everyone. Passed on
    /// only in bridged groups, to delete the copies.
    Deleted {
        /// The message that was deleted.
        target: MessageId,
    },
}

/// How the core means an outbound text, so a client can show or exit accordingly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum ReplyKind {
    /// The assistant's answer.
    #[default]
    Answer,
    /// Information from the daemon itself (command output, "stopped after N steps").
    Notice,
    /// The turn failed: no model answered, or an internal error (with an error id).
    Failure,
}

/// A message the core wants delivered.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outbound {
    /// Stable id of this outbound message, the same on every delivery attempt,
    /// so a receiver that sees it twice (after a crash) can drop the copy.
    pub id: String,
    /// The chat to deliver it to, on the gateway that delivers it.
    pub conversation: ConversationKey,
    /// The inbound message this answers, to quote it or to match it up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_reply_to: Option<MessageId>,
    /// What to show: text, an approval prompt, a file, a change to a draft.
    pub body: OutboundBody,
    /// The platform messages a draft of this reply occupies (see
    /// [`crate::draft`]): the gateway makes them the reply, or removes them,
    /// rather than leave a half-written copy beside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drafts: Vec<MessageId>,
    /// Set on the last message a turn sends: its turn is over, and this is
    /// what its models used. A gateway that answers one request with one
    /// turn (an HTTP API) ends its answer here; the others may ignore it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_end: Option<TurnEnd>,
}

/// The end of a turn, on its last message: the tokens its model calls used.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TurnEnd {
    /// Tokens read by the models (the prompts, every step of the turn).
    pub tokens_in: u64,
    /// Tokens the models wrote.
    pub tokens_out: u64,
}

/// What an outbound message carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum OutboundBody {
    /// Text for the chat, in Markdown, which the gateway renders for its
    /// platform.
    Text {
        /// The text to send.
        text: String,
        /// Whether it is an answer, a notice from the daemon, or a failure.
        #[serde(default)]
        kind: ReplyKind,
    },
    /// Ask a person to approve or deny an action. Gateways with buttons show
    /// Approve / Always / Deny carrying `token`; others show `text`, which
    /// says how to answer (and what "always" would let run without asking).
    ApprovalPrompt {
        /// The token the buttons carry and a typed answer names.
        token: ApprovalToken,
        /// The action that waits, as a person reads it.
        action: String,
        /// The prompt's text: the action, and how to answer.
        text: String,
    },
    /// The approval `token` was decided: a gateway that can edit messages
    /// changes its prompt (`prompt`, the platform id it reported on
    /// delivery) to `text` and removes the buttons. Others may drop it: the
    /// conversation is told the outcome in messages of its own.
    ApprovalDecided {
        /// The approval that was decided.
        token: ApprovalToken,
        /// The platform's id of the prompt's message.
        prompt: MessageId,
        /// What the prompt says now: the outcome.
        text: String,
    },
    /// A file from the assistant's workspace, sent as a document (or a
    /// photo, where the platform shows images inline). The gateway reads it
    /// at delivery, so what waits in the outbox is its path, not its bytes.
    File(OutboundFile),
    /// The bot's own message `message` (a relayed copy) shows `text` now.
    Edit {
        /// The bot's message to change.
        message: MessageId,
        /// Its new text.
        text: String,
    },
    /// Nothing to say: the drafts this message carries (a turn that ended
    /// with no text to become) are removed.
    Withdraw,
    /// The turn answering `in_reply_to` was stopped while its reply was
    /// being written. A draft of a stopped reply is no answer: the drafts
    /// this message carries are removed where the platform can remove a
    /// message, and otherwise shown as stopped (a terminal's transcript
    /// keeps what it printed). `partial` is the text the draft showed, as
    /// the model wrote it (Markdown); empty when it is not known (the
    /// daemon restarted in between).
    Stopped {
        /// The draft's text when the turn stopped (Markdown); empty when not known.
        #[serde(default)]
        partial: String,
    },
}

/// A file to send: where it is, what to call it, and what it is.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct OutboundFile {
    /// The file's absolute path on this machine.
    pub path: String,
    /// The name the person sees (the file's own name).
    pub name: String,
    /// Its media type (`application/pdf`, `image/png`), from its name.
    pub media_type: String,
    /// Its size in bytes when it was handed over; a gateway checks it again
    /// against its platform's limit when it reads the file.
    pub size: u64,
    /// A text shown with the file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caption: Option<String>,
    /// The file at `path` is a copy made for this message alone: the core
    /// removes it once the message is delivered or dropped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub temporary: bool,
}

impl OutboundFile {
    /// Whether it is an image a platform can show as a photo.
    pub fn is_image(&self) -> bool {
        matches!(self.media_type.as_str(), "image/jpeg" | "image/png")
    }
}

/// What a gateway reports after a successful delivery.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivered {
    /// Platform ids of the messages sent (several when a long text was split),
    /// so a later reply or reaction to them can be matched.
    pub message_ids: Vec<MessageId>,
}

/// What a gateway's normalizer makes of one platform update.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Normalized {
    /// A message for the core.
    Inbound(Box<Inbound>),
    /// Nothing for the core; the platform is still told the update was
    /// handled (a Telegram offset advances past it).
    Skip {
        /// Why, for the log.
        reason: &'static str,
    },
}

impl Normalized {
    /// Nothing for the core, for `reason`.
    pub fn skip(reason: &'static str) -> Self {
        Self::Skip { reason }
    }
}
