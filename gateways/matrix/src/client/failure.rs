//! A request's failure as the outbox reads it: rate limits waited for,
//! what the homeserver refused for good dropped, the rest retried.

use std::time::Duration;

use passepartout_gateway::GatewayError;

/// How long to wait after a 429 that does not say.
const DEFAULT_RETRY_AFTER: Duration = Duration::from_secs(1);

/// `error` as the contract's error.
pub fn sending_error(error: matrix_sdk::Error) -> GatewayError {
    let status = error.as_client_api_error().map(|api| api.status_code.as_u16());
    classify(status, error.to_string())
}

/// A failure with HTTP status `status` (none: no answer), said as `reason`.
pub fn classify(status: Option<u16>, reason: String) -> GatewayError {
    match status {
        Some(429) => GatewayError::RateLimited {
            retry_after: DEFAULT_RETRY_AFTER,
        },
        Some(401) => GatewayError::Unauthorized { reason },
        Some(status) if (400..500).contains(&status) => GatewayError::Rejected { reason },
        _ => GatewayError::Transient { reason },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_status_is_read_as_the_outbox_needs() {
        let of = |status| classify(status, "why".into());
        assert!(matches!(of(Some(429)), GatewayError::RateLimited { .. }));
        assert!(matches!(of(Some(401)), GatewayError::Unauthorized { .. }));
        assert!(matches!(of(Some(413)), GatewayError::Rejected { .. }));
        assert!(matches!(of(Some(502)), GatewayError::Transient { .. }));
        assert!(matches!(of(None), GatewayError::Transient { .. }));
    }
}
