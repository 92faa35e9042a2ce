//! What the Telegram gateway needs to know: where the Bot API is, the bot's
//! token, how to treat groups, and how long to wait on the way.
//!
//! The daemon builds this from its own configuration; the gateway never reads
//! the environment. The token is a secret: [`TelegramSettings`]'s `Debug`
//! shows it redacted, and the gateway never writes it to a log.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use crate::normalize::GroupMode;
use crate::pacing::Limits;

/// Telegram's own Bot API server.
pub const DEFAULT_API_URL: &str = "https://api.telegram.org";
/// How long one `getUpdates` waits for an update, in seconds.
pub const DEFAULT_POLL_TIMEOUT_S: u32 = 25;
/// What people who are not allowed to use the bot are told (once an hour).
pub const DEFAULT_REFUSAL: &str = "Sorry, this assistant is private.";
/// What a person is told when the core refuses a message as too large.
pub const DEFAULT_TOO_LONG: &str = "That message is too long for me to read; please send something shorter.";
/// The first wait after a network or server failure; it doubles up to [`DEFAULT_BACKOFF_MAX`].
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// The longest wait between attempts after repeated failures.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// The wait after a 409 Conflict (another poller or a webhook takes the updates).
pub const DEFAULT_CONFLICT_BACKOFF: Duration = Duration::from_secs(30);
/// The wait after the core answered `Busy`, before polling again.
pub const DEFAULT_BUSY_BACKOFF: Duration = Duration::from_secs(1);
/// The largest photo size taken from a message, in bytes: every vision model
/// reads an image this size (Anthropic's limit per image is 5 MB).
pub const DEFAULT_PHOTO_MAX_BYTES: u64 = 5 * 1024 * 1024 / 4 * 3;
/// How long one file download may take, from the request to its last byte.
pub const DEFAULT_DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// Settings of the Telegram gateway.
#[derive(Clone)]
pub struct TelegramSettings {
    /// Base URL of the Bot API, without a path (`https://api.telegram.org`).
    pub api_url: String,
    /// The bot token from @BotFather. A secret: never logged.
    pub token: String,
    /// Which group messages the bot takes.
    pub group_mode: GroupMode,
    /// The groups joined to chats elsewhere (`[[bridges]]`): every person's
    /// message there is taken, those not addressed to the bot to be relayed
    /// only.
    pub bridged: BTreeSet<i64>,
    /// How long one `getUpdates` long poll waits, in seconds.
    pub poll_timeout_s: u32,
    /// The text sent to people who are not allowed, at most once per person an hour.
    pub refusal: String,
    /// The text sent when the core refuses a message as too large.
    pub too_long: String,
    /// First wait after a network or server failure (doubles, jittered).
    pub backoff_base: Duration,
    /// Cap of that wait.
    pub backoff_max: Duration,
    /// Wait after a 409 Conflict.
    pub conflict_backoff: Duration,
    /// Wait after the core answered `Busy`.
    pub busy_backoff: Duration,
    /// Of the sizes Telegram offers of a photo, the largest declaring at most
    /// this many bytes is the one the core fetches.
    pub photo_max_bytes: u64,
    /// How long one file download may take in all.
    pub download_timeout: Duration,
    /// How fast the bot may send (Telegram's limits unless a test or a
    /// benchmark lifts them).
    pub pacing: Limits,
    /// The proxy every Bot API request goes through, instead of what
    /// `https_proxy` / `all_proxy` say. May hold credentials: never printed.
    pub proxy: Option<String>,
}

impl TelegramSettings {
    /// Settings for `token` against Telegram's own server, with every default.
    pub fn new(token: impl Into<String>) -> Self {
        Self {
            api_url: DEFAULT_API_URL.to_owned(),
            token: token.into(),
            group_mode: GroupMode::default(),
            bridged: BTreeSet::new(),
            poll_timeout_s: DEFAULT_POLL_TIMEOUT_S,
            refusal: DEFAULT_REFUSAL.to_owned(),
            too_long: DEFAULT_TOO_LONG.to_owned(),
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_max: DEFAULT_BACKOFF_MAX,
            conflict_backoff: DEFAULT_CONFLICT_BACKOFF,
            busy_backoff: DEFAULT_BUSY_BACKOFF,
            photo_max_bytes: DEFAULT_PHOTO_MAX_BYTES,
            download_timeout: DEFAULT_DOWNLOAD_TIMEOUT,
            pacing: Limits::default(),
            proxy: None,
        }
    }

    /// The same settings with another Bot API base URL (a fake, a local Bot API server).
    pub fn with_api_url(mut self, api_url: impl Into<String>) -> Self {
        self.api_url = api_url.into();
        self
    }
}

impl fmt::Debug for TelegramSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TelegramSettings")
            .field("api_url", &self.api_url)
            .field("token", &"<redacted>")
            .field("proxy", &self.proxy.as_ref().map(|_| "<set>"))
            .field("group_mode", &self.group_mode)
            .field("bridged", &self.bridged)
            .field("poll_timeout_s", &self.poll_timeout_s)
            .field("refusal", &self.refusal)
            .field("too_long", &self.too_long)
            .field("backoff_base", &self.backoff_base)
            .field("backoff_max", &self.backoff_max)
            .field("conflict_backoff", &self.conflict_backoff)
            .field("busy_backoff", &self.busy_backoff)
            .field("photo_max_bytes", &self.photo_max_bytes)
            .field("download_timeout", &self.download_timeout)
            .field("pacing", &self.pacing)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_the_token() {
        let settings = TelegramSettings::new("123456:SECRET-token");
        let shown = format!("{settings:?} {settings:#?}");
        assert!(!shown.contains("SECRET"), "{shown}");
        assert!(shown.contains("<redacted>"));
    }
}
