//! What the Signal gateway needs to know: how to reach signal-cli (a daemon's
//! endpoint, or a child to start — the [`Transport`]), which account is the
//! bot's, how to treat groups, and how long to wait on the way.
//!
//! The daemon builds this from its own configuration; the gateway never reads
//! the environment. There is no secret here: signal-cli keeps the account's
//! keys, and the socket's permissions guard it.

use std::time::Duration;

use crate::endpoint::Endpoint;
use crate::error::RpcError;
use crate::normalize::{BotIdentity, Groups};
use crate::rpc::{MAX_LINE_BYTES, Notifications, RpcClient, RpcOptions};
use crate::spawn::Spawn;
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
/// How long to wait on a rate limit when signal-cli names no `retryAfterSeconds`.
pub const DEFAULT_RATE_LIMIT_WAIT: Duration = Duration::from_secs(60);
/// The largest attachment the gateway fetches, in bytes (as Telegram lets bots
/// download). It sizes the longest line read from signal-cli, since
/// `getAttachment` answers with the whole file in base64 on one line.
pub const DEFAULT_MAX_ATTACHMENT_BYTES: u64 = 20 * 1024 * 1024;
/// Room on an attachment's line for the JSON around its base64.
const ATTACHMENT_LINE_SLACK: usize = 64 * 1024;

/// How the gateway reaches signal-cli.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Transport {
    /// Connect to a running daemon (`signal-cli daemon --socket` / `--tcp`).
    Connect(Endpoint),
    /// Start `signal-cli jsonRpc` as a child for every connection.
    Spawn(Spawn),
}

impl From<Endpoint> for Transport {
    fn from(endpoint: Endpoint) -> Self {
        Self::Connect(endpoint)
    }
}

impl From<Spawn> for Transport {
    fn from(spawn: Spawn) -> Self {
        Self::Spawn(spawn)
    }
}

/// Settings of the Signal gateway.
#[derive(Clone, Debug)]
pub struct SignalSettings {
    /// How to reach signal-cli: the daemon's endpoint, or the child to start.
    pub transport: Transport,
    /// The bot's account, its phone number (`+` and digits).
    pub account: String,
    /// The account's UUID, if known: mentions and quotes may carry only it.
    pub account_uuid: Option<String>,
    /// Whether the daemon serves several accounts (started without `-a`):
    /// then every request names `account`, and envelopes for others are
    /// skipped. A spawned child is then started without `-a` too.
    pub multi_account: bool,
    /// Which group messages the bot takes: by the mode, and every person's
    /// in the groups joined to chats elsewhere (`[[bridges]]`).
    pub groups: Groups,
    /// The timeout of each call to signal-cli.
    pub call_timeout: Duration,
    /// Longest message body sent, in bytes; longer replies are split.
    pub text_limit: usize,
    /// The text sent to people who are not allowed, at most once per person
    /// an hour; empty, nothing is sent.
    pub refusal: String,
    /// The text sent when the core refuses a message as too large.
    pub too_long: String,
    /// First wait after a failed or lost connection (doubles, jittered).
    pub backoff_base: Duration,
    /// Cap of that wait.
    pub backoff_max: Duration,
    /// Wait after the core answered `Busy`.
    pub busy_backoff: Duration,
    /// The largest attachment fetched, in bytes; larger ones are refused as
    /// too large whatever the caller allows.
    pub max_attachment_bytes: u64,
    /// Whether the account is a person's own, the assistant a linked device
    /// of it: their Note to Self is a conversation with the assistant, and
    /// only it and the senders and groups of [`admitted`](Self::admitted)
    /// reach the core; everyone else is ignored without a word.
    pub note_to_self: bool,
    /// Who may reach the core at all when [`note_to_self`](Self::note_to_self)
    /// is set (the core's own lists decide the rest, as always).
    pub admitted: Admitted,
}

/// On a person's own account, the senders (UUIDs or numbers) and groups
/// (signal-cli's base64 ids) whose messages are handed to the core, beside
/// Note to Self.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Admitted {
    /// The senders, by UUID or number.
    pub senders: Vec<String>,
    /// The groups, by signal-cli's base64 group id.
    pub groups: Vec<String>,
}

impl SignalSettings {
    /// Settings for `account` on the daemon at `endpoint`, with every default.
    pub fn new(endpoint: Endpoint, account: impl Into<String>) -> Self {
        Self::with_transport(Transport::Connect(endpoint), account)
    }

    /// Settings for `account` reached through `transport`, with every default.
    pub fn with_transport(transport: impl Into<Transport>, account: impl Into<String>) -> Self {
        Self {
            transport: transport.into(),
            account: account.into(),
            account_uuid: None,
            multi_account: false,
            groups: Groups::default(),
            call_timeout: DEFAULT_CALL_TIMEOUT,
            text_limit: SIGNAL_TEXT_LIMIT,
            refusal: DEFAULT_REFUSAL.to_owned(),
            too_long: DEFAULT_TOO_LONG.to_owned(),
            backoff_base: DEFAULT_BACKOFF_BASE,
            backoff_max: DEFAULT_BACKOFF_MAX,
            busy_backoff: DEFAULT_BUSY_BACKOFF,
            max_attachment_bytes: DEFAULT_MAX_ATTACHMENT_BYTES,
            note_to_self: false,
            admitted: Admitted::default(),
        }
    }

    /// The longest line read from signal-cli: the usual cap, or the answer to
    /// `getAttachment` for the largest attachment fetched, if longer.
    pub fn max_line_bytes(&self) -> usize {
        let base64 = usize::try_from(self.max_attachment_bytes.div_ceil(3).saturating_mul(4)).unwrap_or(usize::MAX);
        MAX_LINE_BYTES.max(base64.saturating_add(ATTACHMENT_LINE_SLACK))
    }

    /// A new connection to signal-cli: to the daemon's endpoint, or to a new
    /// child (`-a account` unless in multi-account mode).
    pub async fn open(&self, options: RpcOptions) -> Result<(RpcClient, Notifications), RpcError> {
        match &self.transport {
            Transport::Connect(endpoint) => RpcClient::connect(endpoint, options).await,
            Transport::Spawn(spawn) => {
                let account = (!self.multi_account).then_some(self.account.as_str());
                RpcClient::spawn(spawn, account, options)
            }
        }
    }

    /// What [`open`](Self::open) reaches, for logs and messages: the endpoint,
    /// or the command line of the child.
    pub fn describe_transport(&self) -> String {
        match &self.transport {
            Transport::Connect(endpoint) => endpoint.to_string(),
            Transport::Spawn(spawn) => spawn.command_line((!self.multi_account).then_some(self.account.as_str())),
        }
    }

    /// The bot's identity, for [`normalize`](crate::normalize()).
    pub fn bot_identity(&self) -> BotIdentity {
        BotIdentity {
            uuid: self.account_uuid.clone(),
            number: Some(self.account.clone()),
            note_to_self: self.note_to_self,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawned_child_names_the_account_unless_in_multi_account_mode() {
        let spawn = Spawn {
            config_dir: Some("/data".into()),
            ..Spawn::default()
        };
        let mut settings = SignalSettings::with_transport(spawn, "+15551234567");
        assert_eq!(
            settings.describe_transport(),
            "signal-cli -a +15551234567 --config /data jsonRpc --receive-mode=manual"
        );
        settings.multi_account = true;
        assert_eq!(
            settings.describe_transport(),
            "signal-cli --config /data jsonRpc --receive-mode=manual"
        );
        let connect = SignalSettings::new("unix:/run/s".parse().unwrap(), "+1");
        assert_eq!(connect.describe_transport(), "unix:/run/s");
    }

    #[test]
    fn lines_are_long_enough_for_the_largest_attachment_in_base64() {
        let mut settings = SignalSettings::new("unix:/run/s".parse().unwrap(), "+1");
        let base64 = |bytes: u64| usize::try_from(bytes.div_ceil(3) * 4).unwrap();
        assert!(settings.max_line_bytes() > base64(DEFAULT_MAX_ATTACHMENT_BYTES));
        settings.max_attachment_bytes = 10;
        assert_eq!(settings.max_line_bytes(), MAX_LINE_BYTES, "never below the usual cap");
        settings.max_attachment_bytes = u64::MAX;
        assert_eq!(settings.max_line_bytes(), usize::MAX, "saturates");
    }
}
