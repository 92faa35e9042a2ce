//! What can go wrong talking to signal-cli, typed so that callers decide on
//! the variant and the JSON-RPC error code, never on the message text.
//!
//! The codes are those of the signal-cli-jsonrpc(5) man page: the JSON-RPC 2.0
//! range (-32700 … -32603) for protocol faults, and small negative numbers for
//! failures of the command itself (a user error, an IO failure towards the
//! Signal servers, an untrusted identity key, a rate limit).

use std::time::Duration;

use serde_json::Value;
use thiserror::Error;

/// A JSON-RPC error code, as signal-cli uses them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// -32700: the daemon could not parse our request line.
    Parse,
    /// -32600: the request is not a valid JSON-RPC request.
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: invalid parameters (for example "Specified account does not exist").
    InvalidParams,
    /// -32603: the daemon failed internally.
    Internal,
    /// -1: the command refused its input (an unknown recipient, a bad group id).
    UserError,
    /// -3: an IO failure between signal-cli and the Signal servers.
    Io,
    /// -4: a recipient's identity key is not trusted.
    UntrustedKey,
    /// -5: the Signal servers rate-limit this account.
    RateLimit,
    /// Any other code.
    Other(i64),
}

impl ErrorCode {
    /// The code a number on the wire stands for.
    pub(crate) fn from_code(code: i64) -> Self {
        match code {
            -32700 => Self::Parse,
            -32600 => Self::InvalidRequest,
            -32601 => Self::MethodNotFound,
            -32602 => Self::InvalidParams,
            -32603 => Self::Internal,
            -1 => Self::UserError,
            -3 => Self::Io,
            -4 => Self::UntrustedKey,
            -5 => Self::RateLimit,
            other => Self::Other(other),
        }
    }

    /// The number on the wire.
    pub fn code(self) -> i64 {
        match self {
            Self::Parse => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::Internal => -32603,
            Self::UserError => -1,
            Self::Io => -3,
            Self::UntrustedKey => -4,
            Self::RateLimit => -5,
            Self::Other(code) => code,
        }
    }
}

/// A JSON-RPC error object returned by signal-cli.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("signal-cli error {} ({code:?}): {message}", code.code())]
pub struct RemoteError {
    /// The error's `code` member.
    pub code: ErrorCode,
    /// The error's `message` member, as signal-cli wrote it.
    pub message: String,
    /// The error's `data` member (for `send`, the per-recipient results).
    pub data: Option<Value>,
}

/// A failed JSON-RPC call, or a failed connection.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum RpcError {
    /// The daemon could not be reached (socket missing, connection refused).
    #[error("cannot connect to signal-cli at {endpoint}: {reason}")]
    Connect {
        /// The endpoint, or the command line of the signal-cli we started.
        endpoint: String,
        /// The kind of the IO error (`NotFound`: no socket, or no signal-cli to start).
        kind: std::io::ErrorKind,
        /// What failed, for the log and for people.
        reason: String,
    },
    /// No response within the call's timeout; the connection stays usable and
    /// a late response is ignored.
    #[error("signal-cli did not answer {method} within {timeout:?}")]
    Timeout {
        /// The method called.
        method: String,
        /// How long it was given.
        timeout: Duration,
    },
    /// The connection is gone (the daemon closed it, a read or write failed,
    /// or the client was shut down); every call pending on it fails with this.
    #[error("the connection to signal-cli is closed: {reason}")]
    Closed {
        /// Why, for the log.
        reason: String,
    },
    /// signal-cli answered with an error object.
    #[error(transparent)]
    Remote(#[from] RemoteError),
    /// signal-cli answered something that is not a JSON-RPC response.
    #[error("invalid response from signal-cli: {reason}")]
    Protocol {
        /// What is wrong with the answer.
        reason: String,
    },
}

impl RpcError {
    /// The JSON-RPC error code, when signal-cli answered with an error object.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Self::Remote(remote) => Some(remote.code),
            _ => None,
        }
    }

    /// Whether the connection is unusable and must be made again.
    pub fn is_connection_lost(&self) -> bool {
        matches!(self, Self::Connect { .. } | Self::Closed { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for code in [-32700, -32600, -32601, -32602, -32603, -1, -2, -3, -4, -5, 42] {
            assert_eq!(ErrorCode::from_code(code).code(), code);
        }
        assert_eq!(ErrorCode::from_code(-5), ErrorCode::RateLimit);
        assert_eq!(ErrorCode::from_code(-2), ErrorCode::Other(-2));
    }
}
