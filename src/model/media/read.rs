//! Reading one message's media: each attachment fetched within its limit,
//! then transcribed (voice, audio), kept and shown (photos, to a model that
//! sees images) or saved into the inbox (files); what cannot be read becomes
//! a sentence for the person instead. See [`Media::read`].

use std::sync::Arc;

use passepartout_gateway::markup::{code, escape};
use passepartout_gateway::{Attachment, Fetched, GatewayError, GatewayId, MediaKind, ReplyKind};

use super::Media;
use super::inbox::safe_name;
use super::store::extension;
use crate::model::llm::{ChatMessage, Image, Note};

/// What the person is told when no transcriber is set up.
pub const NO_TRANSCRIBER: &str = "I can't listen to voice notes yet: no transcription server is set up. \
     To turn it on, set `[transcription] base_url` (and `model`, and `api_key_env` if the server wants a key) \
     in the config; `passepartout config example` documents it.";

/// What a message's media gave.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reading {
    /// What the model reads: the person's message with transcripts, image
    /// parts and notes on saved files, then the caption. `None` when
    /// nothing is left for the model.
    pub message: Option<ChatMessage>,
    /// Sentences for the person, before any answer: what could not be read, and why.
    pub told: Vec<(ReplyKind, String)>,
    /// Transcripts to show with the answer (short or unsure ones).
    pub heard: Vec<String>,
}

/// What one attachment gave.
enum Part {
    /// A note or a transcript for the model, and maybe what to show as
    /// heard; what people reading the conversation are shown of it: the
    /// words the person said in it, and what they sent ("notes.txt").
    Text {
        text: String,
        heard: Option<String>,
        said: Option<String>,
        sent: String,
    },
    Image(Image),
    /// A photo the model cannot see.
    Unseen,
    /// A sentence for the person.
    Tell(ReplyKind, String),
}

impl Media {
    /// Reads `attachments` of a message that came through `gateway`, with
    /// its `caption`; photos become image parts when the model has `vision`.
    pub async fn read(
        &self,
        gateway: &GatewayId,
        attachments: &[Attachment],
        caption: Option<&str>,
        vision: bool,
    ) -> Reading {
        let mut reading = Reading::default();
        let mut texts = Vec::new();
        let (mut said, mut sent) = (Vec::new(), Vec::new());
        let mut images = Vec::new();
        let mut unseen = 0;
        for attachment in attachments {
            match self.read_one(gateway, attachment, vision).await {
                Part::Text {
                    text,
                    heard,
                    said: words,
                    sent: what,
                } => {
                    texts.push(text);
                    reading.heard.extend(heard);
                    said.extend(words);
                    sent.push(what);
                }
                Part::Image(image) => {
                    images.push(image);
                    sent.push("a photo".to_owned());
                }
                Part::Unseen => unseen += 1,
                Part::Tell(kind, sentence) => reading.told.push((kind, sentence)),
            }
        }
        let caption = caption.map(str::trim).filter(|caption| !caption.is_empty());
        if unseen > 0 {
            let what = if unseen == 1 { "your photo" } else { "your photos" };
            let sentence = match caption {
                Some(_) => {
                    format!("The model I use cannot see images, so I can't look at {what}; I read only the caption.")
                }
                None => format!(
                    "The model I use cannot see images, so I can't look at {what}. \
                     (A model that can is marked vision = true under [[llm.providers]].)"
                ),
            };
            reading.told.push((ReplyKind::Notice, sentence));
        }
        texts.extend(caption.map(str::to_owned));
        said.extend(caption.map(str::to_owned));
        if texts.is_empty() && images.is_empty() {
            return reading;
        }
        let mut message = ChatMessage::user_with_images(texts.join("\n\n"), images);
        // The notes on what was sent are the daemon's, not the person's words.
        message.note = Some(Note::Sent {
            said: (!said.is_empty()).then(|| said.join("\n\n")),
            sent,
        });
        reading.message = Some(message);
        reading
    }

    async fn read_one(&self, gateway: &GatewayId, attachment: &Attachment, vision: bool) -> Part {
        match attachment.kind {
            MediaKind::Voice | MediaKind::Audio => self.listen(gateway, attachment).await,
            MediaKind::Photo if !vision => Part::Unseen,
            MediaKind::Photo => self.look(gateway, attachment).await,
            MediaKind::Document => self.file(gateway, attachment).await,
            MediaKind::Video => Part::Tell(ReplyKind::Notice, "I can't watch videos yet.".to_owned()),
        }
    }

    /// A voice note or audio file: its transcript.
    async fn listen(&self, gateway: &GatewayId, attachment: &Attachment) -> Part {
        let noun = attachment.kind.noun();
        let Some(transcriber) = &self.transcriber else {
            return Part::Tell(ReplyKind::Notice, NO_TRANSCRIBER.to_owned());
        };
        let max_seconds = self.limits.max_seconds;
        if let Some(seconds) = attachment.duration_s.filter(|seconds| *seconds > max_seconds) {
            return Part::Tell(
                ReplyKind::Notice,
                format!(
                    "Your {noun} is {} long; I transcribe up to {} (`transcription.max_seconds`).",
                    duration(seconds),
                    duration(max_seconds)
                ),
            );
        }
        let limit = (self.limits.max_audio_bytes, "transcription.max_bytes");
        let fetched = match self.fetch(gateway, attachment, limit).await {
            Ok(fetched) => fetched,
            Err(part) => return part,
        };
        let default_mime = if attachment.kind == MediaKind::Voice {
            "audio/ogg"
        } else {
            "application/octet-stream"
        };
        let mime = declared_mime(attachment, &fetched).unwrap_or(default_mime).to_owned();
        let file_name = match &attachment.name {
            Some(name) => safe_name(Some(name), Some(&mime)),
            None => format!("voice.{}", extension(&mime)),
        };
        match transcriber.transcribe(fetched.bytes, file_name, &mime).await {
            Ok(transcript) if transcript.text.is_empty() => Part::Tell(
                ReplyKind::Notice,
                format!("I could not make out any words in your {noun}."),
            ),
            Ok(transcript) => {
                let heard = transcript.worth_showing().then(|| transcript.text.clone());
                let text = format!("[The person sent a {noun}; transcribed, it says:]\n{}", transcript.text);
                Part::Text {
                    text,
                    heard,
                    said: Some(transcript.text.clone()),
                    sent: format!("a {noun}"),
                }
            }
            Err(error) => Part::Tell(
                ReplyKind::Failure,
                format!(
                    "I could not transcribe your {noun}: the transcription server at {} {error}. \
                     Please send it again in a while, or type it.",
                    transcriber.base_url()
                ),
            ),
        }
    }

    /// A photo, for a model that sees images: kept in the store, shown.
    async fn look(&self, gateway: &GatewayId, attachment: &Attachment) -> Part {
        let limit = (self.limits.max_photo_bytes, "media.max_photo_bytes");
        let fetched = match self.fetch(gateway, attachment, limit).await {
            Ok(fetched) => fetched,
            Err(part) => return part,
        };
        // The bytes decide: a model refuses an image whose declared type is wrong.
        let Some(mime) = image_type(&fetched.bytes) else {
            return Part::Tell(
                ReplyKind::Notice,
                "I can look at JPEG, PNG, GIF and WebP images only, and your photo is none of them.".to_owned(),
            );
        };
        let bytes: Arc<[u8]> = Arc::from(fetched.bytes);
        let store = self.store.clone();
        let kept = bytes.clone();
        match tokio::task::spawn_blocking(move || store.save(&kept, mime)).await {
            Ok(Ok(name)) => Part::Image(Image {
                media: name,
                mime: mime.to_owned(),
                bytes: Some(bytes),
                tool: None,
            }),
            Ok(Err(error)) => {
                tracing::error!(%error, "cannot keep a photo");
                Part::Tell(
                    ReplyKind::Failure,
                    format!("I could not keep your photo: {}.", escape(&error.to_string())),
                )
            }
            Err(error) => {
                tracing::error!(%error, "photo task failed");
                Part::Tell(ReplyKind::Failure, "I could not keep your photo.".to_owned())
            }
        }
    }

    /// A file: saved into the inbox, and the model told where.
    async fn file(&self, gateway: &GatewayId, attachment: &Attachment) -> Part {
        let limit = (self.limits.max_document_bytes, "media.max_document_bytes");
        let fetched = match self.fetch(gateway, attachment, limit).await {
            Ok(fetched) => fetched,
            Err(part) => return part,
        };
        let mime = declared_mime(attachment, &fetched).map(str::to_owned);
        let size = fetched.bytes.len() as u64;
        let inbox = self.inbox.clone();
        let name = attachment.name.clone();
        let kind = mime.clone();
        let saved =
            tokio::task::spawn_blocking(move || inbox.save(name.as_deref(), kind.as_deref(), &fetched.bytes)).await;
        match saved {
            Ok(Ok(path)) => {
                let mime = mime.as_deref().unwrap_or("type unknown");
                let text = format!(
                    "[The person sent a file, saved in the workspace as {path} ({}, {mime}). \
                     A text file can be read with read_file.]",
                    bytes(size)
                );
                let sent = path.rsplit('/').next().unwrap_or(&path).to_owned();
                Part::Text {
                    text,
                    heard: None,
                    said: None,
                    sent,
                }
            }
            Ok(Err(error)) => {
                tracing::error!(%error, "cannot save a file into the inbox");
                Part::Tell(
                    ReplyKind::Failure,
                    format!("I could not save your file: {}.", escape(&error.to_string())),
                )
            }
            Err(error) => {
                tracing::error!(%error, "inbox task failed");
                Part::Tell(ReplyKind::Failure, "I could not save your file.".to_owned())
            }
        }
    }

    /// The attachment's bytes, at most `limit` (bytes, and the setting that
    /// says so); or the sentence saying why not.
    async fn fetch(&self, gateway: &GatewayId, attachment: &Attachment, limit: (u64, &str)) -> Result<Fetched, Part> {
        let noun = attachment.kind.noun();
        let (max, setting) = limit;
        let too_large = |size: Option<u64>| {
            let sentence = match size {
                Some(size) => format!(
                    "Your {noun} is too large for me: {}, and I take up to {} ({}).",
                    bytes(size),
                    bytes(max),
                    code(setting)
                ),
                None => format!(
                    "Your {noun} is larger than the {} I take ({}).",
                    bytes(max),
                    code(setting)
                ),
            };
            Part::Tell(ReplyKind::Notice, sentence)
        };
        if let Some(size) = attachment.size.filter(|size| *size > max) {
            return Err(too_large(Some(size)));
        }
        let Some(fetcher) = self.fetchers.get(gateway) else {
            return Err(Part::Tell(
                ReplyKind::Notice,
                format!("I can't open files sent through {gateway} yet, so I can't read your {noun}."),
            ));
        };
        let mut fetched = fetcher.fetch(&attachment.file, max).await;
        if let Err(error) = &fetched
            && let Some(wait) = worth_another_try(error)
        {
            tracing::info!(%gateway, %error, kind = noun, "media fetch failed; trying once more");
            tokio::time::sleep(wait).await;
            fetched = fetcher.fetch(&attachment.file, max).await;
        }
        match fetched {
            Ok(fetched) if fetched.bytes.len() as u64 > max => Err(too_large(Some(fetched.bytes.len() as u64))),
            Ok(fetched) => Ok(fetched),
            Err(GatewayError::TooLarge { size, .. }) => Err(too_large(size)),
            Err(error) => {
                tracing::warn!(%gateway, %error, kind = noun, "media fetch failed");
                Err(Part::Tell(
                    ReplyKind::Failure,
                    format!(
                        "I could not fetch your {noun} from {gateway} ({}). Please send it again.",
                        escape(&error.to_string())
                    ),
                ))
            }
        }
    }
}

/// How long to wait before fetching again after `error`, when a second try
/// within the turn may succeed: a passing failure, or a short rate limit.
fn worth_another_try(error: &GatewayError) -> Option<std::time::Duration> {
    const LONGEST_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
    match error {
        GatewayError::Transient { .. } | GatewayError::Unreachable { .. } | GatewayError::NotConnected => {
            Some(std::time::Duration::from_secs(1))
        }
        GatewayError::RateLimited { retry_after } if *retry_after <= LONGEST_WAIT => Some(*retry_after),
        _ => None,
    }
}

/// The MIME type the platform declared for the attachment or its download.
fn declared_mime<'a>(attachment: &'a Attachment, fetched: &'a Fetched) -> Option<&'a str> {
    attachment
        .mime
        .as_deref()
        .or(fetched.mime.as_deref())
        .filter(|mime| !mime.trim().is_empty())
}

/// The type of an image the models read, by its first bytes.
fn image_type(bytes: &[u8]) -> Option<&'static str> {
    match bytes {
        [0xFF, 0xD8, 0xFF, ..] => Some("image/jpeg"),
        [0x89, b'P', b'N', b'G', ..] => Some("image/png"),
        [b'G', b'I', b'F', b'8', ..] => Some("image/gif"),
        [b'R', b'I', b'F', b'F', _, _, _, _, b'W', b'E', b'B', b'P', ..] => Some("image/webp"),
        _ => None,
    }
}

/// `12 s`, `3 min`, `12 min 5 s`.
fn duration(seconds: u32) -> String {
    match (seconds / 60, seconds % 60) {
        (0, s) => format!("{s} s"),
        (m, 0) => format!("{m} min"),
        (m, s) => format!("{m} min {s} s"),
    }
}

/// `900 bytes`, `12.3 KB`, `4.0 MB`.
fn bytes(size: u64) -> String {
    const KB: f64 = 1024.0;
    match size as f64 {
        n if n < KB => format!("{size} bytes"),
        n if n < KB * KB => format!("{:.1} KB", n / KB),
        n => format!("{:.1} MB", n / (KB * KB)),
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
