//! The fake OpenAI-compatible server's streamed answers, for a request with
//! `"stream": true`: `data:` chunks of `chat.completion.chunk` over a real
//! chunked HTTP body — text in pieces, a tool call's arguments in slices,
//! a `finish_reason` chunk, the usage chunk when `stream_options.include_usage`
//! asks for it, and `data: [DONE]` — or a stream that breaks off as a
//! [`StreamEnd`] says, with pieces spaced by a gap when a test wants a slow
//! model. Part of `fake_llm.rs`.

use std::io;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// How a streamed answer ends.
#[derive(Clone, Debug, PartialEq)]
pub enum StreamEnd {
    /// `finish_reason`, the usage if asked for, then `data: [DONE]`.
    Done,
    /// The body ends cleanly after the pieces, before any `finish_reason`.
    Close,
    /// The connection breaks after the pieces (the chunked body is cut off).
    Abort,
    /// An `{"error": this}` chunk after the pieces, then the body ends.
    Error(Value),
    /// Nothing more after the pieces, the body held open until the client
    /// lets go of it: a model still writing when its turn is stopped.
    Hang,
}

/// A streamed answer: `text` in these pieces, then a tool call whose
/// arguments come in `arguments` slices (id `call_N`), each piece `gap`
/// after the one before.
#[derive(Clone, Debug, PartialEq)]
pub struct Streamed {
    pub text: Vec<String>,
    pub tool_call: Option<(String, Vec<String>)>,
    pub gap: Duration,
    pub end: StreamEnd,
}

impl Streamed {
    /// `text` in these pieces, ending normally, without delay.
    pub fn text(pieces: &[&str]) -> Streamed {
        Streamed {
            text: pieces.iter().map(|piece| (*piece).to_owned()).collect(),
            tool_call: None,
            gap: Duration::ZERO,
            end: StreamEnd::Done,
        }
    }

    /// A call of `name` whose arguments come in these slices.
    pub fn tool_call(name: &str, slices: &[&str]) -> Streamed {
        Streamed {
            tool_call: Some((name.to_owned(), slices.iter().map(|s| (*s).to_owned()).collect())),
            ..Streamed::text(&[])
        }
    }

    /// The same, ending as `end`.
    pub fn ending(self, end: StreamEnd) -> Streamed {
        Streamed { end, ..self }
    }

    /// The same, each piece `gap` after the one before.
    pub fn spaced(self, gap: Duration) -> Streamed {
        Streamed { gap, ..self }
    }

    /// `text` a word at a time (each word with the space after it).
    pub fn words(text: &str) -> Streamed {
        let pieces: Vec<&str> = text.split_inclusive(' ').collect();
        Streamed::text(&pieces)
    }

    /// The whole text and the whole arguments, for a request that does not stream.
    pub fn joined(&self) -> (String, Option<(String, String)>) {
        let call = self
            .tool_call
            .as_ref()
            .map(|(name, slices)| (name.clone(), slices.concat()));
        (self.text.concat(), call)
    }
}

/// The arguments in two slices cut in their middle (on a character boundary).
pub fn halves(arguments: &str) -> Vec<String> {
    let mut cut = arguments.len() / 2;
    while !arguments.is_char_boundary(cut) {
        cut += 1;
    }
    vec![arguments[..cut].to_owned(), arguments[cut..].to_owned()]
}

/// The SSE answer to `request` (the `sequence`-th), sent as `streamed` says.
pub fn respond(streamed: Streamed, request: &Value, sequence: usize, prompt_tokens: usize) -> Response {
    let (sender, mut receiver) = mpsc::channel::<io::Result<Bytes>>(4);
    let model = request["model"].as_str().unwrap_or("fake").to_owned();
    let usage = request["stream_options"]["include_usage"] == true;
    tokio::spawn(produce(streamed, sender, model, sequence, prompt_tokens, usage));
    let body = Body::from_stream(futures::stream::poll_fn(move |cx| receiver.poll_recv(cx)));
    ([(CONTENT_TYPE, "text/event-stream")], body).into_response()
}

async fn produce(
    streamed: Streamed,
    sender: mpsc::Sender<io::Result<Bytes>>,
    model: String,
    sequence: usize,
    prompt_tokens: usize,
    include_usage: bool,
) {
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let chunk = |delta: Value, finish: Option<&str>| {
        json!({
            "id": format!("chatcmpl-fake-{sequence}"),
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        })
    };
    let send = |data: String| {
        let sender = sender.clone();
        async move { sender.send(Ok(Bytes::from(format!("data: {data}\n\n")))).await.is_ok() }
    };
    let pause = || async {
        if !streamed.gap.is_zero() {
            tokio::time::sleep(streamed.gap).await;
        }
    };

    if !send(chunk(json!({"role": "assistant", "content": ""}), None).to_string()).await {
        return;
    }
    for piece in &streamed.text {
        pause().await;
        if !send(chunk(json!({"content": piece}), None).to_string()).await {
            return;
        }
    }
    if let Some((name, slices)) = &streamed.tool_call {
        let opening = json!({"tool_calls": [{"index": 0, "id": format!("call_{sequence}"), "type": "function",
            "function": {"name": name, "arguments": ""}}]});
        if !send(chunk(opening, None).to_string()).await {
            return;
        }
        for slice in slices {
            pause().await;
            let piece = json!({"tool_calls": [{"index": 0, "function": {"arguments": slice}}]});
            if !send(chunk(piece, None).to_string()).await {
                return;
            }
        }
    }
    match &streamed.end {
        StreamEnd::Done => {
            let finish = if streamed.tool_call.is_some() {
                "tool_calls"
            } else {
                "stop"
            };
            if !send(chunk(json!({}), Some(finish)).to_string()).await {
                return;
            }
            if include_usage {
                let (text, call) = streamed.joined();
                let output = call.map_or(text, |(_, arguments)| arguments);
                let completion_tokens = output.split_whitespace().count();
                let usage = json!({
                    "id": format!("chatcmpl-fake-{sequence}"),
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                        "total_tokens": prompt_tokens + completion_tokens},
                });
                if !send(usage.to_string()).await {
                    return;
                }
            }
            send("[DONE]".to_owned()).await;
        }
        StreamEnd::Close => {}
        StreamEnd::Abort => {
            let _ = sender.send(Err(io::Error::other("fake LLM: stream cut"))).await;
        }
        StreamEnd::Error(error) => {
            send(json!({"error": error}).to_string()).await;
        }
        StreamEnd::Hang => sender.closed().await,
    }
}
