//! What a Signal message that carries more than text becomes for the core,
//! and the reference by which its files are fetched.
//!
//! Attachments (signal-cli's `contentType`, `filename`, `id`, `size`) become
//! [`InboundBody::Media`], the message's text as the caption. Their kind comes
//! from the content type: `image/*` a photo, `video/*` a video, `audio/*` a
//! voice note when it has no file name (how the Signal apps send recordings;
//! signal-cli's JSON does not carry the voice-note flag, so one given as
//! `voiceNote` is taken too) and an audio file otherwise; anything else a
//! document. signal-cli downloads attachments as they arrive and hands them
//! out by `getAttachment`, which wants the attachment's `id` and the sender
//! (`recipient`) or the group (`groupId`): a [`SignalFile`] holds all three
//! and the declared size, as the [`FileRef`]'s text. A message longer than
//! Signal's 2,000 bytes comes as its start and an attachment of type
//! [`LONG_TEXT_MIME`] holding all of it: a document named [`LONG_TEXT_NAME`],
//! so that the whole text can be read.
//!
//! A sticker becomes "[sticker]" (signal-cli names only its pack; an `emoji`
//! is shown when given), a shared contact "[contact Name, +number]". Each
//! item is read on its own: one in a shape signal-cli is not known to send is
//! left out, and a message left with nothing readable is named unsupported.

use passepartout_gateway::{Attachment, FileRef, InboundBody, MediaKind, readable};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The content type of a long message's whole text.
pub const LONG_TEXT_MIME: &str = "text/x-signal-plain";
/// The name given to a long message's whole text.
pub const LONG_TEXT_NAME: &str = "message.txt";

/// How a message's files are fetched: the attachment, and the chat it came in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignalFile {
    /// signal-cli's id of the attachment (its file name in the attachments folder).
    pub id: String,
    /// The sender of a one-to-one message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    /// The group a group message came in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group_id: Option<String>,
    /// The size signal-cli declared, in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

impl SignalFile {
    /// The reference the core keeps.
    pub fn to_ref(&self) -> FileRef {
        FileRef(serde_json::to_string(self).expect("a SignalFile serializes"))
    }

    /// The file `file` names, if this gateway made it.
    pub fn from_ref(file: &FileRef) -> Option<Self> {
        serde_json::from_str::<Self>(&file.0)
            .ok()
            .filter(|file| !file.id.is_empty() && (file.recipient.is_some() != file.group_id.is_some()))
    }

    /// `getAttachment`'s parameters.
    pub fn params(&self) -> Value {
        let mut params = serde_json::json!({ "id": self.id });
        if let Some(recipient) = &self.recipient {
            params["recipient"] = Value::from(recipient.as_str());
        }
        if let Some(group) = &self.group_id {
            params["groupId"] = Value::from(group.as_str());
        }
        params
    }
}

/// Where a message came from, as `getAttachment` names it.
pub(crate) enum Source<'a> {
    Person(&'a str),
    Group(&'a str),
}

/// The parts of a data message this module reads, each as signal-cli sent it.
pub(crate) struct Carried<'a> {
    pub attachments: Option<&'a [Value]>,
    pub sticker: Option<&'a Value>,
    pub contacts: Option<&'a [Value]>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct AttachmentJson {
    content_type: Option<String>,
    filename: Option<String>,
    id: Option<String>,
    size: Option<u64>,
    #[serde(alias = "isVoiceNote")]
    voice_note: Option<bool>,
    caption: Option<String>,
}

#[derive(Deserialize)]
struct StickerJson {
    emoji: Option<String>,
}

#[derive(Deserialize)]
struct ContactJson {
    name: Option<NameJson>,
    phone: Option<Vec<PhoneJson>>,
}

#[derive(Deserialize)]
struct NameJson {
    #[serde(alias = "display")]
    nickname: Option<String>,
    given: Option<String>,
    middle: Option<String>,
    family: Option<String>,
}

#[derive(Deserialize)]
struct PhoneJson {
    value: Option<String>,
}

/// What a message carrying `carried` (and `text`, its rendered text) becomes,
/// or `None` when it carries nothing but text.
pub(crate) fn body(carried: &Carried<'_>, text: &str, source: &Source<'_>) -> Option<InboundBody> {
    if let Some(items) = carried.attachments.filter(|items| !items.is_empty()) {
        let listed: Vec<AttachmentJson> = items.iter().filter_map(read).collect();
        let attachments: Vec<Attachment> = listed.iter().filter_map(|item| attachment(item, source)).collect();
        if attachments.is_empty() {
            return Some(unsupported("attachment"));
        }
        let caption = Some(text.to_owned()).filter(|text| !text.is_empty()).or_else(|| {
            listed
                .iter()
                .find_map(|item| item.caption.clone().filter(|c| !c.trim().is_empty()))
        });
        return Some(InboundBody::Media { attachments, caption });
    }
    if let Some(sticker) = carried.sticker {
        let emoji = read::<StickerJson>(sticker).and_then(|sticker| sticker.emoji);
        return Some(InboundBody::Text {
            text: readable::sticker(emoji.as_deref().map(str::trim)),
        });
    }
    if let Some(contacts) = carried.contacts.filter(|items| !items.is_empty()) {
        let lines: Vec<String> = contacts.iter().filter_map(read).map(|c| contact_line(&c)).collect();
        return Some(if lines.is_empty() {
            unsupported("contact")
        } else {
            InboundBody::Text { text: lines.join("\n") }
        });
    }
    None
}

fn read<T: serde::de::DeserializeOwned>(value: &Value) -> Option<T> {
    T::deserialize(value).ok()
}

fn unsupported(what: &str) -> InboundBody {
    InboundBody::Unsupported { what: what.to_owned() }
}

/// One attachment, if signal-cli named it by an id (it names none for a file
/// it did not download).
fn attachment(item: &AttachmentJson, source: &Source<'_>) -> Option<Attachment> {
    let id = item.id.clone().filter(|id| !id.is_empty())?;
    let (recipient, group_id) = match source {
        Source::Person(person) => (Some((*person).to_owned()), None),
        Source::Group(group) => (None, Some((*group).to_owned())),
    };
    let file = SignalFile {
        id,
        recipient,
        group_id,
        size: item.size,
    };
    let mime = item.content_type.clone().filter(|mime| !mime.is_empty());
    let name = item
        .filename
        .clone()
        .filter(|name| !name.is_empty())
        .or_else(|| (mime.as_deref() == Some(LONG_TEXT_MIME)).then(|| LONG_TEXT_NAME.to_owned()));
    Some(Attachment {
        kind: kind(mime.as_deref(), name.is_some(), item.voice_note == Some(true)),
        file: file.to_ref(),
        mime,
        size: item.size,
        name,
        duration_s: None,
    })
}

/// The kind of an attachment of type `mime`.
fn kind(mime: Option<&str>, named: bool, voice_note: bool) -> MediaKind {
    if voice_note {
        return MediaKind::Voice;
    }
    let top = mime
        .and_then(|mime| mime.split('/').next())
        .unwrap_or_default()
        .to_ascii_lowercase();
    match top.as_str() {
        "audio" if !named => MediaKind::Voice,
        "audio" => MediaKind::Audio,
        "image" => MediaKind::Photo,
        "video" => MediaKind::Video,
        _ => MediaKind::Document,
    }
}

/// "[contact Ada Lovelace, +44 20 7946 0000]".
fn contact_line(contact: &ContactJson) -> String {
    let name = contact.name.as_ref().map(|name| {
        let full = [&name.given, &name.middle, &name.family]
            .into_iter()
            .flatten()
            .map(|part| part.trim())
            .filter(|part| !part.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        if full.is_empty() {
            name.nickname.as_deref().unwrap_or_default().trim().to_owned()
        } else {
            full
        }
    });
    let phone = (contact.phone.iter().flatten())
        .find_map(|phone| phone.value.as_deref().map(str::trim).filter(|value| !value.is_empty()));
    readable::contact([name.as_deref(), phone].into_iter().flatten())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_reference_round_trips_and_a_foreign_one_is_refused() {
        let file = SignalFile {
            id: "abc.jpg".into(),
            recipient: None,
            group_id: Some("Z3JvdXA=".into()),
            size: Some(7),
        };
        assert_eq!(SignalFile::from_ref(&file.to_ref()), Some(file.clone()));
        assert_eq!(
            file.params(),
            serde_json::json!({ "id": "abc.jpg", "groupId": "Z3JvdXA=" })
        );
        for foreign in [
            "AgACfile",
            "{}",
            r#"{"id":"x"}"#,
            r#"{"id":"x","recipient":"a","groupId":"g"}"#,
        ] {
            assert_eq!(SignalFile::from_ref(&FileRef(foreign.into())), None, "{foreign}");
        }
    }

    #[test]
    fn kinds_come_from_the_content_type() {
        assert_eq!(kind(Some("audio/aac"), false, false), MediaKind::Voice);
        assert_eq!(kind(Some("audio/mpeg"), true, false), MediaKind::Audio);
        assert_eq!(kind(Some("audio/mpeg"), true, true), MediaKind::Voice);
        assert_eq!(kind(Some("IMAGE/png"), true, false), MediaKind::Photo);
        assert_eq!(kind(Some("video/mp4"), false, false), MediaKind::Video);
        assert_eq!(kind(Some("application/pdf"), true, false), MediaKind::Document);
        assert_eq!(kind(None, false, false), MediaKind::Document);
    }
}
