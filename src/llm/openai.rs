//! The OpenAI-compatible chat-completions backend. One client covers OpenAI,
//! OpenRouter, Ollama's `/v1`, llama.cpp server, vLLM and LM Studio: it POSTs
//! `{base_url}/chat/completions` with native tool calling, and probes
//! `{base_url}/models` for `doctor`. The JSON wire format lives in private serde
//! structs converted at this boundary, and every failure leaves as an
//! [`LlmError`] variant: transport failures classified here by reqwest's error
//! kind, error answers by [`LlmError::from_http`] — never by text.

use crate::config::Secret;
use std::fmt;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use reqwest::{RequestBuilder, Response, Url};
use serde::{Deserialize, Serialize};

use super::error::provider_message;
use super::{ChatMessage, ChatModel, ChatRequest, ChatResponse, LlmError, Role, ToolCall, ToolSpec, Usage};

/// Largest successful response body we accept; anything bigger is malformed.
const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// How much of an error body we read to find the provider's explanation.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

const USER_AGENT: &str = concat!("passepartout/", env!("CARGO_PKG_VERSION"));

/// How to reach one OpenAI-compatible provider.
#[derive(Clone, PartialEq, Eq)]
pub struct OpenAiSettings {
    /// Provider name from the configuration, e.g. `"local"`.
    pub name: String,
    /// Base URL of the API, e.g. `http://127.0.0.1:11434/v1`; a trailing slash is fine.
    pub base_url: String,
    /// Model to ask, e.g. `llama3.2`.
    pub model: String,
    /// Bearer token, if the provider wants one. Never printed by `Debug`.
    pub api_key: Option<Secret>,
    /// Longest wait for the TCP (and TLS) connection to be established.
    pub connect_timeout: Duration,
    /// Longest wait for a whole request, from sending it to the last byte of the answer.
    pub timeout: Duration,
}

impl fmt::Debug for OpenAiSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiSettings")
            .field("name", &self.name)
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("connect_timeout", &self.connect_timeout)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A [`ChatModel`] speaking the OpenAI chat-completions protocol.
///
/// Cheap to clone: clones share one connection pool.
#[derive(Clone)]
pub struct OpenAiClient {
    settings: OpenAiSettings,
    http: reqwest::Client,
    chat_url: Url,
    models_url: Url,
    /// Pre-built `Authorization` header, marked sensitive.
    auth: Option<HeaderValue>,
}

impl fmt::Debug for OpenAiClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiClient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl OpenAiClient {
    /// Validate the settings and build the HTTP client (rustls, connect and
    /// total timeouts, no redirects; no proxy for a loopback base URL).
    pub fn new(settings: OpenAiSettings) -> Result<Self, LlmError> {
        let chat_url = endpoint_url(&settings.base_url, "chat/completions")?;
        let models_url = endpoint_url(&settings.base_url, "models")?;
        let auth = settings.api_key.as_ref().map(|key| bearer(key.expose())).transpose()?;

        let mut builder = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(settings.connect_timeout)
            .timeout(settings.timeout)
            // A redirected POST turns into a GET and may drop the Authorization
            // header; a misconfigured base URL should be reported, not followed.
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(USER_AGENT);
        if is_loopback(&chat_url) {
            // A local model server is never meant to be reached through HTTP(S)_PROXY.
            builder = builder.no_proxy();
        }
        let http = builder.build().map_err(|error| LlmError::Config {
            reason: format!("cannot build the HTTP client: {}", root_cause(&error)),
        })?;

        Ok(Self {
            settings,
            http,
            chat_url,
            models_url,
            auth,
        })
    }

    /// The settings this client was built from.
    pub fn settings(&self) -> &OpenAiSettings {
        &self.settings
    }

    fn authorized(&self, request: RequestBuilder) -> RequestBuilder {
        match &self.auth {
            Some(value) => request.header(AUTHORIZATION, value.clone()),
            None => request,
        }
    }

    /// Sends `request` with the key, and returns the body of a successful
    /// answer or the typed error of any other.
    async fn fetch(&self, request: RequestBuilder) -> Result<Vec<u8>, LlmError> {
        let response = self.authorized(request).send().await.map_err(transport_error)?;
        if !response.status().is_success() {
            return Err(error_from_response(response).await);
        }
        read_success_body(response).await
    }
}

#[async_trait]
impl ChatModel for OpenAiClient {
    fn name(&self) -> &str {
        &self.settings.name
    }

    fn endpoint(&self) -> &str {
        &self.settings.base_url
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let started = Instant::now();
        tracing::debug!(
            provider = %self.settings.name,
            model = %self.settings.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            "sending chat completion request"
        );
        let body = WireRequest::new(&self.settings.model, request);
        let result = async {
            let bytes = self.fetch(self.http.post(self.chat_url.clone()).json(&body)).await?;
            parse_completion(&bytes, &self.settings.model)
        }
        .await;

        let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
        match &result {
            Ok(response) => tracing::debug!(
                provider = %self.settings.name,
                model = %response.model,
                input_tokens = response.usage.input_tokens,
                output_tokens = response.usage.output_tokens,
                tool_calls = response.tool_calls.len(),
                elapsed_ms,
                "chat completion answered"
            ),
            Err(error) => tracing::debug!(
                provider = %self.settings.name,
                %error,
                elapsed_ms,
                "chat completion failed"
            ),
        }
        result
    }

    async fn probe(&self) -> Result<(), LlmError> {
        let bytes = self.fetch(self.http.get(self.models_url.clone())).await?;
        // Any JSON object will do: a web page here means the base URL is wrong.
        serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&bytes)
            .map(drop)
            .map_err(|error| LlmError::Malformed {
                reason: format!("the model list is not a JSON object: {error}"),
            })
    }
}

/// `{base_url}/{path}`, tolerating a trailing slash on the base URL.
fn endpoint_url(base_url: &str, path: &str) -> Result<Url, LlmError> {
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

fn bearer(key: &str) -> Result<HeaderValue, LlmError> {
    let mut value = HeaderValue::from_str(&format!("Bearer {key}")).map_err(|_| LlmError::Config {
        reason: "the API key contains characters not allowed in an HTTP header".to_owned(),
    })?;
    value.set_sensitive(true);
    Ok(value)
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

/// Classify a reqwest failure by its kind. A connect failure (refused, DNS,
/// connect timeout) and a connection lost mid-exchange both mean the provider
/// cannot be talked to right now; only a deadline on an established exchange
/// is a [`LlmError::Timeout`].
fn transport_error(error: reqwest::Error) -> LlmError {
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

async fn read_success_body(response: Response) -> Result<Vec<u8>, LlmError> {
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

fn parse_completion(body: &[u8], requested_model: &str) -> Result<ChatResponse, LlmError> {
    let wire: WireResponse = serde_json::from_slice(body).map_err(|error| LlmError::Malformed {
        reason: format!("not a chat completion: {error}"),
    })?;
    let Some(choice) = wire.choices.unwrap_or_default().into_iter().next() else {
        let reason = match provider_message(body) {
            Some(message) => format!("no choices; the provider said: {message}"),
            None => "the response has no choices".to_owned(),
        };
        return Err(LlmError::Malformed { reason });
    };

    let tool_calls = choice
        .message
        .tool_calls
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, call)| ToolCall {
            // Some local servers omit ids; the tool result still needs one to refer to.
            id: call
                .id
                .filter(|id| !id.is_empty())
                .unwrap_or_else(|| format!("call_{index}")),
            name: call.function.name,
            arguments: match call.function.arguments {
                None | Some(serde_json::Value::Null) => String::new(),
                Some(serde_json::Value::String(text)) => text,
                // A server that sends the arguments as an object: keep its JSON text.
                Some(other) => other.to_string(),
            },
        })
        .collect();
    let usage = wire.usage.unwrap_or_default();

    Ok(ChatResponse {
        content: choice.message.content,
        tool_calls,
        usage: Usage {
            input_tokens: usage.prompt_tokens.unwrap_or(0),
            output_tokens: usage.completion_tokens.unwrap_or(0),
        },
        model: wire
            .model
            .filter(|model| !model.is_empty())
            .unwrap_or_else(|| requested_model.to_owned()),
    })
}

// ---- wire format: requests ----

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
}

impl<'a> WireRequest<'a> {
    fn new(model: &'a str, request: &'a ChatRequest) -> Self {
        Self {
            model,
            messages: request.messages.iter().map(WireMessage::from).collect(),
            tools: request.tools.iter().map(WireTool::from).collect(),
        }
    }
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// `null` only for an assistant message that just calls tools.
    content: Option<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

impl<'a> From<&'a ChatMessage> for WireMessage<'a> {
    fn from(message: &'a ChatMessage) -> Self {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let content = if message.content.is_empty() && !message.tool_calls.is_empty() {
            None
        } else {
            Some(message.content.as_str())
        };
        Self {
            role,
            content,
            tool_calls: message
                .tool_calls
                .iter()
                .map(|call| WireToolCallOut {
                    id: &call.id,
                    kind: "function",
                    function: WireFunctionCallOut {
                        name: &call.name,
                        arguments: &call.arguments,
                    },
                })
                .collect(),
            tool_call_id: message.tool_call_id.as_deref(),
        }
    }
}

#[derive(Serialize)]
struct WireToolCallOut<'a> {
    id: &'a str,
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionCallOut<'a>,
}

#[derive(Serialize)]
struct WireFunctionCallOut<'a> {
    name: &'a str,
    arguments: &'a str,
}

#[derive(Serialize)]
struct WireTool<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    function: WireFunctionSpec<'a>,
}

impl<'a> From<&'a ToolSpec> for WireTool<'a> {
    fn from(tool: &'a ToolSpec) -> Self {
        Self {
            kind: "function",
            function: WireFunctionSpec {
                name: &tool.name,
                description: &tool.description,
                parameters: &tool.parameters,
            },
        }
    }
}

#[derive(Serialize)]
struct WireFunctionSpec<'a> {
    name: &'a str,
    description: &'a str,
    parameters: &'a serde_json::Value,
}

// ---- wire format: responses ----

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    message: WireResponseMessage,
}

#[derive(Deserialize)]
struct WireResponseMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCallIn>>,
}

#[derive(Deserialize)]
struct WireToolCallIn {
    #[serde(default)]
    id: Option<String>,
    function: WireFunctionCallIn,
}

#[derive(Deserialize)]
struct WireFunctionCallIn {
    name: String,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

#[derive(Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

#[cfg(test)]
mod unit_tests {
    use super::*;

    #[test]
    fn loopback_hosts_are_recognised() {
        for url in ["http://127.0.0.1:1/v1", "http://localhost:1/v1", "http://[::1]:1/v1"] {
            assert!(is_loopback(&Url::parse(url).unwrap()), "{url}");
        }
        assert!(!is_loopback(&Url::parse("https://api.openai.com/v1").unwrap()));
    }
}
