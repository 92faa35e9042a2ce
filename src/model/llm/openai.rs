//! The OpenAI-compatible chat-completions backend. One client covers OpenAI,
//! OpenRouter, Ollama's `/v1`, llama.cpp server, vLLM and LM Studio: it POSTs
//! `{base_url}/chat/completions` with native tool calling, whole or streamed
//! (`openai_stream.rs` assembles the stream), and probes
//! `{base_url}/models` for `doctor`. The JSON wire format lives in private serde
//! structs converted at this boundary; the HTTP plumbing (client, timeouts,
//! capped reads, error classification by kind and status, never by text) is
//! shared with the other backends in `http.rs`.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use reqwest::header::{AUTHORIZATION, HeaderValue};
use reqwest::{RequestBuilder, Url};
use serde::{Deserialize, Serialize};

use super::error::provider_message;
use super::http;
use super::openai_stream::ChunkAssembly;
use super::stream::{self, StreamLimits, TextSink};
use super::{ChatMessage, ChatModel, ChatRequest, ChatResponse, Endpoint, LlmError, Role, ToolCall, ToolSpec, Usage};

/// How to reach one OpenAI-compatible provider.
pub type OpenAiSettings = Endpoint;

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
    /// Idle timeout and size cap of a streamed answer.
    limits: StreamLimits,
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
        let chat_url = http::endpoint_url(&settings.base_url, "chat/completions")?;
        let models_url = http::endpoint_url(&settings.base_url, "models")?;
        let auth = settings
            .api_key
            .as_ref()
            .map(|key| http::secret_header(&format!("Bearer {}", key.expose())))
            .transpose()?;
        let http = http::build_client(
            &chat_url,
            settings.connect_timeout,
            settings.timeout,
            settings.proxy.as_deref(),
        )?;

        Ok(Self {
            settings,
            http,
            chat_url,
            models_url,
            auth,
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
    pub fn settings(&self) -> &OpenAiSettings {
        &self.settings
    }

    /// Sends `request` with the key, and returns the body of a successful
    /// answer or the typed error of any other.
    async fn fetch(&self, request: RequestBuilder) -> Result<Vec<u8>, LlmError> {
        let request = match &self.auth {
            Some(value) => request.header(AUTHORIZATION, value.clone()),
            None => request,
        };
        http::send(request).await
    }

    /// One streamed completion: the request with `stream: true`, its events
    /// assembled into the answer, or a whole JSON answer from a server that
    /// does not stream.
    async fn streamed(&self, body: &WireRequest<'_>, sink: &dyn TextSink) -> Result<ChatResponse, LlmError> {
        let mut request = self.http.post(self.chat_url.clone()).json(body);
        if let Some(value) = &self.auth {
            request = request.header(AUTHORIZATION, value.clone());
        }
        let response = http::open(request).await?;
        let model = &self.settings.model;
        if !stream::is_event_stream(&response) {
            let answer = parse_completion(&http::read_success_body(response).await?, model)?;
            if let Some(text) = answer.content.as_deref().filter(|text| !text.is_empty()) {
                sink.text(text);
            }
            return Ok(answer);
        }
        stream::read_events(response, ChunkAssembly::new(model), sink, self.limits).await
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
        let body = WireRequest::new(&self.settings.model, request, self.settings.vision);
        let completion = async {
            let bytes = self.fetch(self.http.post(self.chat_url.clone()).json(&body)).await?;
            parse_completion(&bytes, &self.settings.model)
        };
        http::traced_completion(&self.settings.name, &self.settings.model, request, completion).await
    }

    async fn stream(&self, request: &ChatRequest, sink: &dyn TextSink) -> Result<ChatResponse, LlmError> {
        let mut body = WireRequest::new(&self.settings.model, request, self.settings.vision);
        body.stream = true;
        body.stream_options = Some(WireStreamOptions { include_usage: true });
        let completion = self.streamed(&body, sink);
        http::traced_completion(&self.settings.name, &self.settings.model, request, completion).await
    }

    async fn probe(&self) -> Result<(), LlmError> {
        let bytes = self.fetch(self.http.get(self.models_url.clone())).await?;
        http::expect_model_list(&bytes)
    }

    async fn model_names(&self) -> Result<Vec<String>, LlmError> {
        let bytes = self.fetch(self.http.get(self.models_url.clone())).await?;
        http::model_ids(&bytes)
    }

    fn vision(&self) -> bool {
        self.settings.vision
    }
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
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    stream: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    stream_options: Option<WireStreamOptions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
}

/// Asks for the usage in a last chunk of the stream.
#[derive(Serialize)]
struct WireStreamOptions {
    include_usage: bool,
}

impl<'a> WireRequest<'a> {
    /// The request for `model`; images go as `image_url` parts when it has
    /// `vision`, else as notes in the text.
    fn new(model: &'a str, request: &'a ChatRequest, vision: bool) -> Self {
        Self {
            model,
            messages: wire_messages(&request.messages, vision),
            tools: request.tools.iter().map(WireTool::from).collect(),
            stream: false,
            stream_options: None,
            max_tokens: request.max_tokens,
        }
    }
}

#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    /// `null` only for an assistant message that just calls tools.
    content: Option<WireContent<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    tool_calls: Vec<WireToolCallOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
}

/// A message's content: its text, or parts when it carries images.
#[derive(Serialize)]
#[serde(untagged)]
enum WireContent<'a> {
    Text(Cow<'a, str>),
    Parts(Vec<WirePart<'a>>),
}

#[derive(Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WirePart<'a> {
    Text { text: Cow<'a, str> },
    ImageUrl { image_url: WireImageUrl },
}

#[derive(Serialize)]
struct WireImageUrl {
    /// A `data:` URI holding the image.
    url: String,
}

/// The conversation as messages. A `tool` message holds text only, so the
/// images tool calls returned are shown to a model with `vision` in a user
/// message after the run of tool results (each result saying so); without
/// vision, or once their bytes are gone, they are notes in the result.
fn wire_messages(messages: &[ChatMessage], vision: bool) -> Vec<WireMessage<'_>> {
    let mut wire = Vec::with_capacity(messages.len());
    let mut returned: Vec<WirePart<'_>> = Vec::new();
    for message in messages {
        if message.role != Role::Tool && !returned.is_empty() {
            wire.push(images_returned(std::mem::take(&mut returned)));
        }
        let shown = vision && message.role == Role::Tool && message.images.iter().any(|image| image.bytes.is_some());
        if !shown {
            wire.push(WireMessage::new(message, vision));
            continue;
        }
        let mut text = message.content.clone();
        for image in &message.images {
            if !text.is_empty() {
                text.push('\n');
            }
            match (&image.bytes, &image.tool) {
                (Some(bytes), tool) => {
                    let tool = tool.as_deref().unwrap_or("the tool");
                    text.push_str(&format!(
                        "[an image ({}) from {tool}: shown after the results]",
                        image.mime
                    ));
                    returned.push(WirePart::Text {
                        text: Cow::Owned(format!("[the image ({}) {tool} returned]", image.mime)),
                    });
                    returned.push(image_part(&image.mime, bytes));
                }
                (None, _) => text.push_str(&image.note()),
            }
        }
        wire.push(WireMessage {
            content: Some(WireContent::Text(Cow::Owned(text))),
            ..WireMessage::new(message, false)
        });
    }
    if !returned.is_empty() {
        wire.push(images_returned(returned));
    }
    wire
}

/// The user message that shows the images tool results returned.
fn images_returned(parts: Vec<WirePart<'_>>) -> WireMessage<'_> {
    WireMessage {
        role: "user",
        content: Some(WireContent::Parts(parts)),
        tool_calls: Vec::new(),
        tool_call_id: None,
    }
}

/// An image as an `image_url` part holding a `data:` URI.
fn image_part(mime: &str, bytes: &[u8]) -> WirePart<'static> {
    WirePart::ImageUrl {
        image_url: WireImageUrl {
            url: format!("data:{mime};base64,{}", BASE64.encode(bytes)),
        },
    }
}

/// The content of `message`: its images as parts for a model with `vision`
/// (an image from an earlier turn, whose bytes are not kept, as a note),
/// else as notes after the text.
fn content(message: &ChatMessage, vision: bool) -> WireContent<'_> {
    if message.images.is_empty() {
        return WireContent::Text(Cow::Borrowed(&message.content));
    }
    if vision && message.images.iter().any(|image| image.bytes.is_some()) {
        let mut parts = Vec::with_capacity(message.images.len() + 1);
        if !message.content.is_empty() {
            parts.push(WirePart::Text {
                text: Cow::Borrowed(&message.content),
            });
        }
        for image in &message.images {
            match &image.bytes {
                Some(bytes) => parts.push(image_part(&image.mime, bytes)),
                None => parts.push(WirePart::Text {
                    text: Cow::Owned(image.note()),
                }),
            }
        }
        return WireContent::Parts(parts);
    }
    let mut text = message.content.clone();
    for image in &message.images {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&image.note());
    }
    WireContent::Text(Cow::Owned(text))
}

impl<'a> WireMessage<'a> {
    fn new(message: &'a ChatMessage, vision: bool) -> Self {
        let role = match message.role {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        };
        let content = if message.content.is_empty() && !message.tool_calls.is_empty() {
            None
        } else {
            Some(content(message, vision))
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
