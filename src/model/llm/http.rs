//! The HTTP plumbing every backend shares, so that each backend file is only
//! its wire format: endpoint URLs under a configured base URL, one reqwest
//! client per provider (rustls, connect and total timeouts, no redirects, no
//! proxy for a loopback server), sending a request and reading its answer with
//! capped body sizes, and turning every failure into an [`LlmError`] —
//! transport failures by reqwest's error kind, error answers by
//! [`LlmError::from_http`], never by text. It also holds the structured trace
//! of one completion, which every backend emits the same way.

use std::future::Future;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use reqwest::header::HeaderValue;
use reqwest::{RequestBuilder, Response, Url};

use super::{ChatRequest, ChatResponse, LlmError};

/// Largest successful response body we accept; anything bigger is malformed.
const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// How much of an error body we read to find the provider's explanation.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

const USER_AGENT: &str = concat!("passepartout/", env!("CARGO_PKG_VERSION"));

/// `{base_url}/{path}`, tolerating a trailing slash on the base URL; only
/// `http` and `https` URLs are accepted.
pub(super) fn endpoint_url(base_url: &str, path: &str) -> Result<Url, LlmError> {
    let joined = format!("{}/{path}", base_url.trim_end_matches('/'));
    let url = Url::parse(&joined).map_err(|error| LlmError::Config {
        reason: format!("base_url {base_url:?} is not a valid URL: {error}"),
    })?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(LlmError::Config {
            reason: format!("base_url {base_url:?} must be http or https, not {other:?}"),
        }),
    }
}

/// The HTTP client for one provider at `target`: rustls, the connect and total
/// timeouts, no redirects; through `proxy` when one is configured, else
/// through the environment's (`https_proxy`, `all_proxy`) except when
/// `target` is on this machine.
pub(super) fn build_client(
    target: &Url,
    connect_timeout: Duration,
    timeout: Duration,
    proxy: Option<&str>,
) -> Result<reqwest::Client, LlmError> {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .connect_timeout(connect_timeout)
        .timeout(timeout)
        // A redirected POST turns into a GET and may drop the credentials
        // header; a misconfigured base URL should be reported, not followed.
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(USER_AGENT);
    if let Some(proxy) = proxy {
        let proxy = reqwest::Proxy::all(proxy).map_err(|error| LlmError::Config {
            reason: format!("the proxy is not a proxy URL: {}", root_cause(&error)),
        })?;
        builder = builder.proxy(proxy);
    } else if is_loopback(target) {
        // A local model server is never meant to be reached through HTTP(S)_PROXY.
        builder = builder.no_proxy();
    }
    builder.build().map_err(|error| LlmError::Config {
        reason: format!("cannot build the HTTP client: {}", root_cause(&error)),
    })
}

/// A header value carrying a credential, marked sensitive so that reqwest and
/// hyper never print it.
pub(super) fn secret_header(value: &str) -> Result<HeaderValue, LlmError> {
    let mut header = HeaderValue::from_str(value).map_err(|_| LlmError::Config {
        reason: "the API key contains characters not allowed in an HTTP header".to_owned(),
    })?;
    header.set_sensitive(true);
    Ok(header)
}

fn is_loopback(url: &Url) -> bool {
    match url.host_str() {
        Some(host) if host.eq_ignore_ascii_case("localhost") => true,
        Some(host) => host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok_and(|ip| ip.is_loopback()),
        None => false,
    }
}

/// Send `request` (already carrying its credentials) and return the body of a
/// successful answer, or the typed error of any other outcome.
pub(super) async fn send(request: RequestBuilder) -> Result<Vec<u8>, LlmError> {
    read_success_body(open(request).await?).await
}

/// Send `request` and return a successful answer with its body still to be
/// read (a stream), or the typed error of any other outcome.
pub(super) async fn open(request: RequestBuilder) -> Result<Response, LlmError> {
    let response = request.send().await.map_err(transport_error)?;
    if !response.status().is_success() {
        return Err(error_from_response(response).await);
    }
    Ok(response)
}

/// Parse a model-list answer: any JSON object will do, since a web page there
/// means the base URL points somewhere else.
pub(super) fn expect_model_list(body: &[u8]) -> Result<(), LlmError> {
    serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body)
        .map(drop)
        .map_err(|error| LlmError::Malformed {
            reason: format!("the model list is not a JSON object: {error}"),
        })
}

/// The model ids of a model list, `{"data": [{"id": …}, …]}` as both
/// OpenAI's (and its imitators') and Anthropic's `/v1/models` give it.
pub(super) fn model_ids(body: &[u8]) -> Result<Vec<String>, LlmError> {
    #[derive(serde::Deserialize)]
    struct List {
        data: Vec<Model>,
    }
    #[derive(serde::Deserialize)]
    struct Model {
        id: String,
    }
    let list: List = serde_json::from_slice(body).map_err(|error| LlmError::Malformed {
        reason: format!("not a model list: {error}"),
    })?;
    Ok(list.data.into_iter().map(|model| model.id).collect())
}

/// Classify a reqwest failure by its kind. A connect failure (refused, DNS,
/// connect timeout) and a connection lost mid-exchange both mean the provider
/// cannot be talked to right now; only a deadline on an established exchange
/// is a [`LlmError::Timeout`].
pub(super) fn transport_error(error: reqwest::Error) -> LlmError {
    if error.is_connect() {
        LlmError::Unreachable {
            reason: root_cause(&error),
        }
    } else if error.is_timeout() {
        LlmError::Timeout
    } else if error.is_builder() {
        LlmError::Config {
            reason: root_cause(&error),
        }
    } else {
        LlmError::Unreachable {
            reason: root_cause(&error),
        }
    }
}

/// The innermost cause, which names the actual problem ("Connection refused").
fn root_cause(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause = error;
    while let Some(source) = cause.source() {
        cause = source;
    }
    cause.to_string()
}

/// Read a body up to `limit` bytes. Returns the bytes and whether more were cut off.
async fn read_limited(mut response: Response, limit: usize) -> Result<(Vec<u8>, bool), LlmError> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
        let room = limit - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

pub(super) async fn read_success_body(response: Response) -> Result<Vec<u8>, LlmError> {
    if response
        .content_length()
        .is_some_and(|length| length > MAX_RESPONSE_BYTES as u64)
    {
        return Err(too_large());
    }
    match read_limited(response, MAX_RESPONSE_BYTES).await? {
        (body, false) => Ok(body),
        (_, true) => Err(too_large()),
    }
}

fn too_large() -> LlmError {
    LlmError::Malformed {
        reason: format!("the response is larger than {MAX_RESPONSE_BYTES} bytes"),
    }
}

async fn error_from_response(response: Response) -> LlmError {
    let status = response.status();
    let headers = response.headers().clone();
    // The status decides the variant; the body only adds detail, so a body we
    // cannot read (timeout, reset) must not hide the status.
    let body = read_limited(response, MAX_ERROR_BODY_BYTES)
        .await
        .map(|(body, _)| body)
        .unwrap_or_default();
    LlmError::from_http(status, &headers, &body)
}

/// Run one completion, tracing the request and its outcome (tokens, tool
/// calls, elapsed time, or the error) as structured fields.
pub(super) async fn traced_completion(
    provider: &str,
    model: &str,
    request: &ChatRequest,
    completion: impl Future<Output = Result<ChatResponse, LlmError>>,
) -> Result<ChatResponse, LlmError> {
    let started = Instant::now();
    tracing::debug!(
        provider,
        model,
        messages = request.messages.len(),
        tools = request.tools.len(),
        "sending chat completion request"
    );
    let result = completion.await;

    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match &result {
        Ok(response) => tracing::debug!(
            provider,
            model = %response.model,
            input_tokens = response.usage.input_tokens,
            output_tokens = response.usage.output_tokens,
            tool_calls = response.tool_calls.len(),
            elapsed_ms,
            "chat completion answered"
        ),
        Err(error) => tracing::debug!(provider, %error, elapsed_ms, "chat completion failed"),
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for url in ["http://127.0.0.1:1/v1", "http://localhost:1/v1", "http://[::1]:1/v1"] {
            assert!(is_loopback(&Url::parse(url).unwrap()), "{url}");
        }
        assert!(!is_loopback(&Url::parse("https://api.openai.com/v1").unwrap()));
    }

    #[test]
    fn endpoints_join_under_the_base_url() {
        let url = endpoint_url("https://api.anthropic.com/v1/", "messages").unwrap();
        assert_eq!(url.as_str(), "https://api.anthropic.com/v1/messages");
        assert!(matches!(
            endpoint_url("file:///v1", "models"),
            Err(LlmError::Config { .. })
        ));
    }

    #[test]
    fn secret_headers_are_sensitive_and_checked() {
        assert!(secret_header("sk-abc").unwrap().is_sensitive());
        assert!(matches!(secret_header("sk\nabc"), Err(LlmError::Config { .. })));
    }
}
