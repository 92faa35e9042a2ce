//! One timeline event of a room, as the core reads a message: taken, or
//! skipped with the reason. It reads the event's JSON as the homeserver
//! (or, in an encrypted room, the decryption) gave it, so every kind can
//! be tested without a homeserver.
//!
//! Taken: text (`m.text`, `m.emote`), reactions (`m.reaction`), and media
//! (images, files, audio and voice messages, video) as attachments the
//! gateway fetches later, by their media source (encrypted or not); in a
//! bridged room, edits (`m.replace`) and redactions too; a location is
//! named as what the core cannot read. Skipped: the
//! assistant's own events, notices (other bots' messages: answering them
//! could loop), state and every other kind, and in a room that is no
//! direct chat, messages not addressed to the assistant (by mention, by
//! reply to one of its messages, or by a `/command`) unless the room is
//! bridged or its mode takes every message.

use passepartout_gateway::{
    Attachment, ChatId, ConversationKey, FileRef, GatewayId, GroupMode, Inbound, InboundBody, MediaKind, MessageId,
    Sender, UserId, unix_ms,
};
use serde_json::Value;

use crate::GATEWAY_ID;

/// What the normalizer needs to know of the room and the assistant.
pub struct Rules<'a> {
    /// The assistant's own user id.
    pub own_user: &'a str,
    /// Whether the room is a direct chat with one person.
    pub direct: bool,
    /// Which messages of a room that is no direct chat are taken.
    pub group_mode: GroupMode,
    /// Whether the room is joined to a bridge: what is not addressed to the
    /// assistant is still passed on, as overheard.
    pub bridged: bool,
    /// Whether an event id is one of the assistant's own messages.
    pub is_ours: &'a dyn Fn(&str) -> bool,
}

/// Why an event was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Skipped(pub &'static str);

/// The event `event` of room `room`, as the core reads it.
pub fn normalize(room: &str, event: &Value, rules: &Rules<'_>) -> Result<Inbound, Skipped> {
    let sender = event["sender"].as_str().ok_or(Skipped("no sender"))?;
    if sender == rules.own_user {
        return Err(Skipped("the assistant's own event"));
    }
    let event_id = event["event_id"].as_str().ok_or(Skipped("no event id"))?;
    if event.get("state_key").is_some() {
        return Err(Skipped("a state event"));
    }
    let content = &event["content"];
    let relates = &content["m.relates_to"];
    let reply_to = relates["m.in_reply_to"]["event_id"].as_str();
    let (body, addressed) = match event["type"].as_str() {
        Some("m.room.message") => message(content, rules)?,
        Some("m.reaction") => {
            let emoji = relates["key"].as_str().ok_or(Skipped("a reaction without its key"))?;
            let target = relates["event_id"]
                .as_str()
                .ok_or(Skipped("a reaction without its target"))?;
            let body = InboundBody::Reaction {
                emoji: emoji.to_owned(),
                target: message_id(target)?,
                removed: false,
            };
            // A reaction answers a prompt of the assistant's only.
            (body, (rules.is_ours)(target))
        }
        Some("m.room.redaction") if rules.bridged => {
            let target = (event["redacts"].as_str())
                .or(content["redacts"].as_str())
                .ok_or(Skipped("a redaction without its target"))?;
            (
                InboundBody::Deleted {
                    target: message_id(target)?,
                },
                false,
            )
        }
        Some("m.room.encrypted") => return Err(Skipped("an event that could not be decrypted")),
        _ => return Err(Skipped("not a message")),
    };
    let by_reply = reply_to.is_some_and(|id| (rules.is_ours)(id));
    let addressed = addressed || by_reply;
    let room_takes_all = rules.direct || rules.group_mode == GroupMode::All;
    if !addressed && !room_takes_all && !rules.bridged {
        return Err(Skipped("not addressed to the assistant"));
    }
    Ok(Inbound {
        conversation: ConversationKey::new(gateway(), ChatId::new(room).map_err(|_| Skipped("a bad room id"))?),
        sender: Sender::new(UserId::new(sender).map_err(|_| Skipped("a bad sender"))?),
        message_id: message_id(event_id)?,
        reply_to: reply_to.map(message_id).transpose()?,
        body,
        received_at_ms: unix_ms(),
        overheard: !addressed && !room_takes_all,
        by_reply_only: by_reply && !addressed_otherwise(content, rules),
        client: None,
    })
}

/// An `m.room.message`'s body, and whether it addresses the assistant.
fn message(content: &Value, rules: &Rules<'_>) -> Result<(InboundBody, bool), Skipped> {
    let relates = &content["m.relates_to"];
    if relates["rel_type"] == "m.replace" {
        if !rules.bridged {
            return Err(Skipped("an edit, outside a bridge"));
        }
        let target = relates["event_id"]
            .as_str()
            .ok_or(Skipped("an edit without its target"))?;
        let text = content["m.new_content"]["body"].as_str().unwrap_or_default();
        return Ok((
            InboundBody::Edited {
                target: message_id(target)?,
                text: text.to_owned(),
            },
            false,
        ));
    }
    let text = strip_reply_fallback(content["body"].as_str().unwrap_or_default());
    let body = match content["msgtype"].as_str() {
        Some("m.text") => InboundBody::Text { text: text.clone() },
        Some("m.emote") => InboundBody::Text {
            text: format!("* {text}"),
        },
        Some("m.notice") => return Err(Skipped("a notice (a bot's message)")),
        Some("m.image") => media(content, MediaKind::Photo)?,
        Some("m.audio") if content.get("org.matrix.msc3245.voice").is_some() => media(content, MediaKind::Voice)?,
        Some("m.audio") => media(content, MediaKind::Audio)?,
        Some("m.video") => media(content, MediaKind::Video)?,
        Some("m.file") => media(content, MediaKind::Document)?,
        Some("m.location") => unsupported("a location"),
        _ => unsupported("a message of a kind it cannot read"),
    };
    let command = text.starts_with('/');
    Ok((body, command || addressed_otherwise(content, rules)))
}

/// Whether `content` mentions the assistant: in `m.mentions`, or by its
/// user id in the text or a link to it.
fn addressed_otherwise(content: &Value, rules: &Rules<'_>) -> bool {
    let listed = content["m.mentions"]["user_ids"]
        .as_array()
        .is_some_and(|ids| ids.iter().any(|id| id == rules.own_user));
    let named = |key: &str| content[key].as_str().is_some_and(|text| text.contains(rules.own_user));
    listed || named("body") || named("formatted_body")
}

/// A media message's attachment, and its caption: the body, when the
/// event names the file apart (otherwise the body is the file's name).
fn media(content: &Value, kind: MediaKind) -> Result<InboundBody, Skipped> {
    let source = match (&content["file"], &content["url"]) {
        (file @ Value::Object(_), _) => serde_json::json!({ "file": file }),
        (_, url @ Value::String(_)) => serde_json::json!({ "url": url }),
        _ => return Err(Skipped("media without its source")),
    };
    let info = &content["info"];
    let body = content["body"].as_str().filter(|body| !body.is_empty());
    let filename = content["filename"].as_str().filter(|name| !name.is_empty());
    let caption = filename.and(body).filter(|body| Some(*body) != filename);
    let attachment = Attachment {
        kind,
        file: FileRef(source.to_string()),
        mime: info["mimetype"].as_str().map(str::to_owned),
        size: info["size"].as_u64(),
        name: filename.or(body).map(str::to_owned),
        duration_s: info["duration"]
            .as_u64()
            .map(|ms| u32::try_from(ms / 1000).unwrap_or(u32::MAX)),
    };
    Ok(InboundBody::Media {
        attachments: vec![attachment],
        caption: caption.map(str::to_owned),
    })
}

/// The root of the thread `event` is in, if it is in one.
pub fn thread_root(event: &Value) -> Option<&str> {
    let relates = &event["content"]["m.relates_to"];
    (relates["rel_type"] == "m.thread")
        .then(|| relates["event_id"].as_str())
        .flatten()
}

fn unsupported(what: &str) -> InboundBody {
    InboundBody::Unsupported { what: what.to_owned() }
}

/// A reply's body without the quoted lines older clients put before it.
fn strip_reply_fallback(body: &str) -> String {
    if !body.starts_with("> <") {
        return body.to_owned();
    }
    let mut lines = body.lines().skip_while(|line| line.starts_with('>'));
    if lines.clone().next() == Some("") {
        lines.next();
    }
    lines.collect::<Vec<_>>().join("\n")
}

fn message_id(id: &str) -> Result<MessageId, Skipped> {
    MessageId::new(id).map_err(|_| Skipped("a bad event id"))
}

/// The gateway's id.
pub fn gateway() -> GatewayId {
    GatewayId::new(GATEWAY_ID).expect("Matrix's gateway id is valid")
}

#[cfg(test)]
#[path = "normalize_tests.rs"]
mod tests;
