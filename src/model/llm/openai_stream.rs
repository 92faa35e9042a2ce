//! The OpenAI-compatible stream: `data: {chunk}` events, each a
//! `chat.completion.chunk` whose `choices[0].delta` carries a piece of the
//! text or pieces of tool calls (by `index`: the id and name first, the
//! arguments' JSON text in slices cut anywhere), then a chunk without choices
//! carrying the usage (asked for with `stream_options.include_usage`), then
//! `data: [DONE]`. The pieces are assembled into the same [`ChatResponse`]
//! the non-streaming path returns. A server that closes the stream after a
//! `finish_reason` but without `[DONE]` has still answered whole; without a
//! `finish_reason` the answer was cut. An `{"error":..}` chunk is classified
//! as an error answer of the status it names (a server failure if none,
//! unless its code says the context overflowed).

use std::collections::BTreeMap;

use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use serde::Deserialize;

use super::sse::SseEvent;
use super::stream::{Assembly, TextSink, cut_short, parse_data};
use super::{ChatResponse, LlmError, ToolCall, Usage};

/// The data of the event that ends the stream.
const DONE: &str = "[DONE]";

/// The answer being assembled.
pub(super) struct ChunkAssembly {
    requested_model: String,
    model: Option<String>,
    text: String,
    /// Tool calls by their `index`, in that order.
    calls: BTreeMap<u64, PartialCall>,
    usage: Usage,
    finish_reason: Option<String>,
}

#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

impl ChunkAssembly {
    pub(super) fn new(requested_model: &str) -> Self {
        Self {
            requested_model: requested_model.to_owned(),
            model: None,
            text: String::new(),
            calls: BTreeMap::new(),
            usage: Usage::default(),
            finish_reason: None,
        }
    }

    fn chunk(&mut self, chunk: WireChunk, sink: &dyn TextSink) {
        if let Some(model) = chunk.model.filter(|model| !model.is_empty()) {
            self.model = Some(model);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Usage {
                input_tokens: usage.prompt_tokens.unwrap_or(0),
                output_tokens: usage.completion_tokens.unwrap_or(0),
            };
        }
        // Only the first choice is asked for (no `n`), as in the whole answer.
        let Some(choice) = chunk.choices.into_iter().flatten().find(|c| c.index.unwrap_or(0) == 0) else {
            return;
        };
        if let Some(reason) = choice.finish_reason {
            self.finish_reason = Some(reason);
        }
        let Some(delta) = choice.delta else { return };
        if let Some(text) = delta.content.filter(|text| !text.is_empty()) {
            sink.text(&text);
            self.text.push_str(&text);
        }
        for (position, call) in delta.tool_calls.into_iter().flatten().enumerate() {
            // A server that sends each call whole may leave out `index`.
            let index = call.index.unwrap_or(position as u64);
            let partial = self.calls.entry(index).or_default();
            if let Some(id) = call.id.filter(|id| !id.is_empty()) {
                partial.id = id;
            }
            let Some(function) = call.function else { continue };
            if let Some(name) = function.name {
                partial.name.push_str(&name);
            }
            match function.arguments {
                None | Some(serde_json::Value::Null) => {}
                Some(serde_json::Value::String(piece)) => partial.arguments.push_str(&piece),
                // A server that sends the arguments as an object: keep its JSON text.
                Some(other) => partial.arguments.push_str(&other.to_string()),
            }
        }
    }
}

impl Assembly for ChunkAssembly {
    fn event(&mut self, event: &SseEvent, sink: &dyn TextSink) -> Result<bool, LlmError> {
        if event.data.trim() == DONE {
            return Ok(true);
        }
        let chunk: WireChunk = parse_data(event, "a chat completion chunk")?;
        if let Some(error) = &chunk.error {
            return Err(stream_error(error, &event.data));
        }
        self.chunk(chunk, sink);
        Ok(false)
    }

    fn finish(self, finished: bool) -> Result<ChatResponse, LlmError> {
        if !finished && self.finish_reason.is_none() {
            return Err(cut_short());
        }
        let tool_calls = self
            .calls
            .into_values()
            .enumerate()
            .map(|(position, call)| ToolCall {
                // As in the whole answer: a call without an id still needs one.
                id: if call.id.is_empty() {
                    format!("call_{position}")
                } else {
                    call.id
                },
                name: call.name,
                arguments: call.arguments,
            })
            .collect();
        Ok(ChatResponse {
            content: Some(self.text).filter(|text| !text.is_empty()),
            tool_calls,
            usage: self.usage,
            model: self.model.unwrap_or(self.requested_model),
        })
    }
}

/// An error reported inside the stream: the HTTP status it names, if any,
/// decides the variant, as it would have for an error answer.
fn stream_error(error: &serde_json::Value, data: &str) -> LlmError {
    let named = error["code"]
        .as_u64()
        .or_else(|| error["status"].as_u64())
        .and_then(|code| u16::try_from(code).ok())
        .and_then(|code| StatusCode::from_u16(code).ok())
        .filter(|status| status.is_client_error() || status.is_server_error());
    match named {
        Some(status) => LlmError::from_http(status, &HeaderMap::new(), data.as_bytes()),
        // No status: only a context overflow is told apart by its code.
        None => match LlmError::from_http(StatusCode::BAD_REQUEST, &HeaderMap::new(), data.as_bytes()) {
            LlmError::ContextTooLong => LlmError::ContextTooLong,
            _ => LlmError::Server { status: 500 },
        },
    }
}

#[derive(Deserialize)]
struct WireChunk {
    #[serde(default)]
    model: Option<String>,
    #[serde(default)]
    choices: Option<Vec<WireChoice>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<WireDelta>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireDelta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCallDelta>>,
}

#[derive(Deserialize)]
struct WireCallDelta {
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<WireFunctionDelta>,
}

#[derive(Deserialize)]
struct WireFunctionDelta {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
}

#[cfg(test)]
#[path = "openai_stream_tests.rs"]
mod tests;
