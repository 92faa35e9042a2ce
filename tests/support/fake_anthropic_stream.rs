//! The fake Anthropic server's streamed answers, for a request with
//! `"stream": true`: named server-sent events over a real chunked HTTP body —
//! `message_start`, per block `content_block_start` / `content_block_delta`
//! (`text_delta` pieces, `input_json_delta` slices) / `content_block_stop`,
//! a `ping`, `message_delta` with the stop reason and usage, `message_stop` —
//! or a stream that breaks off as a [`StreamEnd`] says, with deltas spaced
//! by a gap when a test wants a slow model. Part of `fake_anthropic.rs`.

use std::io;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How a streamed answer ends.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEnd {
    /// `message_delta`, then `message_stop`.
    Stop,
    /// The body ends cleanly after the blocks, without `message_stop`.
    Close,
    /// The connection breaks after the blocks.
    Abort,
    /// An `error` event of this type and message after the blocks.
    Error { kind: String, message: String },
}

/// One content block of a streamed answer.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamBlock {
    /// A text block in these pieces.
    Text(Vec<String>),
    /// A `tool_use` block whose input JSON comes in these slices.
    ToolUse {
        id: String,
        name: String,
        slices: Vec<String>,
    },
}

/// A streamed answer: these blocks, each delta `gap` after the one before,
/// with this stop reason and usage (input, output tokens).
#[derive(Clone, Debug, PartialEq)]
pub struct Streamed {
    pub blocks: Vec<StreamBlock>,
    pub stop_reason: String,
    pub usage: (u64, u64),
    pub gap: Duration,
    pub end: StreamEnd,
}

impl Streamed {
    /// One text block in these pieces, ending normally, without delay.
    pub fn text(pieces: &[&str]) -> Streamed {
        Streamed {
            blocks: vec![StreamBlock::Text(pieces.iter().map(|p| (*p).to_owned()).collect())],
            stop_reason: "end_turn".to_owned(),
            usage: (10, pieces.len() as u64),
            gap: Duration::ZERO,
            end: StreamEnd::Stop,
        }
    }

    /// The same, then a `tool_use` block whose input comes in these slices.
    pub fn with_tool_use(mut self, id: &str, name: &str, slices: &[&str]) -> Streamed {
        self.blocks.push(StreamBlock::ToolUse {
            id: id.to_owned(),
            name: name.to_owned(),
            slices: slices.iter().map(|s| (*s).to_owned()).collect(),
        });
        self.stop_reason = "tool_use".to_owned();
        self
    }

    /// The same, ending as `end`.
    pub fn ending(self, end: StreamEnd) -> Streamed {
        Streamed { end, ..self }
    }

    /// The same, each delta `gap` after the one before.
    pub fn spaced(self, gap: Duration) -> Streamed {
        Streamed { gap, ..self }
    }

    /// The whole message's content blocks, for a request that does not stream.
    pub fn content(&self) -> Vec<Value> {
        self.blocks
            .iter()
            .map(|block| match block {
                StreamBlock::Text(pieces) => json!({"type": "text", "text": pieces.concat()}),
                StreamBlock::ToolUse { id, name, slices } => {
                    let input: Value = serde_json::from_str(&slices.concat()).unwrap_or_else(|_| json!({}));
                    json!({"type": "tool_use", "id": id, "name": name, "input": input})
                }
            })
            .collect()
    }

    /// A whole message's content streamed: text in one piece, a tool's
    /// input JSON in two slices cut in the middle.
    pub fn from_content(content: &[Value], stop_reason: &str, usage: (u64, u64)) -> Streamed {
        let blocks = content
            .iter()
            .filter_map(|block| match block["type"].as_str() {
                Some("text") => Some(StreamBlock::Text(vec![block["text"].as_str().unwrap_or("").to_owned()])),
                Some("tool_use") => {
                    let input = block["input"].to_string();
                    let mut cut = input.len() / 2;
                    while !input.is_char_boundary(cut) {
                        cut += 1;
                    }
                    Some(StreamBlock::ToolUse {
                        id: block["id"].as_str().unwrap_or("").to_owned(),
                        name: block["name"].as_str().unwrap_or("").to_owned(),
                        slices: vec![input[..cut].to_owned(), input[cut..].to_owned()],
                    })
                }
                _ => None,
            })
            .collect();
        Streamed {
            blocks,
            stop_reason: stop_reason.to_owned(),
            usage,
            gap: Duration::ZERO,
            end: StreamEnd::Stop,
        }
    }
}

/// The SSE answer to `request`, sent as `streamed` says.
pub fn respond(streamed: Streamed, request: &Value) -> Response {
    let (sender, mut receiver) = mpsc::channel::<io::Result<Bytes>>(4);
    let model = request["model"].clone();
    tokio::spawn(produce(streamed, sender, model));
    let body = Body::from_stream(futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)));
    ([("content-type", "text/event-stream")], body).into_response()
}

/// Sends one named event; `false` once the client has gone.
async fn send(sender: &mpsc::Sender<io::Result<Bytes>>, data: Value) -> bool {
    let name = data["type"].as_str().unwrap_or("unknown").to_owned();
    let event = format!("event: {name}\ndata: {data}\n\n");
    sender.send(Ok(Bytes::from(event))).await.is_ok()
}

async fn produce(streamed: Streamed, sender: mpsc::Sender<io::Result<Bytes>>, model: Value) {
    let (input_tokens, output_tokens) = streamed.usage;
    let start = json!({"type": "message_start", "message": {"id": "msg_fake", "type": "message",
        "role": "assistant", "model": model, "content": [], "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1}}});
    if !send(&sender, start).await || !send(&sender, json!({"type": "ping"})).await {
        return;
    }
    for (index, block) in streamed.blocks.iter().enumerate() {
        let (opening, deltas): (Value, Vec<Value>) = match block {
            StreamBlock::Text(pieces) => (
                json!({"type": "text", "text": ""}),
                pieces
                    .iter()
                    .map(|text| json!({"type": "text_delta", "text": text}))
                    .collect(),
            ),
            StreamBlock::ToolUse { id, name, slices } => (
                json!({"type": "tool_use", "id": id, "name": name, "input": {}}),
                slices
                    .iter()
                    .map(|slice| json!({"type": "input_json_delta", "partial_json": slice}))
                    .collect(),
            ),
        };
        let opening = json!({"type": "content_block_start", "index": index, "content_block": opening});
        if !send(&sender, opening).await {
            return;
        }
        for delta in deltas {
            if !streamed.gap.is_zero() {
                tokio::time::sleep(streamed.gap).await;
            }
            if !send(
                &sender,
                json!({"type": "content_block_delta", "index": index, "delta": delta}),
            )
            .await
            {
                return;
            }
        }
        if !send(&sender, json!({"type": "content_block_stop", "index": index})).await {
            return;
        }
    }
    match streamed.end {
        StreamEnd::Stop => {
            let delta = json!({"type": "message_delta",
                "delta": {"stop_reason": streamed.stop_reason, "stop_sequence": null},
                "usage": {"output_tokens": output_tokens}});
            if send(&sender, delta).await {
                send(&sender, json!({"type": "message_stop"})).await;
            }
        }
        StreamEnd::Close => {}
        StreamEnd::Abort => {
            let _ = sender.send(Err(io::Error::other("fake Anthropic: stream cut"))).await;
        }
        StreamEnd::Error { kind, message } => {
            send(
                &sender,
                json!({"type": "error", "error": {"type": kind, "message": message}}),
            )
            .await;
        }
    }
}
