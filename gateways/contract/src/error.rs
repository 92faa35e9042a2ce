//! Errors of the contract: an id that failed validation, and what a gateway
//! reports when it cannot deliver. The core decides on the variant — retry now,
//! later, when the chat is reachable again, or never — never on the text.

use std::time::Duration;

use thiserror::Error;

/// A value that is not a valid id of its kind.
#[derive(Debug, Error, Clone, PartialEq, Eq)]
#[error("invalid {kind} {value:?}: {reason}")]
pub struct InvalidId {
    /// The kind of id that was asked for ("chat id").
    pub kind: &'static str,
    /// The value refused, cut to its first 64 characters.
    pub value: String,
    /// What is wrong with it ("is empty").
    pub reason: &'static str,
}

impl InvalidId {
    pub(crate) fn new(kind: &'static str, value: &str, reason: &'static str) -> Self {
        // Keep the error small even when the offending value is huge.
        let value = value.chars().take(64).collect();
        Self { kind, value, reason }
    }
}

/// Why a gateway could not deliver an [`Outbound`](crate::Outbound).
#[derive(Debug, Error, Clone, PartialEq, Eq)]
pub enum GatewayError {
    /// Nobody is connected to receive this chat's messages right now (a local
    /// client went away). Retry when the gateway reports the chat reachable.
    #[error("no client is connected for this conversation")]
    NotConnected,
    /// The platform asked us to slow down.
    #[error("rate limited; retry after {retry_after:?}")]
    RateLimited {
        /// How long the platform asked us to wait.
        retry_after: Duration,
    },
    /// A network failure or a server error: worth retrying with backoff.
    #[error("transient failure: {reason}")]
    Transient {
        /// What failed, for the log.
        reason: String,
    },
    /// The platform could not be reached at all (the connection was
    /// refused): nothing was sent, so the message may go another way at once
    /// without showing twice. Otherwise retried as a transient failure.
    #[error("unreachable: {reason}")]
    Unreachable {
        /// What failed, for the log.
        reason: String,
    },
    /// The platform refused this message for good (chat gone, blocked, too long).
    #[error("rejected by the platform: {reason}")]
    Rejected {
        /// Why, as the platform said it.
        reason: String,
    },
    /// The gateway's credentials are not accepted: nothing will work until fixed.
    #[error("not authorized: {reason}")]
    Unauthorized {
        /// Why, in a sentence ("Telegram refused the token").
        reason: String,
    },
    /// A file is larger than the caller allowed (`size`, when known).
    #[error("the file is larger than {limit} bytes")]
    TooLarge {
        /// The file's size in bytes, when it is known.
        size: Option<u64>,
        /// The most the caller allowed, in bytes.
        limit: u64,
    },
    /// The gateway is shutting down.
    #[error("gateway is shutting down")]
    Closed,
}

impl GatewayError {
    /// Whether a later attempt can succeed.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Self::Rejected { .. } | Self::TooLarge { .. })
    }
}
