//! What a Telegram message that is not plain text becomes for the core.
//!
//! Voice notes, audio, photos, documents, videos, animations and video notes
//! become [`InboundBody::Media`]: one [`Attachment`] naming the file by its
//! `file_id` (fetched later, after the message is journaled, through
//! [`Fetch`](passepartout_gateway::Fetch)), with the caption. Of a photo's
//! sizes the largest whose declared `file_size` fits under the cap is chosen;
//! when none fits, the smallest, whose size then tells the core it is too large.
//!
//! Stickers, locations, venues and contacts carry no file worth fetching: they
//! become a line of text the model can read ("[sticker 😀]", "[location 52.52,
//! 13.40]", "[contact Ada Lovelace, +44 20 7946 0000]"). Everything else (polls,
//! games, stories, …) stays [`InboundBody::Unsupported`], named.

use passepartout_gateway::{Attachment, FileRef, InboundBody, MediaKind as Kind, readable};
use teloxide::types::{Contact, FileMeta, Location, MediaKind, PhotoSize, Seconds, Venue};

/// Telegram photos are always re-encoded as JPEG.
const PHOTO_MIME: &str = "image/jpeg";
/// What Telegram sends animations (GIFs) and video notes as.
const MP4_MIME: &str = "video/mp4";

/// What `media` (anything but text) becomes, with `caption` (already without
/// the bot's mentions; `None` when empty). A photo's size is the largest that
/// declares at most `photo_max_bytes`.
pub(crate) fn body(media: &MediaKind, caption: Option<String>, photo_max_bytes: u64) -> InboundBody {
    let attachment = match media {
        MediaKind::Voice(voice) => Attachment {
            mime: voice.voice.mime_type.as_ref().map(ToString::to_string),
            duration_s: seconds(voice.voice.duration),
            ..attachment(Kind::Voice, &voice.voice.file)
        },
        MediaKind::Audio(audio) => Attachment {
            mime: audio.audio.mime_type.as_ref().map(ToString::to_string),
            name: audio.audio.file_name.clone(),
            duration_s: seconds(audio.audio.duration),
            ..attachment(Kind::Audio, &audio.audio.file)
        },
        MediaKind::Photo(photo) => match choose_photo(&photo.photo, photo_max_bytes) {
            Some(size) => Attachment {
                mime: Some(PHOTO_MIME.to_owned()),
                ..attachment(Kind::Photo, &size.file)
            },
            None => return unsupported("photo without a size"),
        },
        MediaKind::Document(document) => Attachment {
            mime: document.document.mime_type.as_ref().map(ToString::to_string),
            name: document.document.file_name.clone(),
            ..attachment(Kind::Document, &document.document.file)
        },
        MediaKind::Video(video) => Attachment {
            mime: video.video.mime_type.as_ref().map(ToString::to_string),
            name: video.video.file_name.clone(),
            duration_s: seconds(video.video.duration),
            ..attachment(Kind::Video, &video.video.file)
        },
        MediaKind::Animation(animation) => Attachment {
            mime: Some(
                (animation.animation.mime_type.as_ref()).map_or_else(|| MP4_MIME.to_owned(), ToString::to_string),
            ),
            name: animation.animation.file_name.clone(),
            duration_s: seconds(animation.animation.duration),
            ..attachment(Kind::Video, &animation.animation.file)
        },
        MediaKind::VideoNote(note) => Attachment {
            mime: Some(MP4_MIME.to_owned()),
            duration_s: seconds(note.video_note.duration),
            ..attachment(Kind::Video, &note.video_note.file)
        },
        MediaKind::Sticker(sticker) => {
            return text(readable::sticker(sticker.sticker.emoji.as_deref()));
        }
        MediaKind::Location(location) => return text(format!("[location {}]", place(&location.location))),
        MediaKind::Venue(venue) => return text(venue_line(&venue.venue)),
        MediaKind::Contact(contact) => return text(contact_line(&contact.contact)),
        other => return unsupported(name(other)),
    };
    InboundBody::Media {
        attachments: vec![attachment],
        caption,
    }
}

/// An attachment of `kind` for `file`, with its declared size; the rest unset.
fn attachment(kind: Kind, file: &FileMeta) -> Attachment {
    Attachment {
        kind,
        file: FileRef(file.id.0.clone()),
        mime: None,
        size: declared_size(file),
        name: None,
        duration_s: None,
    }
}

/// The size a file declares. teloxide reads a missing `file_size` as
/// `u32::MAX`: that is no size at all.
pub(crate) fn declared_size(file: &FileMeta) -> Option<u64> {
    (file.size != u32::MAX).then_some(u64::from(file.size))
}

fn seconds(duration: Seconds) -> Option<u32> {
    Some(duration.seconds())
}

/// Of a photo's sizes, the largest that declares at most `max_bytes`; when
/// none does, the smallest (by declared bytes, then pixels), so that the core
/// refuses it by its size rather than the gateway dropping it.
pub(crate) fn choose_photo(sizes: &[PhotoSize], max_bytes: u64) -> Option<&PhotoSize> {
    let pixels = |size: &PhotoSize| u64::from(size.width) * u64::from(size.height);
    sizes
        .iter()
        .filter(|size| declared_size(&size.file).is_some_and(|bytes| bytes <= max_bytes))
        .max_by_key(|size| (declared_size(&size.file), pixels(size)))
        .or_else(|| {
            sizes
                .iter()
                .min_by_key(|size| (declared_size(&size.file).unwrap_or(u64::MAX), pixels(size)))
        })
}

fn text(text: String) -> InboundBody {
    InboundBody::Text { text }
}

fn unsupported(what: &str) -> InboundBody {
    InboundBody::Unsupported { what: what.to_owned() }
}

/// "52.52, 13.4": degrees to about a metre, without trailing zeros.
fn place(location: &Location) -> String {
    format!("{}, {}", degrees(location.latitude), degrees(location.longitude))
}

fn degrees(value: f64) -> String {
    let fixed = format!("{value:.5}");
    let trimmed = fixed.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "-0" {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    }
}

/// "[location 52.52, 13.4: Title, Address]".
fn venue_line(venue: &Venue) -> String {
    let named: Vec<&str> = [venue.title.trim(), venue.address.trim()]
        .into_iter()
        .filter(|part| !part.is_empty())
        .collect();
    if named.is_empty() {
        format!("[location {}]", place(&venue.location))
    } else {
        format!("[location {}: {}]", place(&venue.location), named.join(", "))
    }
}

/// "[contact Ada Lovelace, +44 20 7946 0000]".
fn contact_line(contact: &Contact) -> String {
    let name = [Some(contact.first_name.as_str()), contact.last_name.as_deref()]
        .into_iter()
        .flatten()
        .map(str::trim)
        .filter(|part| !part.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    readable::contact([name.as_str(), contact.phone_number.trim()])
}

/// A person-readable name for a kind of message the core cannot read.
fn name(media: &MediaKind) -> &'static str {
    match media {
        MediaKind::Animation(_) => "animation",
        MediaKind::Audio(_) => "audio file",
        MediaKind::Contact(_) => "contact",
        MediaKind::Document(_) => "document",
        MediaKind::PaidMedia(_) => "paid media",
        MediaKind::Game(_) => "game",
        MediaKind::Venue(_) => "venue",
        MediaKind::Location(_) => "location",
        MediaKind::Photo(_) => "photo",
        MediaKind::Poll(_) => "poll",
        MediaKind::Checklist(_) => "checklist",
        MediaKind::Sticker(_) => "sticker",
        MediaKind::Story(_) => "story",
        MediaKind::Text(_) => "text",
        MediaKind::Video(_) => "video",
        MediaKind::VideoNote(_) => "video message",
        MediaKind::Voice(_) => "voice message",
        MediaKind::Migration(_) => "chat migration",
    }
}
