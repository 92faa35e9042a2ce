//! What the Signal gateway needs to know: where signal-cli listens, which
//! account is the bot's, how to treat groups, and how long to wait on the way.
//!
//! The daemon builds this from its own configuration; the gateway never reads
//! the environment. There is no secret here: signal-cli keeps the account's
//! keys, and the socket's permissions guard it.

use std::time::Duration;

use crate::endpoint::Endpoint;
use crate::normalize::{BotIdentity, GroupMode};
use crate::split::SIGNAL_TEXT_LIMIT;

/// What people who are not allowed to use the bot are told (once an hour).
pub const DEFAULT_REFUSAL: &str = "Sorry, this assistant is private.";
/// What a person is told when the core refuses a message as too large.
pub const DEFAULT_TOO_LONG: &str = "That message is too long for me to read; please send something shorter.";
/// How long a call to signal-cli may take. `send` waits for the Signal servers.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// The first wait after a failed or lost connection; it doubles up to [`DEFAULT_BACKOFF_MAX`].
pub const DEFAULT_BACKOFF_BASE: Duration = Duration::from_secs(1);
/// The longest wait between connection attempts.
pub const DEFAULT_BACKOFF_MAX: Duration = Duration::from_secs(60);
/// The wait after the core answered `Busy`, before submitting the message again.
pub const DEFAULT_BUSY_BACKOFF: Duration = Duration::from_secs(1);
/// How long to wait on a rate limit signal-cli gives no duration for.
pub const DEFAULT_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);

/// Settings of the Signal gateway.
#[derive(Clone, Debug)]
pub struct SignalSettings {
    /// Where the signal-cli daemon listens.
    pub endpoint: Endpoint,
    /// The bot's account, its phone number (`+` and digits).
    pub account: String,
    /// The account's UUID, if known: mentions and quotes may carry only it.
    pub account_uuid: Option<String>,
    /// Whether the daemon serves several accounts (started without `-a`):
    /// then every request names `account`, and envelopes for others are skipped.
    pub multi_account: bool,
    /// Which group messages the bot takes.
    pub group_mode: GroupMode,
    /// The timeout of each call to signal-cli.
    pub call_timeout: Duration,
    /// Longest message body sent, in bytes; longer replies are split.
    pub text_limit: usize,
    /// The text sent to people who are not allowed, at most once per person an hour.
    pub refusal: String,
    /// The text sent when the core refuses a message as too large.
    pub too_long: String,
    /// First wait after a failed or lost connection (doubles, jittered).
    pub backoff_base: Duration,
    /// Cap of that wait.
    pub backoff_max: Duration,
    /// Wait after the core answered `Busy`.
    pub busy_backoff: Duration,
}

impl SignalSettings {
    /// Settings for `account` on the daemon at `endpoint`, with every default.
    pub fn new(endpoint: Endpoint, account: impl Into<String>) -> Self {
        Self {
            endpoint,
            account: account.into(),
            account_uuid: None,
            multi_account: false,
            group_mode: GroupMode::default(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            text_limit: SIGNAL_TEXT_LIMIT,
            refusal: DEFAULT_REFUSAL.to_owned(),
            too_long: DEFAULT_TOO_LONG.to_owned(),
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_max: DEFAULT_BACKOFF_MAX,
            busy_backoff: DEFAULT_BUSY_BACKOFF,
        }
    }

    /// The bot's identity, for [`normalize`](crate::normalize()).
    pub fn bot_identity(&self) -> BotIdentity {
        BotIdentity {
            uuid: self.account_uuid.clone(),
            number: Some(self.account.clone()),
        }
    }
}
