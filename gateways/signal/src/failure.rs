//! What a failed signal-cli call means for delivery.
//!
//! [`delivery_error`] sorts an [`RpcError`] by its JSON-RPC code into the
//! contract's [`GatewayError`]; [`send_outcome`] reads the per-recipient
//! results of a `send`, which can fail for every recipient without the call
//! failing (signal-cli answers an error only when none succeeded, and not in
//! every version).
//!
//! A rate limit waits as long as signal-cli says: each rate-limited
//! recipient's result carries `retryAfterSeconds` (signal-cli 0.13), in the
//! `send` result or, when nobody got the message, in the error's
//! `data.response`. The longest wait counts; without one,
//! [`DEFAULT_RATE_LIMIT_WAIT`].

use std::time::Duration;

use passepartout_gateway::GatewayError;
use serde_json::Value;

use crate::error::{ErrorCode, RpcError};
use crate::settings::DEFAULT_RATE_LIMIT_WAIT;

/// The contract's error for a failed call.
pub fn delivery_error(error: &RpcError) -> GatewayError {
    match error {
        RpcError::Remote(remote) => match remote.code {
            ErrorCode::RateLimit => GatewayError::RateLimited {
                retry_after: remote
                    .data
                    .as_ref()
                    .and_then(|data| data.get("response"))
                    .map_or(DEFAULT_RATE_LIMIT_WAIT, rate_limit_wait),
            },
            // The input is wrong (an unknown recipient or group, an untrusted
            // identity to verify by hand): sending it again will not help.
            ErrorCode::UserError
            | ErrorCode::InvalidParams
            | ErrorCode::UntrustedKey
            | ErrorCode::MethodNotFound
            | ErrorCode::InvalidRequest
            | ErrorCode::Parse => GatewayError::Rejected {
                reason: error.to_string(),
            },
            ErrorCode::Io | ErrorCode::Internal | ErrorCode::Other(_) => GatewayError::Transient {
                reason: error.to_string(),
            },
        },
        // The daemon's socket refused us: nothing was sent.
        RpcError::Connect { .. } => GatewayError::Unreachable {
            reason: error.to_string(),
        },
        RpcError::Timeout { .. } | RpcError::Closed { .. } | RpcError::Protocol { .. } => GatewayError::Transient {
            reason: error.to_string(),
        },
    }
}

/// The timestamp of a sent message, or why it did not go to anyone.
pub fn send_outcome(result: &Value) -> Result<u64, GatewayError> {
    let timestamp = result
        .get("timestamp")
        .and_then(Value::as_u64)
        .ok_or_else(|| GatewayError::Transient {
            reason: format!("signal-cli's send result has no timestamp: {result}"),
        })?;
    let types: Vec<&str> = result
        .get("results")
        .and_then(Value::as_array)
        .map(|results| {
            results
                .iter()
                .filter_map(|r| r.get("type").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default();
    if types.is_empty() || types.contains(&"SUCCESS") {
        return Ok(timestamp);
    }
    Err(if types.contains(&"RATE_LIMIT_FAILURE") {
        GatewayError::RateLimited {
            retry_after: rate_limit_wait(result),
        }
    } else if types
        .iter()
        .all(|t| matches!(*t, "UNREGISTERED_FAILURE" | "IDENTITY_FAILURE"))
    {
        GatewayError::Rejected {
            reason: format!("no recipient took the message: {}", types.join(", ")),
        }
    } else {
        GatewayError::Transient {
            reason: format!("no recipient took the message: {}", types.join(", ")),
        }
    })
}

/// The longest `retryAfterSeconds` among a send result's recipients.
fn rate_limit_wait(result: &Value) -> Duration {
    result
        .get("results")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.get("retryAfterSeconds").and_then(Value::as_u64))
        .max()
        .map_or(DEFAULT_RATE_LIMIT_WAIT, Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::error::RemoteError;

    fn remote(code: i64) -> RpcError {
        RpcError::Remote(RemoteError {
            code: ErrorCode::from_code(code),
            message: "m".into(),
            data: None,
        })
    }

    #[test]
    fn sorts_errors_by_code() {
        assert!(matches!(delivery_error(&remote(-5)), GatewayError::RateLimited { .. }));
        assert!(delivery_error(&remote(-1)).is_permanent());
        assert!(delivery_error(&remote(-4)).is_permanent());
        assert!(delivery_error(&remote(-32602)).is_permanent());
        assert!(!delivery_error(&remote(-3)).is_permanent());
        let closed = RpcError::Closed { reason: "x".into() };
        assert!(matches!(delivery_error(&closed), GatewayError::Transient { .. }));
        let refused = RpcError::Connect {
            endpoint: "127.0.0.1:1".into(),
            kind: std::io::ErrorKind::ConnectionRefused,
            reason: "connection refused".into(),
        };
        assert!(matches!(delivery_error(&refused), GatewayError::Unreachable { .. }));
    }

    #[test]
    fn reads_per_recipient_results() {
        let ok = json!({ "timestamp": 5, "results": [{ "type": "SUCCESS" }, { "type": "UNREGISTERED_FAILURE" }] });
        assert_eq!(send_outcome(&ok), Ok(5));
        let gone = json!({ "timestamp": 5, "results": [{ "type": "UNREGISTERED_FAILURE" }] });
        assert!(send_outcome(&gone).unwrap_err().is_permanent());
        let limited = json!({ "timestamp": 5, "results": [{ "type": "RATE_LIMIT_FAILURE" }] });
        assert!(matches!(send_outcome(&limited), Err(GatewayError::RateLimited { .. })));
        let network = json!({ "timestamp": 5, "results": [{ "type": "NETWORK_FAILURE" }] });
        assert!(matches!(send_outcome(&network), Err(GatewayError::Transient { .. })));
        assert!(send_outcome(&json!({})).is_err());
    }

    #[test]
    fn rate_limits_wait_as_long_as_signal_cli_says() {
        let waited = |error: GatewayError| match error {
            GatewayError::RateLimited { retry_after } => retry_after,
            other => panic!("not a rate limit: {other:?}"),
        };
        let results = json!({ "timestamp": 5, "results": [
            { "type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 30 },
            { "type": "RATE_LIMIT_FAILURE", "retryAfterSeconds": 95 },
        ] });
        assert_eq!(waited(send_outcome(&results).unwrap_err()), Duration::from_secs(95));
        let error = RpcError::Remote(RemoteError {
            code: ErrorCode::RateLimit,
            message: "Failed to send message due to rate limiting".into(),
            data: Some(json!({ "response": results })),
        });
        assert_eq!(waited(delivery_error(&error)), Duration::from_secs(95));
        assert_eq!(
            waited(delivery_error(&remote(-5))),
            DEFAULT_RATE_LIMIT_WAIT,
            "no data: the default"
        );
    }
}
