//! The bytes of a file that came with a message: the contract's [`Fetch`].
//!
//! Two steps, as the Bot API has them: `getFile` turns the message's
//! `file_id` into a `file_path` (valid for an hour) and the file's size; the
//! file is then downloaded from `<api_url>/file/bot<token>/<file_path>`. A
//! size over the cap is refused before anything is downloaded, first by what
//! `getFile` declared, then by the download's `Content-Length`; and the
//! download is read chunk by chunk and abandoned as soon as it passes the cap,
//! so a server that lies about the size never makes the gateway read more.
//!
//! The download URL holds the bot token: the URL is never logged, and every
//! error made here drops it (reqwest's [`without_url`](reqwest::Error::without_url))
//! and goes through [`redact`] besides.

use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{Fetch, Fetched, FileRef, GatewayError};
use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, RETRY_AFTER};
use teloxide::prelude::Requester;
use teloxide::types::FileId;
use teloxide::{ApiError, Bot, RequestError};

use crate::failure::{describe, redact};
use crate::gateway::TelegramGateway;
use crate::media::declared_size;

/// How long to wait after a 429 on a download that does not say.
const DEFAULT_DOWNLOAD_RETRY: Duration = Duration::from_secs(5);
/// What the Bot API says when a file is over its own download limit.
const FILE_TOO_BIG: &str = "file is too big";
/// The Bot API's own download limit for bots (a local Bot API server has none).
const BOT_API_DOWNLOAD_LIMIT: u64 = 20 * 1024 * 1024;
/// The MIME type that says nothing about the content.
const OCTET_STREAM: &str = "application/octet-stream";

#[async_trait]
impl Fetch for TelegramGateway {
    async fn fetch(&self, file: &FileRef, max_bytes: u64) -> Result<Fetched, GatewayError> {
        let bot = self.bot()?;
        let found = bot
            .get_file(FileId(file.0.clone()))
            .await
            .map_err(|error| self.get_file_error(&error, max_bytes))?;
        if let Some(size) = declared_size(&found.meta).filter(|&size| size > max_bytes) {
            return Err(GatewayError::TooLarge {
                size: Some(size),
                limit: max_bytes,
            });
        }
        let url = download_url(bot, &found.path)?;
        self.download(bot, url, max_bytes).await
    }
}

impl TelegramGateway {
    /// The contract's error for a failed `getFile`; Telegram's own refusal of
    /// a file over its download limit is a file too large, for the lower of
    /// the two limits.
    fn get_file_error(&self, error: &RequestError, max_bytes: u64) -> GatewayError {
        if let RequestError::Api(ApiError::Unknown(description)) = error
            && description.contains(FILE_TOO_BIG)
        {
            return GatewayError::TooLarge {
                size: None,
                limit: max_bytes.min(BOT_API_DOWNLOAD_LIMIT),
            };
        }
        let failure = self.classify(error);
        tracing::warn!(error = ?failure, "getFile failed");
        failure.into_gateway_error()
    }

    /// Downloads `url`, reading at most `max_bytes`.
    async fn download(&self, bot: &Bot, url: reqwest::Url, max_bytes: u64) -> Result<Fetched, GatewayError> {
        let token = &self.settings.token;
        let transport = |error: reqwest::Error| {
            let reason = redact(&describe(&error.without_url()), token);
            tracing::warn!(%reason, "a Telegram file download failed");
            GatewayError::Transient {
                reason: format!("downloading the file failed: {reason}"),
            }
        };
        let mut response = bot
            .client()
            .get(url)
            .timeout(self.settings.download_timeout)
            .send()
            .await
            .map_err(transport)?;
        let status = response.status();
        if !status.is_success() {
            return Err(status_error(status, response.headers()));
        }
        if let Some(length) = response.content_length().filter(|&length| length > max_bytes) {
            return Err(GatewayError::TooLarge {
                size: Some(length),
                limit: max_bytes,
            });
        }
        let mime = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(|value| value.split(';').next().unwrap_or_default().trim().to_owned())
            .filter(|mime| !mime.is_empty() && mime != OCTET_STREAM);
        let expected = response.content_length().unwrap_or(0).min(max_bytes);
        let mut bytes = Vec::with_capacity(usize::try_from(expected).unwrap_or(0));
        while let Some(chunk) = response.chunk().await.map_err(transport)? {
            if (bytes.len() + chunk.len()) as u64 > max_bytes {
                return Err(GatewayError::TooLarge {
                    size: None,
                    limit: max_bytes,
                });
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(Fetched { bytes, mime })
    }
}

/// `<api_url>/file/bot<token>/<file_path>`, each segment of `file_path`
/// escaped on its own. A path that is absolute (a Bot API server in
/// `--local` mode names files on its own disk) or climbs is refused.
fn download_url(bot: &Bot, file_path: &str) -> Result<reqwest::Url, GatewayError> {
    let unusable = |why: &str| GatewayError::Rejected {
        reason: format!("Telegram named the file by a path the gateway cannot download: {why}"),
    };
    let segments: Vec<&str> = file_path.split('/').collect();
    if file_path.starts_with('/') {
        return Err(unusable("an absolute path (is the Bot API server in --local mode?)"));
    }
    if segments.iter().any(|segment| matches!(*segment, "" | "." | "..")) {
        return Err(unusable("an empty or relative segment"));
    }
    let mut url = bot.api_url();
    url.path_segments_mut()
        .map_err(|()| unusable("the API URL cannot take a path"))?
        .pop_if_empty()
        .push("file")
        .push(&format!("bot{}", bot.token()))
        .extend(segments);
    Ok(url)
}

/// The contract's error for a download answered with `status`.
fn status_error(status: StatusCode, headers: &reqwest::header::HeaderMap) -> GatewayError {
    let reason = format!("the file download was answered {status}");
    match status {
        StatusCode::TOO_MANY_REQUESTS => GatewayError::RateLimited {
            retry_after: headers
                .get(RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map_or(DEFAULT_DOWNLOAD_RETRY, Duration::from_secs),
        },
        StatusCode::UNAUTHORIZED => GatewayError::Unauthorized { reason },
        // Gone or expired (a `file_path` lives an hour): asking again is the
        // core's choice, with a new getFile.
        status if status.is_client_error() => GatewayError::Rejected { reason },
        _ => GatewayError::Transient { reason },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bot(api_url: &str) -> Bot {
        Bot::new("123:SECRET").set_api_url(reqwest::Url::parse(api_url).unwrap())
    }

    #[test]
    fn the_download_url_escapes_each_segment_and_refuses_odd_paths() {
        let url = download_url(&bot("http://127.0.0.1:1"), "voice/file 1.oga").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:1/file/bot123:SECRET/voice/file%201.oga");
        for odd in [
            "/var/lib/telegram-bot-api/123:SECRET/voice/file_1.oga",
            "voice/../x",
            "a//b",
            "",
        ] {
            let error = download_url(&bot("http://127.0.0.1:1"), odd).unwrap_err();
            assert!(error.is_permanent(), "{odd}: {error:?}");
            assert!(!error.to_string().contains("SECRET"), "{error}");
        }
    }

    #[test]
    fn statuses_map_to_what_the_core_decides_on() {
        let none = reqwest::header::HeaderMap::new();
        assert!(status_error(StatusCode::NOT_FOUND, &none).is_permanent());
        assert!(matches!(
            status_error(StatusCode::BAD_GATEWAY, &none),
            GatewayError::Transient { .. }
        ));
        let mut wait = reqwest::header::HeaderMap::new();
        wait.insert(RETRY_AFTER, "7".parse().unwrap());
        assert_eq!(
            status_error(StatusCode::TOO_MANY_REQUESTS, &wait),
            GatewayError::RateLimited {
                retry_after: Duration::from_secs(7)
            }
        );
    }
}
