//! The Anthropic Messages API backend. It POSTs `{base_url}/messages` with
//! native tool use, whole or streamed (`anthropic_stream.rs` assembles the
//! stream), and probes `{base_url}/models` for `doctor`, authenticating
//! with `x-api-key` and pinning `anthropic-version`. The wire format lives in
//! private serde structs converted at this boundary: system messages become the
//! top-level `system` string, tool calls become `tool_use` blocks and tool
//! results `tool_result` blocks in a user message, and consecutive messages of
//! one role are merged because the API requires strict user/assistant
//! alternation. The HTTP plumbing (client, timeouts, capped reads, error
//! classification by kind and status, never by text) is shared with the other
//! backends in `http.rs`.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{RequestBuilder, Url};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::anthropic_stream::EventAssembly;
use super::error::provider_message;
use super::http;
use super::stream::{self, StreamLimits, TextSink};
use super::{
    ChatMessage, ChatModel, ChatRequest, ChatResponse, Endpoint, Image, LlmError, Role, ToolCall, ToolSpec, Usage,
};

/// The API version this backend speaks, sent as `anthropic-version`.
const API_VERSION: &str = "2023-06-01";

const API_KEY_HEADER: HeaderName = HeaderName::from_static("x-api-key");
const API_VERSION_HEADER: HeaderName = HeaderName::from_static("anthropic-version");

/// Separates system messages joined into the one top-level `system` prompt.
const SYSTEM_SEPARATOR: &str = "\n\n";

/// How many models a list asks for: the most one page of Anthropic's gives.
const MODEL_LIST_LIMIT: &str = "1000";

/// The key under which tool-call arguments that are not a JSON object are sent
/// back to the API; see [`tool_input`].
const RAW_ARGUMENTS_KEY: &str = "_raw";

/// How to reach Anthropic (or a gateway speaking its Messages API).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AnthropicSettings {
    /// Name, base URL (normally [`AnthropicSettings::DEFAULT_BASE_URL`]),
    /// model, key (sent as `x-api-key`) and timeouts.
    pub endpoint: Endpoint,
    /// Most tokens the model may generate in one answer (required by the API).
    pub max_tokens: u32,
}

impl AnthropicSettings {
    /// Anthropic's own API.
    pub const DEFAULT_BASE_URL: &str = "https://api.anthropic.com/v1";
}

/// A [`ChatModel`] speaking Anthropic's Messages API.
///
/// Cheap to clone: clones share one connection pool.
#[derive(Clone)]
pub struct AnthropicClient {
    settings: AnthropicSettings,
    http: reqwest::Client,
    messages_url: Url,
    models_url: Url,
    /// `x-api-key` (marked sensitive) and `anthropic-version`, sent on every request.
    headers: HeaderMap,
    /// Idle timeout and size cap of a streamed answer.
    limits: StreamLimits,
}

impl fmt::Debug for AnthropicClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AnthropicClient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl AnthropicClient {
    /// Check the settings (URL, key, `max_tokens`) and build the HTTP client,
    /// configured as every backend's is (see `http.rs`).
    pub fn new(settings: AnthropicSettings) -> Result<Self, LlmError> {
        let messages_url = http::endpoint_url(&settings.endpoint.base_url, "messages")?;
        let models_url = http::endpoint_url(&settings.endpoint.base_url, "models")?;
        if settings.max_tokens == 0 {
            return Err(LlmError::Config {
                reason: "max_tokens must be at least 1".to_owned(),
            });
        }
        let mut headers = HeaderMap::new();
        headers.insert(API_VERSION_HEADER, HeaderValue::from_static(API_VERSION));
        if let Some(key) = &settings.endpoint.api_key {
            headers.insert(API_KEY_HEADER, http::secret_header(key.expose())?);
        }
        let http = http::build_client(
            &messages_url,
            settings.endpoint.connect_timeout,
            settings.endpoint.timeout,
            settings.endpoint.proxy.as_deref(),
        )?;

        Ok(Self {
            settings,
            http,
            messages_url,
            models_url,
            headers,
            limits: StreamLimits::default(),
        })
    }

    /// The same client, giving up on a streamed answer after `idle` without
    /// a chunk (by default [`super::STREAM_IDLE_TIMEOUT`]).
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.limits.idle = idle;
        self
    }

    /// The same client, refusing a stream longer than `bytes`.
    #[cfg(test)]
    pub(super) fn with_stream_cap(mut self, bytes: usize) -> Self {
        self.limits.max_bytes = bytes;
        self
    }

    /// The settings this client was built from.
    pub fn settings(&self) -> &AnthropicSettings {
        &self.settings
    }

    /// Sends `request` with the key and API version, and returns the body of a
    /// successful answer or the typed error of any other.
    async fn fetch(&self, request: RequestBuilder) -> Result<Vec<u8>, LlmError> {
        http::send(request.headers(self.headers.clone())).await
    }

    /// One streamed completion: the request with `stream: true` and its
    /// events assembled into the answer.
    async fn streamed(&self, body: &WireRequest<'_>, sink: &dyn TextSink) -> Result<ChatResponse, LlmError> {
        let post = self.http.post(self.messages_url.clone()).json(body);
        let response = http::open(post.headers(self.headers.clone())).await?;
        let model = &self.settings.endpoint.model;
        if !stream::is_event_stream(&response) {
            // A gateway that answered whole after all.
            let answer = parse_message(&http::read_success_body(response).await?, model)?;
            if let Some(text) = answer.content.as_deref() {
                sink.text(text);
            }
            return Ok(answer);
        }
        stream::read_events(response, EventAssembly::new(model), sink, self.limits).await
    }
}

#[async_trait]
impl ChatModel for AnthropicClient {
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let settings = &self.settings;
        let vision = settings.endpoint.vision;
        let body = WireRequest::new(&settings.endpoint.model, settings.max_tokens, request, vision);
        let post = self.http.post(self.messages_url.clone()).json(&body);
        let completion = async { parse_message(&self.fetch(post).await?, &settings.endpoint.model) };
        http::traced_completion(&settings.endpoint.name, &settings.endpoint.model, request, completion).await
    }

    async fn stream(&self, request: &ChatRequest, sink: &dyn TextSink) -> Result<ChatResponse, LlmError> {
        let settings = &self.settings;
        let vision = settings.endpoint.vision;
        let mut body = WireRequest::new(&settings.endpoint.model, settings.max_tokens, request, vision);
        body.stream = true;
        let completion = self.streamed(&body, sink);
        http::traced_completion(&settings.endpoint.name, &settings.endpoint.model, request, completion).await
    }

    async fn probe(&self) -> Result<(), LlmError> {
        let list = self.fetch(self.http.get(self.models_url.clone())).await?;
        http::expect_model_list(&list)
    }

    async fn model_names(&self) -> Result<Vec<String>, LlmError> {
        // One page of the most it gives, newest first: enough to choose from.
        let mut url = self.models_url.clone();
        url.query_pairs_mut().append_pair("limit", MODEL_LIST_LIMIT);
        let list = self.fetch(self.http.get(url)).await?;
        http::model_ids(&list)
    }

    fn name(&self) -> &str {
        &self.settings.endpoint.name
    }

    fn endpoint(&self) -> &str {
        &self.settings.endpoint.base_url
    }

    fn vision(&self) -> bool {
        self.settings.endpoint.vision
    }
}

/// Convert a Messages API answer: text blocks concatenated into the reply,
/// `tool_use` blocks into tool calls (their `input` object as JSON text), and
/// blocks of other types (such as `thinking`) skipped.
fn parse_message(body: &[u8], requested_model: &str) -> Result<ChatResponse, LlmError> {
    let wire: WireResponse = serde_json::from_slice(body).map_err(|error| {
        let reason = match provider_message(body) {
            Some(message) => format!("not a message: {error}; the provider said: {message}"),
            None => format!("not a message: {error}"),
        };
        LlmError::Malformed { reason }
    })?;

    let mut text = String::new();
    let mut tool_calls = Vec::new();
    for (index, block) in wire.content.into_iter().enumerate() {
        match block {
            WireContentIn::Text { text: part } => text.push_str(&part),
            WireContentIn::ToolUse { id, name, input } => tool_calls.push(ToolCall {
                id: if id.is_empty() { format!("toolu_{index}") } else { id },
                name,
                arguments: match input {
                    Value::Null => "{}".to_owned(),
                    input => input.to_string(),
                },
            }),
            WireContentIn::Other => {}
        }
    }
    let usage = wire.usage.unwrap_or_default();
    // A `max_tokens` stop may leave no content at all: that is returned as is.
    tracing::debug!(
        stop_reason = wire.stop_reason.as_deref().unwrap_or(""),
        "anthropic message stopped"
    );

    Ok(ChatResponse {
        content: Some(text).filter(|text| !text.is_empty()),
        tool_calls,
        usage: Usage {
            // Prompt-cache reads and writes are billed apart but are still prompt.
            input_tokens: [
                usage.input_tokens,
                usage.cache_creation_input_tokens,
                usage.cache_read_input_tokens,
            ]
            .into_iter()
            .flatten()
            .sum(),
            output_tokens: usage.output_tokens.unwrap_or(0),
        },
        model: wire
            .model
            .filter(|model| !model.is_empty())
            .unwrap_or_else(|| requested_model.to_owned()),
    })
}

/// The `input` object of a `tool_use` block, from a call's raw argument text.
///
/// The API only accepts a JSON object here, but our history keeps arguments
/// exactly as a model produced them, and a model (possibly another provider's,
/// earlier in the conversation) may have produced something else. Empty text
/// is a call without arguments, `{}`. Anything that is not a JSON object —
/// invalid JSON, an array, a string — is wrapped as `{"_raw": "<text>"}`
/// rather than dropped: the request stays valid, and the model still sees
/// exactly what it sent, which the tool result that followed (normally an
/// argument error) refers to.
fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return Value::Object(Map::new());
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(object @ Value::Object(_)) => object,
        _ => {
            let mut wrapped = Map::new();
            wrapped.insert(RAW_ARGUMENTS_KEY.to_owned(), Value::String(arguments.to_owned()));
            Value::Object(wrapped)
        }
    }
}

// ---- wire format: requests ----

#[derive(Serialize)]
struct WireRequest<'a> {
    model: &'a str,
    max_tokens: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    system: Option<String>,
    messages: Vec<WireMessage<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tools: Vec<WireTool<'a>>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
}

impl<'a> WireRequest<'a> {
    fn new(model: &'a str, max_tokens: u32, request: &'a ChatRequest, vision: bool) -> Self {
        Self {
            model,
            max_tokens: request.max_tokens.map_or(max_tokens, |wanted| wanted.min(max_tokens)),
            system: system_prompt(&request.messages),
            messages: wire_messages(&request.messages, vision),
            tools: request.tools.iter().map(WireTool::from).collect(),
            stream: false,
        }
    }
}

/// Every non-empty system message, in order, joined with blank lines; `None`
/// when there is none.
fn system_prompt(messages: &[ChatMessage]) -> Option<String> {
    let parts: Vec<&str> = messages
        .iter()
        .filter(|message| message.role == Role::System && !message.content.trim().is_empty())
        .map(|message| message.content.as_str())
        .collect();
    (!parts.is_empty()).then(|| parts.join(SYSTEM_SEPARATOR))
}

/// The conversation as strictly alternating user and assistant messages.
///
/// System messages are left out (they travel in `system`); tool results become
/// `tool_result` blocks of a user message; consecutive messages of one role
/// (several tool results, a tool result then the user's next words) merge into
/// one message, with `tool_result` blocks first as the API requires. Empty text
/// is never sent as a block, and a message left with no block is dropped.
/// A person's images go first, as `image` blocks for a model with `vision`
/// (one from an earlier turn, whose bytes are not kept, as a note), else as
/// notes; a tool's images go inside its `tool_result`, after its text.
fn wire_messages(messages: &[ChatMessage], vision: bool) -> Vec<WireMessage<'_>> {
    let mut wire: Vec<WireMessage<'_>> = Vec::new();
    for message in messages {
        let text = Some(message.content.as_str())
            .filter(|text| !text.trim().is_empty())
            .map(|text| WireContentOut::Text {
                text: Cow::Borrowed(text),
            });
        let (role, blocks): (WireRole, Vec<WireContentOut<'_>>) = match message.role {
            Role::System => continue,
            Role::User => {
                let images = message.images.iter().map(|image| image_block(image, vision));
                (WireRole::User, images.chain(text).collect())
            }
            Role::Assistant => {
                let calls = message.tool_calls.iter().map(|call| WireContentOut::ToolUse {
                    id: &call.id,
                    name: &call.name,
                    input: tool_input(&call.arguments),
                });
                (WireRole::Assistant, text.into_iter().chain(calls).collect())
            }
            Role::Tool => (
                WireRole::User,
                vec![WireContentOut::ToolResult {
                    // A result without the id of its call is a bug upstream; the
                    // API rejects it, as the OpenAI backend's provider would.
                    tool_use_id: message.tool_call_id.as_deref(),
                    content: tool_result_content(message, vision),
                }],
            ),
        };
        if blocks.is_empty() {
            continue;
        }
        match wire.last_mut() {
            Some(last) if last.role == role => last.content.extend(blocks),
            _ => wire.push(WireMessage { role, content: blocks }),
        }
    }
    for message in &mut wire {
        // Stable: tool results keep their order, and so does the rest.
        message
            .content
            .sort_by_key(|block| !matches!(block, WireContentOut::ToolResult { .. }));
    }
    wire
}

/// `image` as a block: the image itself for a model with `vision` while its
/// bytes are kept (in the turn it arrived in), else a note.
fn image_block(image: &Image, vision: bool) -> WireContentOut<'_> {
    match &image.bytes {
        Some(bytes) if vision => WireContentOut::Image {
            source: WireImageSource {
                kind: "base64",
                media_type: &image.mime,
                data: BASE64.encode(bytes),
            },
        },
        _ => WireContentOut::Text {
            text: Cow::Owned(image.note()),
        },
    }
}

/// A tool result's content: its text alone, or, when the tool returned
/// images, the text and then each image as a block.
fn tool_result_content(message: &ChatMessage, vision: bool) -> WireToolResult<'_> {
    if message.images.is_empty() {
        return WireToolResult::Text(&message.content);
    }
    let text = Some(message.content.as_str())
        .filter(|text| !text.trim().is_empty())
        .map(|text| WireContentOut::Text {
            text: Cow::Borrowed(text),
        });
    let images = message.images.iter().map(|image| image_block(image, vision));
    WireToolResult::Blocks(text.into_iter().chain(images).collect())
}

#[derive(Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum WireRole {
    User,
    Assistant,
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: WireRole,
    content: Vec<WireContentOut<'a>>,
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireContentOut<'a> {
    Text {
        text: Cow<'a, str>,
    },
    Image {
        source: WireImageSource<'a>,
    },
    ToolUse {
        id: &'a str,
        name: &'a str,
        input: Value,
    },
    ToolResult {
        #[serde(skip_serializing_if = "Option::is_none")]
        tool_use_id: Option<&'a str>,
        content: WireToolResult<'a>,
    },
}

/// A `tool_result`'s content: a string, or text and image blocks.
#[derive(Serialize)]
#[serde(untagged)]
enum WireToolResult<'a> {
    Text(&'a str),
    Blocks(Vec<WireContentOut<'a>>),
}

#[derive(Serialize)]
struct WireImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    media_type: &'a str,
    data: String,
}

#[derive(Serialize)]
struct WireTool<'a> {
    name: &'a str,
    description: &'a str,
    input_schema: &'a Value,
}

impl<'a> From<&'a ToolSpec> for WireTool<'a> {
    fn from(tool: &'a ToolSpec) -> Self {
        Self {
            name: &tool.name,
            description: &tool.description,
            input_schema: &tool.parameters,
        }
    }
}

// ---- wire format: responses ----

#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    model: Option<String>,
    content: Vec<WireContentIn>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireContentIn {
    Text {
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// `thinking`, `redacted_thinking`, server-side tool blocks, and whatever
    /// the API adds later: nothing the core acts on.
    #[serde(other)]
    Other,
}

#[derive(Default, Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

#[cfg(test)]
#[path = "anthropic_tests.rs"]
pub(super) mod tests;
