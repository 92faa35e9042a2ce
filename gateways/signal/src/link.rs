//! Linking a person's own account: the assistant becomes one more device of
//! it, as Signal Desktop does.
//!
//! signal-cli offers it in multi-account mode only (a daemon or `jsonRpc`
//! started without `-a`): [`start_link`] calls `startLink`, which answers a
//! `sgnl://linkdevice?…` URI for the phone to scan (as a QR code) under
//! Settings → Linked devices; [`finish_link`] calls `finishLink` with that
//! URI and the device's name, which answers once the phone agreed, with the
//! account's number. A daemon serving one account answers "no such
//! method"; that is told apart, as are Signal's servers out of reach, a
//! phone that never answers within the time given, a refusal, and an
//! answer in the wrong shape.

use std::fmt;
use std::time::Duration;

use serde_json::{Value, json};
use thiserror::Error;

use crate::error::{ErrorCode, RemoteError, RpcError};
use crate::rpc::RpcClient;

/// How the link URI starts.
pub const LINK_URI_PREFIX: &str = "sgnl://linkdevice?";

/// The URI a phone scans to link a new device. Short-lived; not a secret
/// once used, but a live one lets whoever scans it first link *their*
/// account, so it is shown to the person only.
#[derive(Clone, PartialEq, Eq)]
pub struct LinkUri(String);

impl LinkUri {
    /// `uri`, if it is a Signal device-link URI.
    pub fn new(uri: &str) -> Option<Self> {
        let query = uri.strip_prefix(LINK_URI_PREFIX)?;
        (!query.is_empty() && !uri.chars().any(char::is_whitespace)).then(|| Self(uri.to_owned()))
    }

    /// The URI, to show as a QR code or a link for the phone.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for LinkUri {
    /// Never printed in logs: the URI is for the person's phone.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LinkUri(…)")
    }
}

/// The account linked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Linked {
    /// Its number, `+` and digits.
    pub number: String,
}

/// Why linking failed.
#[derive(Debug, Error)]
pub enum LinkError {
    /// The signal-cli reached serves one account (started with `-a`): only
    /// one started without it links new ones.
    #[error(
        "signal-cli at {at} serves a single account (it was started with -a): linking needs one started without -a, \
         e.g. `signal-cli daemon --tcp 127.0.0.1:7583 --receive-mode=manual`, or `spawn = true`"
    )]
    SingleAccount {
        /// Where that signal-cli is (its endpoint or command line).
        at: String,
    },
    /// The phone did not link within the time given.
    #[error("no phone linked within {}s; run the command again for a new code", .0.as_secs())]
    TimedOut(Duration),
    /// signal-cli could not talk to the Signal servers (offline, blocked).
    #[error("signal-cli cannot reach the Signal servers to link (is this machine online?): {0}")]
    Servers(RemoteError),
    /// signal-cli (or the Signal servers through it) refused.
    #[error("signal-cli refused to link: {0}")]
    Refused(RemoteError),
    /// An answer without what signal-cli documents.
    #[error("signal-cli's answer to {method} is not what it documents: {reason}")]
    Malformed {
        /// The method whose answer it was (`startLink`, `finishLink`).
        method: &'static str,
        /// What is missing or wrong in it.
        reason: String,
    },
    /// The connection failed or closed.
    #[error(transparent)]
    Rpc(RpcError),
}

/// `startLink`: the URI to show the phone.
pub async fn start_link(client: &RpcClient) -> Result<LinkUri, LinkError> {
    let result = client
        .call("startLink", Value::Null)
        .await
        .map_err(|error| failed(client, error, None))?;
    let uri = result
        .get("deviceLinkUri")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("startLink", format!("no deviceLinkUri in {}", shape(&result))))?;
    LinkUri::new(uri).ok_or_else(|| malformed("startLink", format!("deviceLinkUri is not a {LINK_URI_PREFIX}… URI")))
}

/// `finishLink`: waits up to `wait` for the phone to link `uri` as a device
/// called `device_name`; the account linked.
pub async fn finish_link(
    client: &RpcClient,
    uri: &LinkUri,
    device_name: &str,
    wait: Duration,
) -> Result<Linked, LinkError> {
    let params = json!({ "deviceLinkUri": uri.as_str(), "deviceName": device_name });
    let result = client
        .call_with_timeout("finishLink", params, wait)
        .await
        .map_err(|error| failed(client, error, Some(wait)))?;
    let number = result
        .get("number")
        .and_then(Value::as_str)
        .ok_or_else(|| malformed("finishLink", format!("no number in {}", shape(&result))))?;
    let digits = number.strip_prefix('+').unwrap_or_default();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
        return Err(malformed("finishLink", "the number is not + and digits".to_owned()));
    }
    Ok(Linked {
        number: number.to_owned(),
    })
}

/// What a failed call means for linking; `wait`, the time the phone had.
fn failed(client: &RpcClient, error: RpcError, wait: Option<Duration>) -> LinkError {
    let method = if wait.is_some() { "finishLink" } else { "startLink" };
    match (error, wait) {
        (RpcError::Remote(remote), _) if remote.code == ErrorCode::MethodNotFound => LinkError::SingleAccount {
            at: client.endpoint().to_owned(),
        },
        (RpcError::Remote(remote), _) if remote.code == ErrorCode::Io => LinkError::Servers(remote),
        (RpcError::Remote(remote), _) => LinkError::Refused(remote),
        (RpcError::Timeout { .. }, Some(wait)) => LinkError::TimedOut(wait),
        (RpcError::Protocol { reason }, _) => LinkError::Malformed { method, reason },
        (other, _) => LinkError::Rpc(other),
    }
}

fn malformed(method: &'static str, reason: String) -> LinkError {
    LinkError::Malformed { method, reason }
}

/// What kind of JSON value `value` is, for errors: never its content, which
/// may hold the link URI.
fn shape(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_device_link_uris_are_link_uris() {
        let uri = LinkUri::new("sgnl://linkdevice?uuid=abc&pub_key=def").unwrap();
        assert_eq!(uri.as_str(), "sgnl://linkdevice?uuid=abc&pub_key=def");
        assert_eq!(format!("{uri:?}"), "LinkUri(…)", "kept out of logs");
        for bad in [
            "",
            "sgnl://linkdevice?",
            "https://signal.org",
            "sgnl://signal.me/#p/+1",
            "sgnl://linkdevice?uuid=a b",
        ] {
            assert!(LinkUri::new(bad).is_none(), "{bad:?}");
        }
    }
}
