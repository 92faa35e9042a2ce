//! Media that comes with an inbound message: what it is, and a reference the
//! gateway can fetch it by later.
//!
//! A gateway does not download a voice note or a photo before the message is
//! journaled: it hands in an [`Attachment`] that names the file on the
//! platform ([`FileRef`]), and the core fetches the bytes when it reads the
//! message, through [`Fetch`](crate::Fetch). A message whose media could not
//! be fetched (a dead backend, a file too large) therefore stays journaled,
//! and the person is told, instead of the message being lost at the door.

use serde::{Deserialize, Serialize};

/// What kind of media an attachment is, as the platform labels it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MediaKind {
    /// A voice note recorded in the messenger (Telegram `voice`, a Signal
    /// attachment flagged as a voice note).
    Voice,
    /// An audio file (Telegram `audio`, a Signal `audio/*` attachment).
    Audio,
    /// A still image (Telegram `photo`, a Signal `image/*` attachment).
    Photo,
    /// A video or an animation.
    Video,
    /// Any other file sent as a document.
    Document,
}

impl MediaKind {
    /// The kind in a person's words: "voice note", "photo", ….
    pub fn noun(self) -> &'static str {
        match self {
            Self::Voice => "voice note",
            Self::Audio => "audio file",
            Self::Photo => "photo",
            Self::Video => "video",
            Self::Document => "file",
        }
    }
}

/// The platform's handle for a file: a Telegram `file_id`, a signal-cli
/// attachment id. Opaque to the core; only the gateway that made it reads it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct FileRef(pub String);

/// One file that came with an inbound message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attachment {
    /// What kind of file it is (a voice note, a photo).
    pub kind: MediaKind,
    /// How the gateway fetches the bytes.
    pub file: FileRef,
    /// The MIME type the platform declared, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime: Option<String>,
    /// The size the platform declared, in bytes, if any: lets the core refuse
    /// an oversized file before fetching it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The file name the sender gave, if any (untrusted: never a path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The length of a voice note, audio or video, in seconds, if declared.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_s: Option<u32>,
}

/// The bytes of a fetched attachment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fetched {
    /// The file's contents.
    pub bytes: Vec<u8>,
    /// The MIME type the download declared, when the attachment had none.
    pub mime: Option<String>,
}
