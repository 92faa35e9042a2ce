//! Turning a signal-cli envelope into the contract's [`Inbound`], or a reason to skip it.
//!
//! This is the one place that reads signal-cli's envelope JSON (through private
//! serde structs); everything after it sees only the contract. The mapping:
//!
//! - a `dataMessage` with text → [`InboundBody::Text`]; mentions in the text
//!   (signal-cli leaves a placeholder at each) become `@name`, and mentions of
//!   the bot are removed; with attachments → [`InboundBody::Media`], the text
//!   as caption; a sticker or shared contact → a line of text (see
//!   [`crate::media`]); a payment → [`InboundBody::Unsupported`] naming it;
//! - a `dataMessage` in a group: conversation chat `group:<groupId>`; under
//!   [`GroupMode::MentionOrReply`] only when it mentions the bot (by UUID or
//!   number) or quotes one of the bot's messages, or names a link code
//!   (passed on overheard, for the core to void the code); a reaction only when it is on
//!   one of the bot's messages. Outside groups the chat is the sender's UUID;
//! - a quote → `reply_to`, the quoted message's id;
//! - a reaction → [`InboundBody::Reaction`] with the target message's id;
//! - an `editMessage` is skipped: the core has no notion of edits, and taking
//!   the new text as a message would answer the same question twice;
//! - a sync message (what the account's other devices sent) is skipped,
//!   unless the account is a person's own ([`BotIdentity::note_to_self`]):
//!   then what they write to *Note to Self* is a message of the Note-to-Self
//!   conversation, whose chat is the account's number, and every other sync
//!   message (their chats with other people, read receipts, contact lists)
//!   is skipped (see `sync`);
//! - receipts, typing indicators, calls, stories, remote deletions, group
//!   updates and anything unknown → [`Normalized::Skip`] with a reason for
//!   the log.
//!
//! **Message ids** hold the timestamp and the author (see
//! [`message_id`](crate::message_id)): `TIMESTAMP:UUID` for others' messages,
//! `TIMESTAMP` for the bot's. The sender is keyed by `sourceUuid`, which
//! signal-cli always gives; `sourceNumber`, when present, is the sender's
//! alias, so allowlists and approvers may name a number instead.

use passepartout_gateway::{
    ChatId, ConversationKey, GatewayId, Inbound, InboundBody, MessageId, Sender, UserId, names,
};
use std::collections::BTreeSet;

use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::GATEWAY_ID;
use crate::media::{self, Carried, Source};
use crate::message_id::{message_id, parse};

/// How a group conversation's chat id starts: signal-cli's base64 group id follows.
pub const GROUP_PREFIX: &str = "group:";

pub use passepartout_gateway::{GroupMode, Normalized};

/// The bot's own Signal account, to recognise mentions of it and quotes of
/// its messages. Either may be unknown; an empty identity matches nobody.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BotIdentity {
    /// The account's ACI UUID.
    pub uuid: Option<String>,
    /// The account's phone number, `+` and digits.
    pub number: Option<String>,
    /// Whether the account is a person's own, the assistant a linked device
    /// of it: then what they write to Note to Self is for the assistant.
    pub note_to_self: bool,
}

impl BotIdentity {
    /// Whether the address `uuid` / `number` is the bot's.
    pub fn is(&self, uuid: Option<&str>, number: Option<&str>) -> bool {
        let same = |ours: &Option<String>, theirs: Option<&str>| matches!((ours.as_deref(), theirs), (Some(a), Some(b)) if !a.is_empty() && a.eq_ignore_ascii_case(b));
        same(&self.uuid, uuid) || same(&self.number, number)
    }
}

/// Converts one envelope (the `envelope` member of a `receive` notification).
/// `now_ms` becomes `received_at_ms`.
pub fn normalize(envelope: &Value, bot: &BotIdentity, groups: &Groups, now_ms: u64) -> Normalized {
    let Ok(envelope) = Envelope::deserialize(envelope) else {
        return Normalized::Skip {
            reason: "envelope in a shape signal-cli is not known to send",
        };
    };
    let ctx = Context { bot, groups, now_ms };
    ctx.envelope(&envelope)
        .unwrap_or_else(|reason| Normalized::Skip { reason })
}

/// Why an envelope was skipped; turned into [`Normalized::Skip`] at the top.
type Step<T> = Result<T, &'static str>;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Envelope {
    source_uuid: Option<String>,
    source_number: Option<String>,
    source_name: Option<String>,
    timestamp: Option<u64>,
    data_message: Option<DataMessage>,
    edit_message: Option<EditMessage>,
    /// Read on its own (see `sync`): a sync message in an odd shape is
    /// skipped, not the reason the envelope is unreadable.
    sync_message: Option<Value>,
    receipt_message: Option<IgnoredAny>,
    typing_message: Option<IgnoredAny>,
    call_message: Option<IgnoredAny>,
    story_message: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DataMessage {
    timestamp: Option<u64>,
    message: Option<String>,
    group_info: Option<GroupInfo>,
    quote: Option<Quote>,
    reaction: Option<Reaction>,
    mentions: Option<Vec<Mention>>,
    /// Read item by item (see [`crate::media`]): one odd attachment must not
    /// make the whole envelope unreadable.
    attachments: Option<Vec<Value>>,
    sticker: Option<Value>,
    contacts: Option<Vec<Value>>,
    payment: Option<IgnoredAny>,
    remote_delete: Option<RemoteDelete>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EditMessage {
    target_sent_timestamp: u64,
    data_message: DataMessage,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RemoteDelete {
    timestamp: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct GroupInfo {
    group_id: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Quote {
    id: u64,
    author: Option<String>,
    author_number: Option<String>,
    author_uuid: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reaction {
    emoji: String,
    target_author: Option<String>,
    target_author_number: Option<String>,
    target_author_uuid: Option<String>,
    target_sent_timestamp: u64,
    #[serde(default)]
    is_remove: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Mention {
    name: Option<String>,
    number: Option<String>,
    uuid: Option<String>,
    /// Offset in the text, in UTF-16 code units.
    start: usize,
    /// Length in the text, in UTF-16 code units (1: the placeholder).
    length: usize,
}

/// Where a data message comes from: what every inbound made of it shares.
struct Origin<'e> {
    envelope: &'e Envelope,
    /// The sender's UUID.
    uuid: &'e str,
    /// The sender's number, if known: an alias of their UUID.
    number: Option<&'e str>,
    timestamp: u64,
    chat: String,
    /// The group's id, for a group message.
    group: Option<&'e str>,
    /// Whether every message counts, not only those addressed to the bot: a
    /// direct chat, or a group under [`GroupMode::All`].
    takes_everything: bool,
    /// A group joined to chats elsewhere: every person's message is taken,
    /// and only those addressed to the bot are answered.
    bridged: bool,
}

/// Which group messages are taken: by `mode`, except in the `bridged`
/// groups (their ids), joined to chats elsewhere, where every person's
/// message is taken, those not addressed to the bot marked overheard.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Groups {
    /// Which messages are taken in groups that are not bridged.
    pub mode: GroupMode,
    /// The bridged groups, by signal-cli's base64 group id.
    pub bridged: BTreeSet<String>,
}

impl From<GroupMode> for Groups {
    fn from(mode: GroupMode) -> Self {
        Self {
            mode,
            bridged: BTreeSet::new(),
        }
    }
}

struct Context<'a> {
    bot: &'a BotIdentity,
    groups: &'a Groups,
    now_ms: u64,
}

impl Context<'_> {
    fn envelope(&self, envelope: &Envelope) -> Step<Normalized> {
        if let Some(data) = &envelope.data_message {
            return self.data(envelope, data);
        }
        if let Some(sync) = &envelope.sync_message {
            return self.sync(envelope, sync);
        }
        if let Some(edit) = &envelope.edit_message {
            return self.edit(envelope, edit);
        }
        Err(if envelope.receipt_message.is_some() {
            "receipt"
        } else if envelope.typing_message.is_some() {
            "typing indicator"
        } else if envelope.call_message.is_some() {
            "call"
        } else if envelope.story_message.is_some() {
            "story"
        } else {
            "envelope without a message"
        })
    }

    /// A data message: a reaction, or a message with text (or something the
    /// core cannot read), each from its origin; the rest is skipped.
    fn data(&self, envelope: &Envelope, data: &DataMessage) -> Step<Normalized> {
        let origin = self.origin(envelope, data)?;
        self.content(&origin, data)
    }

    /// What a data message from `origin` carries.
    fn content(&self, origin: &Origin<'_>, data: &DataMessage) -> Step<Normalized> {
        if let Some(reaction) = &data.reaction {
            return self.reaction(origin, reaction);
        }
        if let Some(deletion) = &data.remote_delete {
            if !origin.bridged {
                return Err("remote deletion");
            }
            let target = message_id(deletion.timestamp, Some(origin.uuid)).ok_or("invalid message id")?;
            return self.changes(origin, InboundBody::Deleted { target });
        }
        if data.message.is_none() && data.group_info.as_ref().and_then(|info| info.kind.as_deref()) == Some("UPDATE") {
            return Err("group update");
        }
        self.message(origin, data)
    }

    /// A person's edit of their message in a bridged group, whose copies
    /// are changed to match; an edit anywhere else changes nothing.
    fn edit(&self, envelope: &Envelope, edit: &EditMessage) -> Step<Normalized> {
        let origin = self.origin(envelope, &edit.data_message)?;
        if !origin.bridged {
            return Err("edited message");
        }
        let mentions = edit.data_message.mentions.as_deref().unwrap_or_default();
        let text = self.render_mentions(edit.data_message.message.as_deref().unwrap_or_default(), mentions);
        if text.is_empty() {
            return Err("edit without text");
        }
        let target = message_id(edit.target_sent_timestamp, Some(origin.uuid)).ok_or("invalid message id")?;
        self.changes(&origin, InboundBody::Edited { target, text })
    }

    /// `body`, a change to the copies of a message in a bridged group: for
    /// the people on the other sides, never for the assistant.
    fn changes(&self, origin: &Origin<'_>, body: InboundBody) -> Step<Normalized> {
        let mut normalized = self.inbound(origin, None, body)?;
        if let Normalized::Inbound(inbound) = &mut normalized {
            inbound.overheard = true;
        }
        Ok(normalized)
    }

    /// Who sent a data message, when, and in which chat; the bot's own
    /// messages are skipped here.
    fn origin<'e>(&self, envelope: &'e Envelope, data: &'e DataMessage) -> Step<Origin<'e>> {
        let uuid = envelope
            .source_uuid
            .as_deref()
            .ok_or("envelope without a sender UUID")?;
        if self.bot.is(Some(uuid), envelope.source_number.as_deref()) {
            return Err("message from the bot's own account");
        }
        let timestamp = envelope
            .timestamp
            .or(data.timestamp)
            .ok_or("envelope without a timestamp")?;
        let group = (data.group_info.as_ref()).and_then(|info| info.group_id.as_deref());
        let chat = match group {
            Some(group_id) => format!("{GROUP_PREFIX}{group_id}"),
            None => uuid.to_owned(),
        };
        Ok(Origin {
            envelope,
            uuid,
            number: envelope.source_number.as_deref(),
            timestamp,
            chat,
            group,
            bridged: group.is_some_and(|group| self.groups.bridged.contains(group)),
            takes_everything: group.is_none() || self.groups.mode == GroupMode::All,
        })
    }

    /// A reaction; in a group that takes only what is addressed to the bot,
    /// only one on the bot's messages.
    fn reaction(&self, origin: &Origin<'_>, reaction: &Reaction) -> Step<Normalized> {
        let target = self.target(
            reaction.target_sent_timestamp,
            reaction.target_author_uuid.as_deref(),
            reaction.target_author_number.as_deref(),
            reaction.target_author.as_deref(),
        )?;
        let on_bot = !self.bot.note_to_self && parse(&target).is_some_and(|target| target.author.is_none());
        if !origin.takes_everything && !on_bot {
            return Err("group reaction not on a message of the bot");
        }
        self.inbound(
            origin,
            None,
            InboundBody::Reaction {
                emoji: reaction.emoji.clone(),
                target,
                removed: reaction.is_remove,
            },
        )
    }

    /// A message: its text with mentions rendered, the media it carries, or
    /// what the core cannot read; in a group that takes only what is addressed to
    /// the bot, only one that is.
    fn message(&self, origin: &Origin<'_>, data: &DataMessage) -> Step<Normalized> {
        let mentions = data.mentions.as_deref().unwrap_or_default();
        let command = data
            .message
            .as_deref()
            .is_some_and(|text| text.trim_start().starts_with('/'));
        let (mentioned, quoted) = self.addresses_bot(data, mentions);
        let addressed = match origin.bridged {
            // Whatever the mode: in a bridged group the rest is only relayed.
            true => mentioned || quoted || command,
            false => origin.takes_everything || mentioned || quoted,
        };
        // A link code said here is voided by the core, addressed or not.
        let names_a_code = (data.message.as_deref()).is_some_and(passepartout_gateway::names_a_link_code);
        if !addressed && !origin.bridged && !names_a_code {
            return Err("group message not addressed to the bot");
        }
        let reply_to = data
            .quote
            .as_ref()
            .map(|quote| {
                self.target(
                    quote.id,
                    quote.author_uuid.as_deref(),
                    quote.author_number.as_deref(),
                    quote.author.as_deref(),
                )
            })
            .transpose()?;
        let text = self.render_mentions(data.message.as_deref().unwrap_or_default(), mentions);
        let carried = Carried {
            attachments: data.attachments.as_deref(),
            sticker: data.sticker.as_ref(),
            contacts: data.contacts.as_deref(),
        };
        let source = match origin.group {
            Some(group) => Source::Group(group),
            None => Source::Person(origin.uuid),
        };
        let body = if let Some(body) = media::body(&carried, &text, &source) {
            body
        } else if data.payment.is_some() {
            InboundBody::Unsupported {
                what: "payment".to_owned(),
            }
        } else if text.is_empty() {
            return Err("empty message");
        } else {
            InboundBody::Text { text }
        };
        let mut normalized = self.inbound(origin, reply_to, body)?;
        if let Normalized::Inbound(inbound) = &mut normalized {
            inbound.overheard = !addressed;
            inbound.by_reply_only = origin.group.is_some() && quoted && !mentioned && !command;
        }
        Ok(normalized)
    }

    /// The contract's message from `origin` with `body`.
    fn inbound(&self, origin: &Origin<'_>, reply_to: Option<MessageId>, body: InboundBody) -> Step<Normalized> {
        let envelope = origin.envelope;
        Ok(Normalized::Inbound(Box::new(Inbound {
            conversation: conversation(origin.chat.clone())?,
            sender: Sender {
                id: UserId::new(origin.uuid).map_err(|_| "invalid sender UUID")?,
                aliases: number_alias(origin.number),
                display_name: envelope.source_name.as_deref().and_then(names::clean_name),
                username: None,
            },
            message_id: message_id(origin.timestamp, Some(origin.uuid)).ok_or("invalid message id")?,
            reply_to,
            body,
            received_at_ms: self.now_ms,
            overheard: false,
            by_reply_only: false,
            client: None,
        })))
    }

    /// The id of the message a quote or reaction points at: by the bot (no
    /// author in the id) or by someone, named by UUID if known.
    fn target(
        &self,
        timestamp: u64,
        uuid: Option<&str>,
        number: Option<&str>,
        author: Option<&str>,
    ) -> Step<MessageId> {
        let number = number.or(author);
        let author = if self.bot.is(uuid, number) {
            None
        } else {
            uuid.or(number)
        };
        message_id(timestamp, author).ok_or("invalid message id")
    }

    /// Whether a group message mentions the bot, and whether it quotes one
    /// of its messages. Never on a person's own account: there a mention, a
    /// quote or a reaction is addressed to the person, not the assistant
    /// (which takes group messages there only with `group_mode = "all"`).
    fn addresses_bot(&self, data: &DataMessage, mentions: &[Mention]) -> (bool, bool) {
        if self.bot.note_to_self {
            return (false, false);
        }
        let mentioned = mentions
            .iter()
            .any(|mention| self.bot.is(mention.uuid.as_deref(), mention.number.as_deref()));
        let quotes_bot = data.quote.as_ref().is_some_and(|quote| {
            self.bot.is(
                quote.author_uuid.as_deref(),
                quote.author_number.as_deref().or(quote.author.as_deref()),
            )
        });
        (mentioned, quotes_bot)
    }

    /// `text` with each mention's range (UTF-16 offsets) replaced: by nothing
    /// for the bot, by `@name` for others; then trimmed.
    fn render_mentions(&self, text: &str, mentions: &[Mention]) -> String {
        let mut mentions: Vec<&Mention> = mentions.iter().filter(|mention| mention.length > 0).collect();
        mentions.sort_by_key(|mention| mention.start);
        let mut mentions = mentions.into_iter().peekable();
        let mut out = String::with_capacity(text.len());
        let mut position = 0;
        let mut hidden_until = 0;
        for ch in text.chars() {
            // Mentions starting inside another one, or mid-character, are ignored.
            while mentions
                .next_if(|mention| mention.start < position.max(hidden_until))
                .is_some()
            {}
            if let Some(mention) = mentions.next_if(|mention| mention.start == position) {
                if !self.bot.is(mention.uuid.as_deref(), mention.number.as_deref()) {
                    out.push('@');
                    out.push_str(mention_name(mention));
                }
                hidden_until = position + mention.length;
            }
            if position >= hidden_until {
                out.push(ch);
            }
            position += ch.len_utf16();
        }
        out.trim().to_owned()
    }
}

fn mention_name(mention: &Mention) -> &str {
    [&mention.name, &mention.number, &mention.uuid]
        .into_iter()
        .find_map(|name| name.as_deref().filter(|name| !name.is_empty()))
        .unwrap_or("someone")
}

fn conversation(chat: String) -> Step<ConversationKey> {
    let gateway = GatewayId::new(GATEWAY_ID).map_err(|_| "invalid gateway id")?;
    let chat = ChatId::new(chat).map_err(|_| "invalid chat id")?;
    Ok(ConversationKey::new(gateway, chat))
}

/// The sender's number as an alias of their UUID, if signal-cli gave one.
fn number_alias(number: Option<&str>) -> Vec<UserId> {
    number
        .filter(|number| !number.is_empty())
        .and_then(|number| UserId::new(number).ok())
        .into_iter()
        .collect()
}

mod sync;

pub use sync::note_to_self_chat;

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "normalize_props.rs"]
mod props;
