//! Language-model backends: the provider-neutral chat types the reasoning step
//! speaks, and the [`ChatModel`] trait every backend implements. A backend turns
//! a [`ChatRequest`] into a [`ChatResponse`] or a typed [`LlmError`]; the cascade
//! decides what to do next from the error variant alone, never from its text.
//! Wire formats stay private to each backend (`openai.rs` for any
//! OpenAI-compatible server, `anthropic.rs` for Anthropic's Messages API, and
//! their streamed forms in `*_stream.rs`), the HTTP plumbing they share lives
//! in `http.rs`, and streaming's framing and limits in `sse.rs` and `stream.rs`; the types here are what the
//! core and the store see, and messages are persisted as conversation history.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

mod anthropic;
mod anthropic_stream;
mod configured;
mod endpoint;
mod error;
mod http;
mod note;
mod openai;
mod openai_stream;
mod sse;
mod stream;

pub use anthropic::{AnthropicClient, AnthropicSettings};
pub use configured::{ProviderError, client as provider_client, providers};
pub use endpoint::Endpoint;
pub use error::LlmError;
pub use note::Note;
pub use openai::{OpenAiClient, OpenAiSettings};
pub use stream::{STREAM_IDLE_TIMEOUT, TextSink};

#[cfg(test)]
mod anthropic_stream_client_tests;
#[cfg(test)]
mod stream_tests;
#[cfg(test)]
pub mod testing;
#[cfg(test)]
pub(crate) mod tests;

/// Who wrote a message in a conversation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions framing the conversation.
    System,
    /// A person talking to the assistant.
    User,
    /// The model: a reply, or a request to call tools.
    Assistant,
    /// The result of a tool call, answering an earlier assistant message.
    Tool,
}

/// A tool invocation proposed by the model.
///
/// Model output is data: `arguments` is kept exactly as the model produced it
/// and is only ever parsed (and validated against the tool's schema) by the
/// code that decides whether to run the tool.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Identifier chosen by the provider; the tool result refers to it.
    pub id: String,
    /// Name of the tool the model wants to call.
    pub name: String,
    /// Raw JSON text of the arguments, exactly as the model gave it; never evaluated.
    pub arguments: String,
}

/// One message of a conversation, as sent to and received from a model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChatMessage {
    /// Author of the message.
    pub role: Role,
    /// Text of the message; empty for an assistant message that only calls tools.
    pub content: String,
    /// Tool calls requested by an assistant message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a [`Role::Tool`] message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// Images a person sent with a [`Role::User`] message, shown to a model
    /// that can see them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<Image>,
    /// For a [`Role::User`] message the daemon wrote in the person's
    /// place: what people are shown of it instead of its text. Never sent
    /// to a model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<Note>,
}

/// An image in a person's message or in a tool's answer. The history keeps
/// it by reference (a person's, by the name of its file in the media store);
/// its bytes are carried only in the turn it arrived in, so a later turn
/// shows the model a note instead.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
pub struct Image {
    /// The file's name in the media store: its content hash and extension;
    /// empty for an image a tool returned.
    pub media: String,
    /// Its MIME type, e.g. `image/jpeg`.
    pub mime: String,
    /// The bytes, in the turn the image arrived in; never persisted.
    #[serde(skip)]
    pub bytes: Option<std::sync::Arc<[u8]>>,
    /// The tool whose answer held the image; `None` for a person's photo.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
}

impl std::fmt::Debug for Image {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Image")
            .field("media", &self.media)
            .field("mime", &self.mime)
            .field("bytes", &self.bytes.as_ref().map(|bytes| bytes.len()))
            .field("tool", &self.tool)
            .finish()
    }
}

impl Image {
    /// What a model reads in place of the image: when it cannot see
    /// images, or when the image is from an earlier turn.
    pub fn note(&self) -> String {
        match (&self.tool, self.bytes.is_some()) {
            (None, true) => format!("[a photo ({}) that this model cannot see]", self.media),
            (None, false) => format!("[a photo sent earlier ({}); not shown again]", self.media),
            (Some(tool), true) => format!("[an image ({}) from {tool} that this model cannot see]", self.mime),
            (Some(tool), false) => format!("[an image ({}) {tool} returned earlier; not shown again]", self.mime),
        }
    }

    /// An image `tool` returned, shown to the model in the turn that called it.
    pub fn from_tool(tool: &str, mime: &str, bytes: Vec<u8>) -> Self {
        Self {
            media: String::new(),
            mime: mime.to_owned(),
            bytes: Some(bytes.into()),
            tool: Some(tool.to_owned()),
        }
    }
}

impl ChatMessage {
    fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            images: Vec::new(),
            note: None,
        }
    }

    /// A system (instruction) message.
    pub fn system(text: impl Into<String>) -> Self {
        Self::new(Role::System, text)
    }

    /// A message from the person talking to the assistant.
    pub fn user(text: impl Into<String>) -> Self {
        Self::new(Role::User, text)
    }

    /// A message the daemon writes to the model in the person's place:
    /// the model reads `text`, people are shown `note`.
    pub fn noted(text: impl Into<String>, note: Note) -> Self {
        Self {
            note: Some(note),
            ..Self::new(Role::User, text)
        }
    }

    /// What people are shown of the message: the note's words for one the
    /// daemon wrote (`None` when hidden), else its text.
    pub fn shown(&self) -> Option<String> {
        match &self.note {
            Some(note) => note.shown(),
            None => Some(self.content.clone()).filter(|text| !text.is_empty()),
        }
    }

    /// A plain-text reply from the model.
    pub fn assistant(text: impl Into<String>) -> Self {
        Self::new(Role::Assistant, text)
    }

    /// The result of running the tool call `call_id`.
    pub fn tool_result(call_id: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, text)
        }
    }

    /// The result of the tool call `call_id` with the images it returned.
    pub fn tool_result_with_images(call_id: impl Into<String>, text: impl Into<String>, images: Vec<Image>) -> Self {
        Self {
            images,
            ..Self::tool_result(call_id, text)
        }
    }

    /// A message from the person with `images` beside its text.
    pub fn user_with_images(text: impl Into<String>, images: Vec<Image>) -> Self {
        Self {
            images,
            ..Self::new(Role::User, text)
        }
    }

    /// Keeps the message as the history does: images by reference only.
    pub fn drop_image_bytes(&mut self) {
        for image in &mut self.images {
            image.bytes = None;
        }
    }

    /// An assistant message that requests tool calls (and carries no text).
    pub fn assistant_tool_calls(calls: Vec<ToolCall>) -> Self {
        Self {
            tool_calls: calls,
            ..Self::new(Role::Assistant, String::new())
        }
    }
}

/// A tool offered to the model for native tool calling.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// Name the model uses to call the tool.
    pub name: String,
    /// What the tool does, for the model.
    pub description: String,
    /// JSON schema of the tool's arguments object.
    pub parameters: serde_json::Value,
}

/// Everything a model needs for one completion.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ChatRequest {
    /// The conversation so far, oldest first.
    pub messages: Vec<ChatMessage>,
    /// Tools the model may call; empty means none are offered.
    /// Shared: the same tools go with every request of a turn.
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// The longest answer wanted, in tokens, when shorter than the
    /// provider's own limit (a check that asks one short question); none:
    /// the provider's `max_tokens`, or the server's own limit.
    pub max_tokens: Option<u32>,
}

/// Token accounting reported by the provider (zero when it reports none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens in the prompt.
    pub input_tokens: u64,
    /// Tokens generated.
    pub output_tokens: u64,
}

/// What the model answered.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    /// Reply text, if the model produced any.
    pub content: Option<String>,
    /// Tool calls the model requested, in order.
    pub tool_calls: Vec<ToolCall>,
    /// Token accounting for this completion.
    pub usage: Usage,
    /// Model that actually answered, as reported by the provider.
    pub model: String,
}

/// A chat-completion backend.
///
/// Implementations hold their own HTTP client and timeouts; every method fails
/// with a typed [`LlmError`] the caller can decide on.
#[async_trait]
pub trait ChatModel: Send + Sync {
    /// Provider name from the configuration, e.g. `"local"`.
    fn name(&self) -> &str;

    /// Base URL of the provider, for messages to the user and `doctor`.
    fn endpoint(&self) -> &str;

    /// Ask the model for the next message of the conversation.
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError>;

    /// Like [`ChatModel::complete`], but streamed: the reply's text goes to
    /// `sink` piece by piece as the model writes it, and the same whole
    /// answer (with its usage) is returned at the end. A stream that breaks
    /// off is an error like any other; what `sink` saw of it is then void.
    ///
    /// A backend that cannot stream answers whole and hands the sink the
    /// whole text at once.
    async fn stream(&self, request: &ChatRequest, sink: &dyn TextSink) -> Result<ChatResponse, LlmError> {
        let response = self.complete(request).await?;
        if let Some(text) = response.content.as_deref().filter(|text| !text.is_empty()) {
            sink.text(text);
        }
        Ok(response)
    }

    /// A cheap reachability and authentication check, used by `doctor`.
    async fn probe(&self) -> Result<(), LlmError>;

    /// The models the server offers, by the names a request gives; empty
    /// from a backend that cannot say.
    async fn model_names(&self) -> Result<Vec<String>, LlmError> {
        Ok(Vec::new())
    }

    /// Whether the model is shown images (`vision = true`); one that is not
    /// reads a note in their place.
    fn vision(&self) -> bool {
        false
    }
}
