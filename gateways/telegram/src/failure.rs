//! What a failed Bot API call means for the gateway.
//!
//! teloxide reports failures as [`RequestError`]; [`Failure::classify`] sorts
//! them by what the caller does next — back off, wait as told, stop for good,
//! give up on one message — and [`Failure::into_gateway_error`] turns them
//! into the contract's [`GatewayError`] for delivery.
//!
//! teloxide keeps only the error's description, not Telegram's HTTP status, so
//! a description teloxide does not know (`ApiError::Unknown`) is sorted by
//! Telegram's fixed prefixes (`Bad Request:`, `Forbidden:`, `Conflict:`) —
//! the one place text is read, because it is all the library gives.
//!
//! A network error from reqwest names the request URL, and the URL holds the
//! bot token: every description made here goes through [`redact`].

use std::time::Duration;

use passepartout_gateway::GatewayError;
use teloxide::{ApiError, RequestError};

/// What the gateway tells people when Telegram refuses the token.
pub const TOKEN_REFUSED: &str = "Telegram refused the token";

/// A failed Bot API call, sorted by what to do about it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Another `getUpdates` poller, or a webhook, takes this bot's updates (409).
    Conflict {
        /// What Telegram said, the token removed.
        detail: String,
    },
    /// Telegram asked us to wait this long (429).
    RetryAfter(Duration),
    /// The token is invalid or revoked (401): nothing works until it is fixed.
    Unauthorized,
    /// Telegram refused this request for good (chat gone, bot blocked, bad request).
    Rejected {
        /// What Telegram said, the token removed.
        reason: String,
    },
    /// A network failure, a server error, an unreadable answer: try again later.
    Transient {
        /// What failed, the token removed.
        reason: String,
    },
    /// The Bot API could not be connected to: nothing was sent.
    Unreachable {
        /// What failed, the token removed.
        reason: String,
    },
}

impl Failure {
    /// Sorts `error`; `token` is removed from every description.
    pub fn classify(error: &RequestError, token: &str) -> Self {
        let text = || redact(&describe(error), token);
        match error {
            RequestError::RetryAfter(seconds) => Failure::RetryAfter(seconds.duration()),
            RequestError::Api(ApiError::InvalidToken) => Failure::Unauthorized,
            RequestError::Api(ApiError::TerminatedByOtherGetUpdates) => Failure::Conflict { detail: text() },
            RequestError::Api(ApiError::Unknown(description)) => {
                let description = redact(description, token);
                if description.starts_with("Conflict") {
                    Failure::Conflict { detail: description }
                } else if description.starts_with("Bad Request") || description.starts_with("Forbidden") {
                    Failure::Rejected { reason: description }
                } else {
                    // "Internal Server Error", "Bad Gateway", …: Telegram's side.
                    Failure::Transient { reason: description }
                }
            }
            RequestError::Api(_) => Failure::Rejected { reason: text() },
            RequestError::MigrateToChatId(to) => Failure::Rejected {
                reason: format!("the group became supergroup {to}; messages must go there"),
            },
            RequestError::Network(network) if network.is_connect() => Failure::Unreachable { reason: text() },
            RequestError::Network(_) | RequestError::InvalidJson { .. } | RequestError::Io(_) => {
                Failure::Transient { reason: text() }
            }
        }
    }

    /// The contract's error for a failed delivery.
    pub fn into_gateway_error(self) -> GatewayError {
        match self {
            Failure::RetryAfter(retry_after) => GatewayError::RateLimited { retry_after },
            Failure::Unauthorized => GatewayError::Unauthorized {
                reason: TOKEN_REFUSED.to_owned(),
            },
            Failure::Rejected { reason } => GatewayError::Rejected { reason },
            // A conflict concerns getUpdates only; on a send it is Telegram's odd day.
            Failure::Conflict { detail: reason } | Failure::Transient { reason } => GatewayError::Transient { reason },
            Failure::Unreachable { reason } => GatewayError::Unreachable { reason },
        }
    }
}

/// `error` and its causes, `: `-separated ("A network error: error sending
/// request: client error (Connect): tcp connect error: Connection refused").
pub fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        // Some errors repeat their cause in their own text.
        if !text.ends_with(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `text` with every occurrence of `token` replaced.
pub fn redact(text: &str, token: &str) -> String {
    if token.is_empty() {
        text.to_owned()
    } else {
        text.replace(token, "<token>")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use teloxide::types::Seconds;

    const TOKEN: &str = "123:SECRET";

    #[test]
    fn sorts_the_errors_the_gateway_acts_on() {
        let classify = |error: RequestError| Failure::classify(&error, TOKEN);
        assert_eq!(
            classify(RequestError::RetryAfter(Seconds::from_seconds(7))),
            Failure::RetryAfter(Duration::from_secs(7))
        );
        assert_eq!(
            classify(RequestError::Api(ApiError::InvalidToken)),
            Failure::Unauthorized
        );
        assert!(matches!(
            classify(RequestError::Api(ApiError::TerminatedByOtherGetUpdates)),
            Failure::Conflict { .. }
        ));
        assert!(matches!(
            classify(RequestError::Api(ApiError::Unknown(
                "Conflict: can't use getUpdates method while webhook is active".into()
            ))),
            Failure::Conflict { .. }
        ));
        assert!(matches!(
            classify(RequestError::Api(ApiError::BotBlocked)),
            Failure::Rejected { .. }
        ));
        assert!(matches!(
            classify(RequestError::Api(ApiError::ChatNotFound)),
            Failure::Rejected { .. }
        ));
        assert!(matches!(
            classify(RequestError::Api(ApiError::Unknown("Internal Server Error".into()))),
            Failure::Transient { .. }
        ));
    }

    #[tokio::test]
    async fn a_refused_connection_is_unreachable_not_transient() {
        // Bound and held but never listening: connecting is refused, and
        // no other test is given the port while it is held.
        let held = tokio::net::TcpSocket::new_v4().unwrap();
        held.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let address = held.local_addr().unwrap();
        let refused = reqwest::Client::new()
            .get(format!("http://{address}/bot{TOKEN}/getMe"))
            .send()
            .await
            .unwrap_err();
        let failure = Failure::classify(&RequestError::from(refused), TOKEN);
        let Failure::Unreachable { reason } = &failure else {
            panic!("{failure:?}");
        };
        assert!(!reason.contains("SECRET"), "{reason}");
        assert!(matches!(failure.into_gateway_error(), GatewayError::Unreachable { .. }));
    }

    #[test]
    fn maps_to_the_contract() {
        assert_eq!(
            Failure::RetryAfter(Duration::from_secs(3)).into_gateway_error(),
            GatewayError::RateLimited {
                retry_after: Duration::from_secs(3)
            }
        );
        assert!(
            Failure::Rejected { reason: "x".into() }
                .into_gateway_error()
                .is_permanent()
        );
        assert!(
            !Failure::Transient { reason: "x".into() }
                .into_gateway_error()
                .is_permanent()
        );
    }

    #[test]
    fn redacts_the_token() {
        let text = "error sending request for url (http://127.0.0.1:1/bot123:SECRET/GetMe)";
        assert_eq!(
            redact(text, TOKEN),
            "error sending request for url (http://127.0.0.1:1/bot<token>/GetMe)"
        );
        let classified = Failure::classify(&RequestError::Api(ApiError::Unknown(format!("x {TOKEN}"))), TOKEN);
        assert!(!format!("{classified:?}").contains("SECRET"));
    }
}
