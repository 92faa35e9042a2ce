//! A fake Anthropic Messages API server on `127.0.0.1:0`, for tests. It speaks
//! the real wire protocol over real HTTP — `POST /v1/messages`, `GET
//! /v1/models`, Anthropic's message and `{"type":"error",..}` shapes — and
//! enforces the request rules the real API enforces (the `anthropic-version`
//! header, the key if one is required, strict user/assistant alternation,
//! `tool_result` blocks answering the `tool_use` blocks just before them, no
//! empty text, object-typed `input` and `input_schema`, base64 `image`
//! blocks of a type it reads), answering a broken
//! request with a 400 `invalid_request_error` as Anthropic does. Tests script
//! answers as a FIFO of one-shot [`Script`]s (echoing the last user text when
//! it is empty) and inspect what was received. A request with
//! `"stream": true` is answered with server-sent events (see
//! `fake_anthropic_stream.rs`): text a word at a time, tool input in two
//! slices, or a scripted [`Streamed`] answer that may be slow, cut off, or
//! end in an `error` event. Self-contained: it depends only on tokio, axum,
//! futures and serde_json, so any test target can include it with `#[path]`.
//! Use it with real (unpaused) tokio time.
#![allow(dead_code)] // every including target uses a different part of it

use std::collections::{BTreeMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio::sync::Notify;

#[path = "fake_anthropic_stream.rs"]
mod stream;
#[allow(unused_imports)] // not every including target streams
pub use stream::{StreamBlock, StreamEnd, Streamed};

/// How the fake answers one `POST /v1/messages`.
#[derive(Clone, Debug, PartialEq)]
pub enum Script {
    /// One text block (`stop_reason: "end_turn"`); usage counts words.
    Text(String),
    /// A message with these content blocks, this stop reason and this usage
    /// (input tokens, output tokens).
    Message {
        content: Vec<Value>,
        stop_reason: String,
        usage: (u64, u64),
    },
    /// An Anthropic error body (`{"type":"error","error":{"type","message"}}`)
    /// with this HTTP status, and a `retry-after` header (seconds) if set.
    Error {
        status: u16,
        kind: String,
        message: String,
        retry_after: Option<u64>,
    },
    /// HTTP 200 with this body verbatim.
    Raw(String),
    /// Never answer, until the client gives up.
    Hang,
    /// This streamed answer to a request with `"stream": true`; to one
    /// without, the whole message.
    Stream(Streamed),
}

/// A `{"type":"text"}` content block.
pub fn text_block(text: &str) -> Value {
    json!({"type": "text", "text": text})
}

/// A `{"type":"tool_use"}` content block.
pub fn tool_use_block(id: &str, name: &str, input: Value) -> Value {
    json!({"type": "tool_use", "id": id, "name": name, "input": input})
}

/// One request the fake received.
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    /// `/v1/messages` or `/v1/models`.
    pub path: String,
    /// Header names lower-case.
    pub headers: BTreeMap<String, String>,
    /// The JSON body (a string if it was not JSON; null for a GET).
    pub body: Value,
}

/// Handle to a running fake server. Clones share the same server.
#[derive(Clone)]
pub struct FakeAnthropic {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

struct Shared {
    state: Mutex<Recorded>,
    /// Woken whenever a request has been recorded.
    arrived: Notify,
}

#[derive(Default)]
struct Recorded {
    queue: VecDeque<Script>,
    received: Vec<Received>,
    api_key: Option<String>,
}

impl FakeAnthropic {
    /// Start serving on `127.0.0.1:0` in a background task of the current runtime.
    pub async fn start() -> FakeAnthropic {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("fake Anthropic: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake Anthropic: read the bound address");
        let shared = Arc::new(Shared {
            state: Mutex::new(Recorded::default()),
            arrived: Notify::new(),
        });
        let app = Router::new()
            .route("/v1/messages", post(messages))
            .route("/v1/models", get(models))
            .with_state(Arc::clone(&shared));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeAnthropic { shared, addr }
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL to configure a client with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queue a one-shot script; queued scripts answer in FIFO order.
    pub fn push(&self, script: Script) {
        self.lock().queue.push_back(script);
    }

    /// Require `x-api-key: <key>` on every request; others get a 401
    /// `authentication_error` without consuming a script, but are still recorded.
    pub fn require_api_key(&self, key: impl Into<String>) {
        self.lock().api_key = Some(key.into());
    }

    /// Every request received, in order, including rejected ones.
    pub fn received(&self) -> Vec<Received> {
        self.lock().received.clone()
    }

    /// The bodies of every `POST /v1/messages`, in order.
    pub fn message_requests(&self) -> Vec<Value> {
        let state = self.lock();
        let messages = state.received.iter().filter(|r| r.path == "/v1/messages");
        messages.map(|r| r.body.clone()).collect()
    }

    /// Wait until at least `n` requests (of any path) have arrived and return them.
    ///
    /// # Panics
    /// If fewer than `n` arrived within `timeout`.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let arrived = self.shared.arrived.notified();
            tokio::pin!(arrived);
            // Register before checking, so a request landing in between is not missed.
            arrived.as_mut().enable();
            {
                let state = self.lock();
                if state.received.len() >= n {
                    return state.received.clone();
                }
            }
            if tokio::time::timeout_at(deadline, arrived).await.is_err() {
                let got = self.lock().received.len();
                panic!("fake Anthropic: expected at least {n} request(s) within {timeout:?}, got {got}");
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.shared.lock()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Record a request and check its headers; returns the refusal to send
    /// instead of an answer, if any.
    fn refuse(&self, uri: &Uri, headers: &HeaderMap, body: Value) -> Option<Response> {
        let captured = headers
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect();
        let required_key = {
            let mut state = self.lock();
            state.received.push(Received {
                path: uri.path().to_owned(),
                headers: captured,
                body,
            });
            state.api_key.clone()
        };
        self.arrived.notify_waiters();

        if !headers.contains_key("anthropic-version") {
            return Some(error(
                400,
                "invalid_request_error",
                "anthropic-version: header is required",
            ));
        }
        match (required_key, headers.get("x-api-key")) {
            (Some(key), Some(sent)) if sent.as_bytes() == key.as_bytes() => None,
            (Some(_), _) => Some(error(401, "authentication_error", "invalid x-api-key")),
            (None, _) => None,
        }
    }
}

async fn messages(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let request = serde_json::from_slice::<Value>(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    if let Some(refusal) = shared.refuse(&uri, &headers, request.clone()) {
        return refusal;
    }
    if let Err(problem) = validate(&request) {
        return error(400, "invalid_request_error", &problem);
    }
    let script = shared.lock().queue.pop_front();
    let script = script.unwrap_or_else(|| Script::Text(format!("echo: {}", last_user_text(&request))));
    respond(script, &request).await
}

async fn models(State(shared): State<Arc<Shared>>, uri: Uri, headers: HeaderMap) -> Response {
    if let Some(refusal) = shared.refuse(&uri, &headers, Value::Null) {
        return refusal;
    }
    let model = json!({"type": "model", "id": "claude-fake", "display_name": "Claude Fake", "created_at": "2025-01-01T00:00:00Z"});
    axum::Json(json!({"data": [model], "has_more": false, "first_id": "claude-fake", "last_id": "claude-fake"}))
        .into_response()
}

async fn respond(script: Script, request: &Value) -> Response {
    if request["stream"] == true {
        let streamed = match &script {
            Script::Text(text) => {
                let pieces: Vec<&str> = text.split_inclusive(' ').collect();
                let usage = (count_words(&all_request_text(request)), count_words(text));
                Some(Streamed {
                    usage,
                    ..Streamed::text(&pieces)
                })
            }
            Script::Message {
                content,
                stop_reason,
                usage,
            } => Some(Streamed::from_content(content, stop_reason, *usage)),
            Script::Stream(streamed) => Some(streamed.clone()),
            _ => None,
        };
        if let Some(streamed) = streamed {
            return stream::respond(streamed, request);
        }
    }
    match script {
        Script::Text(text) => {
            let usage = (count_words(&all_request_text(request)), count_words(&text));
            message(request, vec![text_block(&text)], "end_turn", usage)
        }
        Script::Message {
            content,
            stop_reason,
            usage,
        } => message(request, content, &stop_reason, usage),
        Script::Error {
            status,
            kind,
            message,
            retry_after,
        } => {
            let mut response = error(status, &kind, &message);
            if let Some(seconds) = retry_after {
                response.headers_mut().insert("retry-after", HeaderValue::from(seconds));
            }
            response
        }
        Script::Raw(body) => (StatusCode::OK, [("content-type", "application/json")], body).into_response(),
        Script::Hang => std::future::pending().await,
        Script::Stream(streamed) => message(request, streamed.content(), &streamed.stop_reason, streamed.usage),
    }
}

fn message(request: &Value, content: Vec<Value>, stop_reason: &str, (input, output): (u64, u64)) -> Response {
    axum::Json(json!({
        "id": "msg_fake",
        "type": "message",
        "role": "assistant",
        "model": request["model"],
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": null,
        "usage": {"input_tokens": input, "output_tokens": output},
    }))
    .into_response()
}

fn error(status: u16, kind: &str, message: &str) -> Response {
    let status =
        StatusCode::from_u16(status).unwrap_or_else(|_| panic!("fake Anthropic: {status} is not an HTTP status"));
    let body = json!({"type": "error", "error": {"type": kind, "message": message}});
    (status, axum::Json(body)).into_response()
}

/// The text blocks of the last user message, joined by newlines.
pub fn last_user_text(request: &Value) -> String {
    let messages = request["messages"].as_array().into_iter().flatten();
    let Some(last) = messages.rev().find(|m| m["role"] == "user") else {
        return String::new();
    };
    match &last["content"] {
        Value::String(text) => text.clone(),
        blocks => blocks_of_type(blocks, "text")
            .filter_map(|block| block["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

fn all_request_text(request: &Value) -> String {
    let mut text = request["system"].as_str().unwrap_or("").to_owned();
    for message in request["messages"].as_array().into_iter().flatten() {
        for block in message["content"].as_array().into_iter().flatten() {
            for part in [&block["text"], &block["content"]] {
                text.push(' ');
                text.push_str(part.as_str().unwrap_or(""));
            }
        }
    }
    text
}

/// A stand-in for a tokenizer: deterministic, and non-zero for non-empty text.
fn count_words(text: &str) -> u64 {
    text.split_whitespace().count() as u64
}

fn blocks_of_type<'a>(content: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> {
    let blocks = content.as_array().into_iter().flatten();
    blocks.filter(move |block| block["type"] == kind)
}

/// The rules the real API enforces on a request body, with its style of message.
fn validate(request: &Value) -> Result<(), String> {
    if request["model"].as_str().is_none_or(str::is_empty) {
        return Err("model: Field required".to_owned());
    }
    if request["max_tokens"].as_u64().is_none_or(|max| max == 0) {
        return Err("max_tokens: Field required".to_owned());
    }
    if !(request["system"].is_null() || request["system"].is_string()) {
        return Err("system: Input should be a valid string".to_owned());
    }
    validate_tools(&request["tools"])?;
    let Some(messages) = request["messages"].as_array().filter(|m| !m.is_empty()) else {
        return Err("messages: at least one message is required".to_owned());
    };
    let mut previous_tool_uses: HashSet<String> = HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        let role = message["role"].as_str().unwrap_or("");
        let expected = if index % 2 == 0 { "user" } else { "assistant" };
        if role != expected {
            return Err(format!(
                "messages.{index}: roles must alternate between \"user\" and \"assistant\", starting with \"user\"; got {role:?}"
            ));
        }
        let answered = validate_content(index, role, &message["content"], &previous_tool_uses)?;
        if role == "user" && answered != previous_tool_uses {
            return Err(format!(
                "messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after"
            ));
        }
        previous_tool_uses = blocks_of_type(&message["content"], "tool_use")
            .filter_map(|block| block["id"].as_str().map(str::to_owned))
            .collect();
    }
    Ok(())
}

/// Checks one message's content; returns the tool-use ids its results answer.
fn validate_content(
    index: usize,
    role: &str,
    content: &Value,
    open: &HashSet<String>,
) -> Result<HashSet<String>, String> {
    if content.as_str().is_some_and(|text| !text.is_empty()) {
        return Ok(HashSet::new());
    }
    let Some(blocks) = content.as_array().filter(|blocks| !blocks.is_empty()) else {
        return Err(format!("messages.{index}: all messages must have non-empty content"));
    };
    let mut answered = HashSet::new();
    let mut seen_other = false;
    for block in blocks {
        match (block["type"].as_str().unwrap_or(""), role) {
            ("text", _) if block["text"].as_str().is_some_and(|text| !text.trim().is_empty()) => seen_other = true,
            ("text", _) => return Err(format!("messages.{index}: text content blocks must be non-empty")),
            ("image", "user") => {
                validate_image(index, &block["source"])?;
                seen_other = true
            }
            ("tool_use", "assistant")
                if block["id"].is_string() && block["name"].is_string() && block["input"].is_object() =>
            {
                seen_other = true
            }
            ("tool_result", "user") if !seen_other => {
                let id = block["tool_use_id"].as_str().unwrap_or("");
                if !open.contains(id) {
                    return Err(format!(
                        "messages.{index}: unexpected `tool_use_id` found in `tool_result` blocks: {id:?}"
                    ));
                }
                answered.insert(id.to_owned());
            }
            (kind, _) => {
                return Err(format!(
                    "messages.{index}: invalid content block {kind:?} for role {role:?}"
                ));
            }
        }
    }
    Ok(answered)
}

/// An `image` block's source as the API takes it inline: base64 data of
/// one of the four image types it reads.
fn validate_image(index: usize, source: &Value) -> Result<(), String> {
    const TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];
    if source["type"] != "base64" {
        return Err(format!("messages.{index}: image source type must be \"base64\""));
    }
    if !source["media_type"].as_str().is_some_and(|kind| TYPES.contains(&kind)) {
        return Err(format!(
            "messages.{index}: image media_type must be one of {TYPES:?}, got {}",
            source["media_type"]
        ));
    }
    if source["data"].as_str().is_none_or(str::is_empty) {
        return Err(format!("messages.{index}: image data must be non-empty base64"));
    }
    Ok(())
}

fn validate_tools(tools: &Value) -> Result<(), String> {
    if tools.is_null() {
        return Ok(());
    }
    let Some(tools) = tools.as_array() else {
        return Err("tools: Input should be a valid list".to_owned());
    };
    for (index, tool) in tools.iter().enumerate() {
        if !tool["name"].is_string() || tool["input_schema"]["type"] != "object" {
            return Err(format!(
                "tools.{index}: needs a name and an input_schema of type object"
            ));
        }
    }
    Ok(())
}
