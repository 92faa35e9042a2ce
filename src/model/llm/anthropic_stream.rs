//! The Anthropic Messages stream: `message_start` (the model and the prompt's
//! usage), then per content block a `content_block_start`, its
//! `content_block_delta`s (`text_delta` pieces of text, `input_json_delta`
//! slices of a tool's input JSON, cut anywhere) and `content_block_stop`;
//! then `message_delta` (stop reason, output usage) and `message_stop`, with
//! `ping`s anywhere. The pieces are assembled into the same [`ChatResponse`]
//! the non-streaming path returns (a tool's input as compact JSON text, `{}`
//! when empty). Only `message_stop` makes an answer whole; an `error` event
//! is classified by its error type as the same error sent as an HTTP answer
//! would be.

use std::collections::BTreeMap;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::Value;

use super::sse::SseEvent;
use super::stream::{Assembly, TextSink, cut_short, parse_data};
use super::{ChatResponse, LlmError, ToolCall, Usage};

/// The answer being assembled.
pub(super) struct EventAssembly {
    requested_model: String,
    model: Option<String>,
    text: String,
    /// `tool_use` blocks by their index.
    calls: BTreeMap<u64, PartialCall>,
    input_tokens: u64,
    output_tokens: u64,
    stop_reason: Option<String>,
}

struct PartialCall {
    id: String,
    name: String,
    /// The input as the `content_block_start` gave it (normally `{}`).
    start_input: Value,
    /// The slices of `input_json_delta`, joined.
    json: String,
}

impl PartialCall {
    /// The arguments as the whole answer gives them: the input object's JSON.
    fn arguments(self) -> String {
        let input = if self.json.trim().is_empty() {
            self.start_input
        } else {
            match serde_json::from_str::<Value>(&self.json) {
                Ok(input) => input,
                // Model output is data: kept as it came, for the tool's
                // argument check to refuse.
                Err(_) => return self.json,
            }
        };
        match input {
            Value::Null => "{}".to_owned(),
            input => input.to_string(),
        }
    }
}

impl EventAssembly {
    pub(super) fn new(requested_model: &str) -> Self {
        Self {
            requested_model: requested_model.to_owned(),
            model: None,
            text: String::new(),
            calls: BTreeMap::new(),
            input_tokens: 0,
            output_tokens: 0,
            stop_reason: None,
        }
    }

    fn usage(&mut self, usage: &WireUsage) {
        // Prompt-cache reads and writes are billed apart but are still prompt.
        let input = [
            usage.input_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
        ];
        if input.iter().any(Option::is_some) {
            self.input_tokens = input.into_iter().flatten().sum();
        }
        if let Some(output) = usage.output_tokens {
            self.output_tokens = output;
        }
    }
}

impl Assembly for EventAssembly {
    fn event(&mut self, event: &SseEvent, sink: &dyn TextSink) -> Result<bool, LlmError> {
        let wire: WireEvent = parse_data(event, "a Messages API event")?;
        match wire {
            WireEvent::MessageStart { message } => {
                self.model = message.model.filter(|model| !model.is_empty());
                if let Some(usage) = &message.usage {
                    self.usage(usage);
                }
            }
            WireEvent::ContentBlockStart { index, content_block } => match content_block {
                WireBlockStart::Text { text } => {
                    if !text.is_empty() {
                        sink.text(&text);
                        self.text.push_str(&text);
                    }
                }
                WireBlockStart::ToolUse { id, name, input } => {
                    let call = PartialCall {
                        id: if id.is_empty() { format!("toolu_{index}") } else { id },
                        name,
                        start_input: input,
                        json: String::new(),
                    };
                    self.calls.insert(index, call);
                }
                WireBlockStart::Other => {}
            },
            WireEvent::ContentBlockDelta { index, delta } => match delta {
                WireDelta::TextDelta { text } => {
                    if !text.is_empty() {
                        sink.text(&text);
                        self.text.push_str(&text);
                    }
                }
                WireDelta::InputJsonDelta { partial_json } => match self.calls.get_mut(&index) {
                    Some(call) => call.json.push_str(&partial_json),
                    None => {
                        return Err(LlmError::Malformed {
                            reason: format!("tool input for block {index}, which is not a tool_use block"),
                        });
                    }
                },
                WireDelta::Other => {}
            },
            WireEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.and_then(|delta| delta.stop_reason) {
                    self.stop_reason = Some(reason);
                }
                if let Some(usage) = &usage {
                    self.usage(usage);
                }
            }
            WireEvent::MessageStop => return Ok(true),
            WireEvent::Error { error } => return Err(stream_error(&error, &event.data)),
            WireEvent::Other => {}
        }
        Ok(false)
    }

    fn finish(self, finished: bool) -> Result<ChatResponse, LlmError> {
        if !finished {
            return Err(cut_short());
        }
        tracing::debug!(
            stop_reason = self.stop_reason.as_deref().unwrap_or(""),
            "anthropic message stopped"
        );
        let tool_calls = self
            .calls
            .into_values()
            .map(|mut call| ToolCall {
                id: std::mem::take(&mut call.id),
                name: std::mem::take(&mut call.name),
                arguments: call.arguments(),
            })
            .collect();
        Ok(ChatResponse {
            content: Some(self.text).filter(|text| !text.is_empty()),
            tool_calls,
            usage: Usage {
                input_tokens: self.input_tokens,
                output_tokens: self.output_tokens,
            },
            model: self.model.unwrap_or(self.requested_model),
        })
    }
}

/// An `error` event, classified as the HTTP answer with the status its
/// error type is documented with would be; an unknown type is a failure of
/// the provider.
fn stream_error(error: &WireError, data: &str) -> LlmError {
    let status = match error.kind.as_str() {
        "invalid_request_error" => 400,
        "authentication_error" => 401,
        "permission_error" => 403,
        "not_found_error" => 404,
        "request_too_large" => 413,
        "rate_limit_error" => 429,
        "overloaded_error" => 529,
        _ => 500,
    };
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    LlmError::from_http(status, &HeaderMap::new(), data.as_bytes())
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireEvent {
    MessageStart {
        message: WireMessageStart,
    },
    ContentBlockStart {
        index: u64,
        content_block: WireBlockStart,
    },
    ContentBlockDelta {
        index: u64,
        delta: WireDelta,
    },
    MessageDelta {
        #[serde(default)]
        delta: Option<WireMessageDelta>,
        #[serde(default)]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Error {
        error: WireError,
    },
    /// `ping`, `content_block_stop`, and whatever the API adds later.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct WireMessageStart {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireBlockStart {
    Text {
        #[serde(default)]
        text: String,
    },
    ToolUse {
        #[serde(default)]
        id: String,
        name: String,
        #[serde(default)]
        input: Value,
    },
    /// `thinking` and other blocks the core does not act on.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum WireDelta {
    TextDelta {
        text: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// `thinking_delta`, `signature_delta` and the like.
    #[serde(other)]
    Other,
}

#[derive(Deserialize)]
struct WireMessageDelta {
    #[serde(default)]
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
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

#[derive(Deserialize)]
struct WireError {
    #[serde(rename = "type", default)]
    kind: String,
}

#[cfg(test)]
#[path = "anthropic_stream_tests.rs"]
mod tests;
