//! Sending a file from the assistant's workspace: `sendPhoto` for an image
//! Telegram shows inline, `sendDocument` for anything else.
//!
//! The file is read from its path when it is sent (teloxide streams it as
//! `multipart/form-data`), after its size is checked against what Telegram
//! takes from a bot: [`MAX_UPLOAD_BYTES`] for a document,
//! [`MAX_PHOTO_BYTES`] for a photo (a bigger image goes as a document, and
//! so does one Telegram refuses as a photo).

use passepartout_gateway::{GatewayError, MessageId, OutboundFile};
use teloxide::payloads::{SendDocumentSetters, SendPhotoSetters};
use teloxide::prelude::Requester;
use teloxide::types::{self as tg, InputFile, ReplyParameters};

use crate::gateway::{TelegramGateway, sent_id};
use crate::split::utf16_len;

/// The largest file a bot may upload (50 MB).
pub const MAX_UPLOAD_BYTES: u64 = 50 * 1000 * 1000;
/// The largest image a bot may send as a photo (10 MB).
pub const MAX_PHOTO_BYTES: u64 = 10 * 1000 * 1000;
/// Telegram's limit on a caption, in UTF-16 code units.
pub const CAPTION_LIMIT: usize = 1024;

/// How a file goes: shown inline, or as a file to open.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Photo,
    Document,
}

impl TelegramGateway {
    /// Sends `file` to `chat`, quoting `reply_to` if given.
    pub(crate) async fn send_file(
        &self,
        chat: tg::ChatId,
        file: &OutboundFile,
        reply_to: Option<tg::MessageId>,
    ) -> Result<MessageId, GatewayError> {
        let size = tokio::fs::metadata(&file.path)
            .await
            .map_err(|error| GatewayError::Rejected {
                reason: format!("cannot read {}: {error}", file.name),
            })?
            .len();
        if size > MAX_UPLOAD_BYTES {
            return Err(GatewayError::TooLarge {
                size: Some(size),
                limit: MAX_UPLOAD_BYTES,
            });
        }
        if file.is_image() && size <= MAX_PHOTO_BYTES {
            match self.upload(chat, file, reply_to, Kind::Photo).await {
                // Telegram refuses some images as photos (their sides too
                // long, or too unequal): those still go, as documents.
                Err(GatewayError::Rejected { reason }) => {
                    tracing::info!(chat = chat.0, %reason, "not taken as a photo; sending it as a document");
                }
                sent => return sent,
            }
        }
        self.upload(chat, file, reply_to, Kind::Document).await
    }

    /// One upload of `file` as `kind`, in its slot.
    async fn upload(
        &self,
        chat: tg::ChatId,
        file: &OutboundFile,
        reply_to: Option<tg::MessageId>,
        kind: Kind,
    ) -> Result<MessageId, GatewayError> {
        let bot = self.bot()?;
        let input = InputFile::file(&file.path).file_name(file.name.clone());
        let caption = file.caption.as_deref().map(fit_caption);
        let quote = reply_to.map(|to| ReplyParameters::new(to).allow_sending_without_reply());
        self.pacing.wait_turn(chat.0).await;
        let sent = match kind {
            Kind::Photo => {
                let mut request = bot.send_photo(chat, input);
                if let Some(caption) = caption {
                    request = request.caption(caption);
                }
                if let Some(quote) = quote {
                    request = request.reply_parameters(quote);
                }
                request.await
            }
            Kind::Document => {
                let mut request = bot.send_document(chat, input);
                if let Some(caption) = caption {
                    request = request.caption(caption);
                }
                if let Some(quote) = quote {
                    request = request.reply_parameters(quote);
                }
                request.await
            }
        };
        let sent = sent.map_err(|error| {
            let failure = self.classify(&error);
            tracing::warn!(chat = chat.0, ?kind, error = ?failure, "sending a file failed");
            failure.into_gateway_error()
        })?;
        Ok(sent_id(&sent))
    }
}

/// `caption` cut to Telegram's limit, at a character boundary.
fn fit_caption(caption: &str) -> String {
    if utf16_len(caption) <= CAPTION_LIMIT {
        return caption.to_owned();
    }
    let mut units = 0;
    let end = caption
        .char_indices()
        .find(|(_, c)| {
            units += c.len_utf16();
            units > CAPTION_LIMIT - 1
        })
        .map_or(caption.len(), |(at, _)| at);
    format!("{}…", &caption[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_caption_is_cut_to_the_limit() {
        assert_eq!(fit_caption("short"), "short");
        let long = "😀".repeat(600);
        let cut = fit_caption(&long);
        assert!(utf16_len(&cut) <= CAPTION_LIMIT, "{}", utf16_len(&cut));
        assert!(cut.ends_with('…'));
    }
}
