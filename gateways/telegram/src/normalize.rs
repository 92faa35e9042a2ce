//! Turning a Bot API update into the contract's [`Inbound`], or a reason to skip it.
//!
//! This is the one place that reads teloxide's update types; everything after
//! it sees only the contract. The mapping:
//!
//! - a message in a private chat: text → [`InboundBody::Text`]; a voice note,
//!   audio, photo, document or video → [`InboundBody::Media`] with its caption;
//!   a sticker, location or contact → a line of text; anything else (a poll, a
//!   game, …) → [`InboundBody::Unsupported`] naming it (see [`crate::media`]);
//! - a message in a group or supergroup: the same, but under
//!   [`GroupMode::MentionOrReply`] only when it mentions `@bot_username` or
//!   replies to one of the bot's messages (the mention is removed from the
//!   text or caption), or names a link code (passed on overheard, for the
//!   core to void the code); in a bridged group, every person's message, marked
//!   [`Inbound::overheard`] unless it mentions the bot, replies to it or is
//!   a command, whatever the group mode;
//! - a button press (callback query) → [`InboundBody::Button`], with the
//!   query's id, prefixed `callback:`, as message id (unique, and stable when
//!   Telegram redelivers the update; never mistaken for a message to quote)
//!   and the message carrying the button as `reply_to`;
//! - a reaction by a person → [`InboundBody::Reaction`];
//! - a person's edit in a bridged group → [`InboundBody::Edited`];
//! - anything else (edits elsewhere, channel posts, service messages,
//!   inline queries, …) → [`Normalized::Skip`] with a reason for the log.

use std::collections::BTreeSet;
use std::ops::Range;

use passepartout_gateway::{
    ChatId, ConversationKey, GatewayId, Inbound, InboundBody, MessageId, Sender, UserId, names,
};

use teloxide::types::{
    CallbackQuery, MaybeAnonymousUser, MediaKind, Message, MessageEntity, MessageEntityKind, MessageKind,
    MessageReactionUpdated, ReactionType, Update, UpdateKind, User,
};

use crate::{GATEWAY_ID, media};

/// How a button press's message id starts: the callback query's id follows.
pub const CALLBACK_PREFIX: &str = "callback:";

pub use passepartout_gateway::{GroupMode, Normalized};

/// Converts one update. `bot_username` is the bot's own username, without `@`;
/// `bridged` are the groups joined to others (`[[bridges]]`); of a photo's
/// sizes the largest declaring at most `photo_max_bytes` is taken; `now_ms`
/// becomes `received_at_ms`.
pub fn normalize(
    update: &Update,
    bot_username: &str,
    group_mode: GroupMode,
    bridged: &BTreeSet<i64>,
    photo_max_bytes: u64,
    now_ms: u64,
) -> Normalized {
    let ctx = Context {
        bot_username: bot_username.trim_start_matches('@'),
        group_mode,
        bridged,
        photo_max_bytes,
        now_ms,
    };
    let normalized = match &update.kind {
        UpdateKind::Message(message) => ctx.message(message),
        UpdateKind::CallbackQuery(query) => ctx.callback(query),
        UpdateKind::MessageReaction(reaction) => ctx.reaction(reaction, update.id.0),
        UpdateKind::EditedMessage(message) => ctx.edited(message, update.id.0),
        UpdateKind::ChannelPost(_) | UpdateKind::EditedChannelPost(_) => Err("channel post"),
        UpdateKind::BusinessMessage(_) | UpdateKind::EditedBusinessMessage(_) => Err("business message"),
        UpdateKind::Error(_) => Err("update teloxide could not parse"),
        _ => Err("update kind not handled"),
    };
    normalized.unwrap_or_else(Normalized::skip)
}

/// Whether `text` is a slash command (`/status`, `/status@bot`).
fn is_command(text: Option<&str>) -> bool {
    text.is_some_and(|text| text.trim_start().starts_with('/'))
}

/// Why an update was skipped; turned into [`Normalized::Skip`] at the top.
type Step<T> = Result<T, &'static str>;

struct Context<'a> {
    bot_username: &'a str,
    group_mode: GroupMode,
    bridged: &'a BTreeSet<i64>,
    photo_max_bytes: u64,
    now_ms: u64,
}

impl Context<'_> {
    fn message(&self, message: &Message) -> Step<Normalized> {
        let chat = &message.chat;
        if chat.is_channel() {
            return Err("channel post");
        }
        let common = match &message.kind {
            MessageKind::Common(common) => common,
            MessageKind::Empty {} => return Err("message teloxide could not classify"),
            _ => return Err("service message"),
        };
        let from = message.from.as_ref().ok_or("message without a sender")?;
        if from.is_bot {
            return Err("message from a bot");
        }
        let in_group = chat.is_group() || chat.is_supergroup();
        // In a bridged group the assistant answers only when addressed,
        // whatever the mode; the rest is only relayed.
        let bridged = in_group && self.bridged.contains(&chat.id.0);
        let (mentioned, replied) = (self.mentions_bot(message), self.replies_to_bot(message));
        let command = is_command(message.text());
        let addressed = !in_group
            || (self.group_mode == GroupMode::All && !bridged)
            || mentioned
            || replied
            || (bridged && command);
        // A link code said here is voided by the core, addressed or not.
        let names_a_code = message.text().is_some_and(passepartout_gateway::names_a_link_code);
        if !addressed && !bridged && !names_a_code {
            return Err("group message not addressed to the bot");
        }
        let body = match &common.media_kind {
            MediaKind::Text(_) => {
                let text = self.without_mentions(message.text(), message.entities());
                if text.trim().is_empty() {
                    return Err("empty text");
                }
                InboundBody::Text { text }
            }
            MediaKind::Migration(_) => return Err("chat migration"),
            other => {
                let caption = self.without_mentions(message.caption(), message.caption_entities());
                let caption = (!caption.is_empty()).then_some(caption);
                media::body(other, caption, self.photo_max_bytes)
            }
        };
        Ok(Normalized::Inbound(Box::new(Inbound {
            conversation: conversation(message.chat.id.0)?,
            sender: sender(from)?,
            message_id: message_id(message.id.0)?,
            reply_to: message.reply_to_message().map(|m| message_id(m.id.0)).transpose()?,
            body,
            received_at_ms: self.now_ms,
            overheard: !addressed,
            by_reply_only: in_group && replied && !mentioned && !command,
            client: None,
        })))
    }

    /// A person's edit of their message in a bridged group, whose copies
    /// are changed to match; an edit anywhere else changes nothing. Its id
    /// is its update's, so that a second edit of one message (in the same
    /// second, even) is not taken for the first one again, while the same
    /// update offered twice is.
    fn edited(&self, message: &Message, update_id: u32) -> Step<Normalized> {
        let chat = &message.chat;
        if !self.bridged.contains(&chat.id.0) {
            return Err("edited message");
        }
        let from = message.from.as_ref().ok_or("edit without a sender")?;
        if from.is_bot {
            return Err("edit by a bot");
        }
        let text = message
            .text()
            .or(message.caption())
            .ok_or("edit of a message without text")?;
        let id = MessageId::new(format!("edit-{update_id}")).map_err(|_| "invalid edit id")?;
        Ok(Normalized::Inbound(Box::new(Inbound {
            conversation: conversation(chat.id.0)?,
            sender: sender(from)?,
            message_id: id,
            reply_to: None,
            body: InboundBody::Edited {
                target: message_id(message.id.0)?,
                text: text.to_owned(),
            },
            received_at_ms: self.now_ms,
            overheard: true,
            by_reply_only: false,
            client: None,
        })))
    }

    fn callback(&self, query: &CallbackQuery) -> Step<Normalized> {
        let data = query.data.as_ref().ok_or("callback query without data")?;
        let message = query.message.as_ref().ok_or("callback query on an inline message")?;
        Ok(Normalized::Inbound(Box::new(Inbound {
            conversation: conversation(message.chat().id.0)?,
            sender: sender(&query.from)?,
            // Not a message id: marked so that nothing ever quotes it as one.
            message_id: MessageId::new(format!("{CALLBACK_PREFIX}{}", query.id.0))
                .map_err(|_| "invalid callback query id")?,
            reply_to: Some(message_id(message.id().0)?),
            body: InboundBody::Button { data: data.clone() },
            received_at_ms: self.now_ms,
            overheard: false,
            by_reply_only: false,
            client: None,
        })))
    }

    fn reaction(&self, reaction: &MessageReactionUpdated, update_id: u32) -> Step<Normalized> {
        let MaybeAnonymousUser::User(user) = &reaction.actor else {
            return Err("anonymous reaction");
        };
        let added = emoji_not_in(&reaction.new_reaction, &reaction.old_reaction);
        let removed = emoji_not_in(&reaction.old_reaction, &reaction.new_reaction);
        let (emoji, removed) = match (added, removed) {
            (Some(emoji), _) => (emoji, false),
            (None, Some(emoji)) => (emoji, true),
            (None, None) => return Err("reaction without an emoji change"),
        };
        Ok(Normalized::Inbound(Box::new(Inbound {
            conversation: conversation(reaction.chat.id.0)?,
            sender: sender(user)?,
            // A reaction has no message id of its own; the update id is unique
            // per bot and the same when Telegram delivers the update again.
            message_id: MessageId::new(format!("reaction-{update_id}")).map_err(|_| "invalid update id")?,
            reply_to: None,
            body: InboundBody::Reaction {
                emoji: emoji.to_owned(),
                target: message_id(reaction.message_id.0)?,
                removed,
            },
            received_at_ms: self.now_ms,
            overheard: false,
            by_reply_only: false,
            client: None,
        })))
    }

    /// Whether a message mentions `@bot_username`, in its text or caption.
    fn mentions_bot(&self, message: &Message) -> bool {
        [
            (message.text(), message.entities()),
            (message.caption(), message.caption_entities()),
        ]
        .into_iter()
        .any(|(text, entities)| !self.bot_mentions(text, entities).is_empty())
    }

    /// Whether a message replies to one of the bot's.
    fn replies_to_bot(&self, message: &Message) -> bool {
        message
            .reply_to_message()
            .and_then(|replied| replied.from.as_ref())
            .is_some_and(|author| author.is_bot && self.is_bot_name(author.username.as_deref()))
    }

    fn is_bot_name(&self, name: Option<&str>) -> bool {
        name.is_some_and(|name| !self.bot_username.is_empty() && name.eq_ignore_ascii_case(self.bot_username))
    }

    /// Where `text` mentions the bot, by `entities`: byte ranges in order,
    /// none overlapping. An entity whose offsets do not fall on characters of
    /// `text` is ignored; teloxide's own entity parsing would panic on it.
    fn bot_mentions(&self, text: Option<&str>, entities: Option<&[MessageEntity]>) -> Vec<Range<usize>> {
        let (Some(text), Some(entities)) = (text, entities) else {
            return Vec::new();
        };
        let mut ranges: Vec<Range<usize>> = entities
            .iter()
            .filter(|entity| matches!(entity.kind, MessageEntityKind::Mention))
            .filter_map(|entity| utf16_range(text, entity.offset, entity.length))
            .filter(|range| self.is_bot_name(text[range.clone()].strip_prefix('@')))
            .collect();
        ranges.sort_by_key(|range| range.start);
        let mut end = 0;
        ranges.retain(|range| {
            let apart = range.start >= end;
            if apart {
                end = range.end;
            }
            apart
        });
        ranges
    }

    /// A message's text or caption with every mention of the bot (among
    /// `entities`) removed and the surrounding whitespace trimmed.
    fn without_mentions(&self, text: Option<&str>, entities: Option<&[MessageEntity]>) -> String {
        let Some(text) = text else {
            return String::new();
        };
        let mut out = String::with_capacity(text.len());
        let mut from = 0;
        for range in self.bot_mentions(Some(text), entities) {
            out.push_str(&text[from..range.start]);
            from = range.end;
        }
        out.push_str(&text[from..]);
        // Removing a leading mention leaves "  rest": collapse that edge.
        out.trim().to_owned()
    }
}

/// The bytes of `text` that `length` UTF-16 units from `offset` cover (how
/// Telegram counts), if both ends fall between characters of `text`.
fn utf16_range(text: &str, offset: usize, length: usize) -> Option<Range<usize>> {
    let end = offset.checked_add(length)?;
    let mut start_byte = None;
    let mut units = 0;
    for (byte, ch) in text.char_indices().chain(std::iter::once((text.len(), '\0'))) {
        if units == offset {
            start_byte = Some(byte);
        }
        if units == end {
            return start_byte.map(|start| start..byte);
        }
        if units > end {
            return None;
        }
        units += ch.len_utf16();
    }
    None
}

fn conversation(chat_id: i64) -> Step<ConversationKey> {
    let gateway = GatewayId::new(GATEWAY_ID).map_err(|_| "invalid gateway id")?;
    let chat = ChatId::new(chat_id.to_string()).map_err(|_| "invalid chat id")?;
    Ok(ConversationKey::new(gateway, chat))
}

fn sender(user: &User) -> Step<Sender> {
    Ok(Sender {
        id: UserId::new(user.id.0.to_string()).map_err(|_| "invalid user id")?,
        aliases: Vec::new(),
        display_name: names::clean_name(&user.full_name()),
        username: user.username.as_deref().and_then(names::clean_username),
    })
}

fn message_id(id: i32) -> Step<MessageId> {
    MessageId::new(id.to_string()).map_err(|_| "invalid message id")
}

/// The first plain emoji in `these` that is not in `those`.
fn emoji_not_in<'a>(these: &'a [ReactionType], those: &[ReactionType]) -> Option<&'a str> {
    these.iter().filter(|r| !those.contains(r)).find_map(|r| match r {
        ReactionType::Emoji { emoji } => Some(emoji.as_str()),
        _ => None,
    })
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "normalize_props.rs"]
mod props;
