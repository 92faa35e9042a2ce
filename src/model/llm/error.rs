//! The typed failure of a language-model call. Each variant is a decision the
//! caller (the provider cascade, `doctor`) can take without reading text: wait
//! and retry elsewhere, mark the provider unhealthy, shorten the conversation,
//! or give up. Backends classify HTTP statuses and transport errors into these
//! variants at the boundary — transport failures by the HTTP client's error
//! kind, error answers here, by status code and by the API's machine-readable
//! error code in the common JSON error shapes (OpenAI's and its imitators',
//! and Anthropic's `{"type":"error","error":{..}}`). The `reason`/`message`
//! strings are for people only, with one documented, narrowly scoped exception
//! for Anthropic's context overflow (see [`ANTHROPIC_PROMPT_TOO_LONG`]).

use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, LOCATION};
use serde::Deserialize;

/// Longest provider explanation kept in [`LlmError::Rejected`].
const MAX_ERROR_MESSAGE_CHARS: usize = 500;

/// Machine-readable error codes (in `error.code` or `error.type`) meaning the
/// request is too big for the model: OpenAI's and llama.cpp server's context
/// overflow, and Anthropic's `request_too_large` (HTTP 413, a body over its
/// size limit), whose remedy — a shorter conversation — is the same.
const CONTEXT_TOO_LONG_CODES: &[&str] = &[
    "context_length_exceeded",
    "exceed_context_size_error",
    "request_too_large",
];

/// How Anthropic reports a prompt over the context window: HTTP 400 with the
/// generic `invalid_request_error` type and a message beginning with this
/// fixed phrase (`"prompt is too long: 210000 tokens > 200000 maximum"`). The
/// API has no dedicated code for it, so this is the one place a message is
/// read, and only as narrowly as possible: the body must be Anthropic's error
/// envelope (top-level `"type":"error"`), the error type must be exactly
/// `invalid_request_error`, and the message must *start* with this phrase, so
/// the phrase quoted anywhere else in a message (say, echoing user input)
/// does not count. Should Anthropic reword it, the error degrades to a plain
/// [`LlmError::Rejected`], which is safe.
const ANTHROPIC_PROMPT_TOO_LONG: &str = "prompt is too long";

/// Anthropic's top-level `type` on every error body.
const ANTHROPIC_ERROR_ENVELOPE: &str = "error";

/// Anthropic's error type for a request it will not process as sent.
const ANTHROPIC_INVALID_REQUEST: &str = "invalid_request_error";

/// Why a language-model call failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LlmError {
    /// HTTP 429: the provider asks us to slow down, for `retry_after` if it said so.
    #[error("rate limited by the provider{}", match .retry_after {
        Some(wait) => format!(" (retry after {}s)", wait.as_secs_f64()),
        None => String::new(),
    })]
    RateLimited {
        /// How long the provider asked us to wait, from the `retry-after` header.
        retry_after: Option<Duration>,
    },

    /// HTTP 401 or 403: the API key is missing, wrong or not allowed.
    #[error("the provider refused our credentials (HTTP {status})")]
    Unauthorized {
        /// The HTTP status the provider answered with.
        status: u16,
    },

    /// The conversation does not fit in the model's context window.
    #[error("the conversation is too long for the model's context window")]
    ContextTooLong,

    /// HTTP 5xx: the provider failed.
    #[error("the provider failed (HTTP {status})")]
    Server {
        /// The HTTP status the provider answered with.
        status: u16,
    },

    /// No complete answer within the configured timeout.
    #[error("the provider did not answer in time")]
    Timeout,

    /// The provider could not be reached: connection refused or reset, name
    /// resolution or connect failure.
    #[error("the provider is unreachable: {reason}")]
    Unreachable {
        /// What went wrong, for people.
        reason: String,
    },

    /// The provider answered, but not with what the protocol promises.
    #[error("the provider sent a malformed response: {reason}")]
    Malformed {
        /// What was wrong with the response, for people.
        reason: String,
    },

    /// Any other refusal of the request (another 4xx, or an unexpected redirect).
    #[error("the provider rejected the request (HTTP {status}): {message}")]
    Rejected {
        /// The HTTP status the provider answered with.
        status: u16,
        /// The provider's explanation, for people.
        message: String,
    },

    /// The backend's settings cannot work (bad base URL, unusable API key).
    #[error("invalid provider settings: {reason}")]
    Config {
        /// What is wrong with the settings, for people.
        reason: String,
    },
}

impl LlmError {
    /// Whether the same request to the same provider may succeed later.
    ///
    /// Rate limits, server errors, timeouts and unreachable providers pass;
    /// credentials, oversized conversations, malformed answers, rejections and
    /// bad settings need something to change first.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::RateLimited { .. } | Self::Server { .. } | Self::Timeout | Self::Unreachable { .. } => true,
            Self::Unauthorized { .. }
            | Self::ContextTooLong
            | Self::Malformed { .. }
            | Self::Rejected { .. }
            | Self::Config { .. } => false,
        }
    }

    /// A short name of the kind of failure, for counting failures by kind
    /// (`/metrics`): one per variant, stable, in snake case.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::RateLimited { .. } => "rate_limited",
            Self::Unauthorized { .. } => "unauthorized",
            Self::ContextTooLong => "context_too_long",
            Self::Server { .. } => "server_error",
            Self::Timeout => "timeout",
            Self::Unreachable { .. } => "unreachable",
            Self::Malformed { .. } => "malformed",
            Self::Rejected { .. } => "rejected",
            Self::Config { .. } => "config",
        }
    }

    /// Classify a non-success HTTP answer (status, headers, and as much of the
    /// body as was read) into the variant the caller decides on.
    pub(super) fn from_http(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Self {
        let code = status.as_u16();
        match code {
            429 => Self::RateLimited {
                retry_after: retry_after(headers),
            },
            401 | 403 => Self::Unauthorized { status: code },
            500..=599 => Self::Server { status: code },
            400..=499 => {
                let detail = ErrorDetail::parse(body);
                if detail.means_context_too_long() {
                    Self::ContextTooLong
                } else {
                    Self::Rejected {
                        status: code,
                        message: detail.message.unwrap_or_else(|| fallback_message(status, body)),
                    }
                }
            }
            _ => {
                let message = match headers.get(LOCATION).and_then(|l| l.to_str().ok()) {
                    Some(location) => {
                        format!("redirected to {location}; point base_url at the final address")
                    }
                    None => format!("unexpected HTTP status {status}"),
                };
                Self::Rejected { status: code, message }
            }
        }
    }
}

/// How long a 429 asks us to wait: `retry-after-ms` (sent by some
/// OpenAI-compatible gateways) or `retry-after` in seconds. An HTTP-date or
/// anything unparsable counts as "not said".
fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let seconds = |name: &str, scale: f64| {
        let text = headers.get(name)?.to_str().ok()?;
        let value = text.trim().parse::<f64>().ok()?;
        Duration::try_from_secs_f64(value / scale).ok()
    };
    seconds("retry-after-ms", 1000.0).or_else(|| seconds("retry-after", 1.0))
}

fn fallback_message(status: StatusCode, body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let text = text.trim();
    if text.is_empty() {
        status.canonical_reason().unwrap_or("no explanation").to_owned()
    } else {
        truncate(text)
    }
}

fn truncate(text: &str) -> String {
    match text.char_indices().nth(MAX_ERROR_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// The provider's own explanation in an error body, if it gives one.
pub(super) fn provider_message(body: &[u8]) -> Option<String> {
    ErrorDetail::parse(body).message
}

/// The useful parts of an error body, whichever of the common shapes it has:
/// `{"error":{"message","type","code"}}` (OpenAI, llama.cpp, Ollama),
/// `{"type":"error","error":{"type","message"}}` (Anthropic),
/// `{"error":"text"}`, or a flat `{"message","type","code"}` (vLLM).
#[derive(Debug, Default)]
struct ErrorDetail {
    message: Option<String>,
    kind: Option<String>,
    code: Option<String>,
    /// The top-level `type` around an `error` object: `"error"` from Anthropic.
    envelope: Option<String>,
}

impl ErrorDetail {
    fn parse(body: &[u8]) -> Self {
        let Ok(wire) = serde_json::from_slice::<WireErrorBody>(body) else {
            return Self::default();
        };
        match wire.error {
            Some(WireErrorField::Object(error)) => Self {
                envelope: wire.flat.kind,
                ..Self::from_wire(error)
            },
            Some(WireErrorField::Text(message)) => Self {
                message: Some(message),
                ..Self::default()
            },
            None => Self::from_wire(wire.flat),
        }
    }

    fn from_wire(error: WireError) -> Self {
        Self {
            message: error.message.map(|m| truncate(&m)),
            kind: error.kind,
            // Some servers put the HTTP status (a number) in `code`: not a code we act on.
            code: error.code.and_then(|code| code.as_str().map(str::to_owned)),
            envelope: None,
        }
    }

    fn means_context_too_long(&self) -> bool {
        let by_code = [&self.code, &self.kind]
            .into_iter()
            .flatten()
            .any(|value| CONTEXT_TOO_LONG_CODES.contains(&value.as_str()));
        by_code || self.is_anthropic_prompt_too_long()
    }

    /// See [`ANTHROPIC_PROMPT_TOO_LONG`] for why, and how narrowly, this reads text.
    fn is_anthropic_prompt_too_long(&self) -> bool {
        self.envelope.as_deref() == Some(ANTHROPIC_ERROR_ENVELOPE)
            && self.kind.as_deref() == Some(ANTHROPIC_INVALID_REQUEST)
            && self
                .message
                .as_deref()
                .is_some_and(|message| message.starts_with(ANTHROPIC_PROMPT_TOO_LONG))
    }
}

#[derive(Deserialize)]
struct WireErrorBody {
    #[serde(default)]
    error: Option<WireErrorField>,
    #[serde(flatten)]
    flat: WireError,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum WireErrorField {
    Object(WireError),
    Text(String),
}

#[derive(Default, Deserialize)]
struct WireError {
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    code: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use reqwest::header::{HeaderName, HeaderValue};

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| (HeaderName::from_static(name), HeaderValue::from_static(value)))
            .collect()
    }

    #[test]
    fn retry_after_reads_seconds_milliseconds_and_ignores_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after", "2")])),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", " 1.5 ")])),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&headers(&[("retry-after", "Wed, 21 Oct 2015 07:28:00 GMT")])),
            None
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "1e300")])), None);
        assert_eq!(retry_after(&HeaderMap::new()), None);
    }

    #[test]
    fn redirects_are_reported_not_followed() {
        let error = LlmError::from_http(
            StatusCode::MOVED_PERMANENTLY,
            &headers(&[("location", "https://api.example.com/v1/chat/completions")]),
            b"",
        );
        assert!(
            matches!(&error, LlmError::Rejected { status: 301, message } if message.contains("https://api.example.com/v1")),
            "{error:?}"
        );
    }

    fn anthropic_error(kind: &str, message: &str) -> Vec<u8> {
        serde_json::json!({"type": "error", "error": {"type": kind, "message": message}})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn anthropic_prompt_too_long_is_context_too_long_only_in_its_exact_shape() {
        let classify = |status: StatusCode, body: &[u8]| LlmError::from_http(status, &HeaderMap::new(), body);
        let too_long = anthropic_error(
            "invalid_request_error",
            "prompt is too long: 210000 tokens > 200000 maximum",
        );
        assert_eq!(classify(StatusCode::BAD_REQUEST, &too_long), LlmError::ContextTooLong);

        // The phrase elsewhere in the message, another error type, or no
        // Anthropic envelope: an ordinary rejection.
        let rejected = [
            anthropic_error("invalid_request_error", "messages.0: the prompt is too long"),
            anthropic_error("not_found_error", "prompt is too long"),
            serde_json::json!({"error": {"type": "invalid_request_error", "message": "prompt is too long"}})
                .to_string()
                .into_bytes(),
        ];
        for body in rejected {
            let error = classify(StatusCode::BAD_REQUEST, &body);
            assert!(matches!(error, LlmError::Rejected { status: 400, .. }), "{error:?}");
        }

        let oversized = anthropic_error(
            "request_too_large",
            "Request exceeds the maximum allowed number of bytes.",
        );
        assert_eq!(
            classify(StatusCode::PAYLOAD_TOO_LARGE, &oversized),
            LlmError::ContextTooLong
        );
    }

    #[test]
    fn long_messages_are_truncated_on_a_char_boundary() {
        let long = "é".repeat(MAX_ERROR_MESSAGE_CHARS + 10);
        let cut = truncate(&long);
        assert_eq!(cut.chars().count(), MAX_ERROR_MESSAGE_CHARS + 1);
        assert!(cut.ends_with('…'));
    }
}
