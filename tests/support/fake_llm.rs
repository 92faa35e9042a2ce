//! A fake OpenAI-compatible chat-completions server on `127.0.0.1:0`, for
//! tests and benchmarks. It speaks the real wire protocol over real HTTP, so the
//! production client runs unmodified against it. Tests script its answers (a
//! FIFO of one-shot [`Script`]s, then a responder closure, by default
//! [`Script::Echo`]), inspect what it received, and shut it down to simulate a
//! provider going away. A request with `"stream": true` is answered with
//! server-sent events (see `fake_llm_stream.rs`): replies a word at a time,
//! tool-call arguments in two slices, or a scripted [`Streamed`] answer that
//! may be slow, cut off, or end in an error. Self-contained: it depends only
//! on tokio, axum, futures and serde_json, so any test or bench target can
//! include this file with `#[path]`.
//!
//! Use it with real (unpaused) tokio time: the client talks to it over TCP.
#![allow(dead_code)] // every including target uses a different part of it

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

#[path = "fake_llm_stream.rs"]
mod stream;
#[allow(unused_imports)] // not every including target streams
pub use stream::{StreamEnd, Streamed, halves};

/// How the fake answers one chat-completion request.
#[derive(Clone, Debug, PartialEq)]
pub enum Script {
    /// A normal assistant reply with this text (`finish_reason: "stop"`).
    Reply(String),
    /// `content: null` and one tool call `call_N` (N = the request's 1-based
    /// sequence number), `finish_reason: "tool_calls"`.
    ToolCall { name: String, arguments: String },
    /// This HTTP status with an OpenAI-style `{"error":{..}}` body, or `body`
    /// verbatim if given, and a `retry-after` header (seconds) if set.
    /// `Status { code: 200, body: Some(..), .. }` sends any raw answer.
    Status {
        code: u16,
        retry_after: Option<u64>,
        body: Option<String>,
    },
    /// HTTP 200 whose body is not JSON.
    Garbage,
    /// Wait, then answer with the inner script. The request is recorded first.
    Delay(Duration, Box<Script>),
    /// Never answer, until the client gives up or the fake shuts down.
    Hang,
    /// Reply `"echo: <last user message text>"`.
    Echo,
    /// This streamed answer to a request with `"stream": true`; to one
    /// without, its whole text or tool call.
    Stream(Streamed),
}

impl Script {
    /// An answer with `text` reporting exactly this usage, as a whole
    /// completion (even to a request that streams).
    pub fn reply_using(text: &str, prompt_tokens: u64, completion_tokens: u64) -> Script {
        let body = serde_json::json!({
            "id": "x", "object": "chat.completion", "model": "fake-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}
        });
        Script::Status {
            code: 200,
            retry_after: None,
            body: Some(body.to_string()),
        }
    }

    /// This HTTP status with an OpenAI-style error body and no `retry-after`.
    pub fn status(code: u16) -> Script {
        Script::Status {
            code,
            retry_after: None,
            body: None,
        }
    }
}

type Responder = Arc<dyn Fn(&Value) -> Script + Send + Sync>;

/// Handle to a running fake server. Clones share the same server.
#[derive(Clone)]
pub struct FakeLlm {
    shared: Arc<Shared>,
    addr: SocketAddr,
}

struct Shared {
    state: Mutex<Recorded>,
    /// Woken whenever a chat request has been recorded.
    arrived: Notify,
    /// Becomes `true` once, on shutdown.
    shutdown: watch::Sender<bool>,
}

struct Recorded {
    queue: VecDeque<Script>,
    responder: Responder,
    requests: Vec<Value>,
    headers: Vec<BTreeMap<String, String>>,
    api_key: Option<String>,
    /// Chat requests received, recorded or not.
    received: usize,
    /// Whether bodies and headers are kept (a benchmark turns this off).
    recording: bool,
}

impl fmt::Debug for FakeLlm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeLlm")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl FakeLlm {
    /// Start serving on `127.0.0.1:0` in a background task of the current runtime.
    pub async fn start() -> FakeLlm {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("fake LLM: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake LLM: read the bound address");
        let (shutdown, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            state: Mutex::new(Recorded {
                queue: VecDeque::new(),
                responder: Arc::new(|_: &Value| Script::Echo),
                requests: Vec::new(),
                headers: Vec::new(),
                api_key: None,
                received: 0,
                recording: true,
            }),
            arrived: Notify::new(),
            shutdown,
        });

        let app = Router::new()
            .route("/v1/chat/completions", post(chat_completions))
            .route("/v1/models", get(models))
            .with_state(Arc::clone(&shared));
        serve_until_shutdown(listener, app, &shared.shutdown);
        FakeLlm { shared, addr }
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL to configure a client with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Queue a one-shot script; queued scripts answer in FIFO order before the responder.
    pub fn push(&self, script: Script) {
        self.lock().queue.push_back(script);
    }

    /// Decide the answer to every request the queue does not cover.
    pub fn set_responder(&self, responder: impl Fn(&Value) -> Script + Send + Sync + 'static) {
        self.lock().responder = Arc::new(responder);
    }

    /// Require `Authorization: Bearer <key>` on every request; others get a 401
    /// (`invalid_api_key`) without consuming a script, but are still recorded.
    pub fn require_api_key(&self, key: impl Into<String>) {
        self.lock().api_key = Some(key.into());
    }

    /// Turns keeping request bodies and headers on or off (on by default); a
    /// benchmark turns it off so the fake's memory does not count as ours.
    pub fn set_recording(&self, recording: bool) {
        self.lock().recording = recording;
    }

    /// Every chat request body received, in order, including rejected ones (a
    /// body that is not JSON is recorded as a string and answered with a 400);
    /// none while recording is off.
    pub fn requests(&self) -> Vec<Value> {
        self.lock().requests.clone()
    }

    /// The headers of every chat request, in the same order as [`Self::requests`];
    /// names are lower-case.
    pub fn request_headers(&self) -> Vec<BTreeMap<String, String>> {
        self.lock().headers.clone()
    }

    /// Wait until at least `n` chat requests have arrived and return all of them.
    ///
    /// # Panics
    /// If fewer than `n` arrived within `timeout`.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> Vec<Value> {
        let arrived = wait_on(&self.shared.arrived, timeout, || {
            let state = self.lock();
            (state.requests.len() >= n).then(|| state.requests.clone())
        });
        arrived.await.unwrap_or_else(|| {
            panic!(
                "fake LLM at {}: expected at least {n} chat request(s) within {timeout:?}, got {}",
                self.base_url(),
                self.lock().requests.len()
            )
        })
    }

    /// Stop serving: the listening socket closes (new connections are refused)
    /// and open connections are cut, including requests still being answered.
    /// Takes effect as soon as the server task runs.
    pub fn shutdown(&self) {
        self.shared.shutdown.send_replace(true);
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.shared.lock()
    }
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The last message of a recorded chat request (`null` if it has none).
pub fn last_message(request: &Value) -> Value {
    request["messages"]
        .as_array()
        .and_then(|messages| messages.last())
        .cloned()
        .unwrap_or_default()
}

/// The text of the last `user` message of a chat request (text parts joined by
/// newlines), or `""` if there is none.
pub fn last_user_text(request: &Value) -> String {
    let Some(message) = request["messages"]
        .as_array()
        .and_then(|messages| messages.iter().rev().find(|m| m["role"] == "user"))
    else {
        return String::new();
    };
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Why a request's history could not be replayed by a strict server: a
/// tool call whose arguments are not a JSON object, or one that no `tool`
/// message answers, or a call id used twice.
pub fn invalid_history(request: &Value) -> Option<String> {
    let messages = request["messages"].as_array()?;
    let mut seen = std::collections::HashSet::new();
    for (index, message) in messages.iter().enumerate() {
        for call in message["tool_calls"].as_array().into_iter().flatten() {
            let id = call["id"].as_str().unwrap_or_default();
            if !seen.insert(id.to_owned()) {
                return Some(format!("tool call id {id:?} is used twice"));
            }
            let arguments = call["function"]["arguments"].as_str().unwrap_or_default();
            if !serde_json::from_str::<Value>(arguments).is_ok_and(|v| v.is_object()) {
                return Some(format!("Failed to parse tool call arguments as JSON: {arguments:?}"));
            }
            let answered = messages[index + 1..]
                .iter()
                .take_while(|m| m["role"] == "tool")
                .any(|m| m["tool_call_id"] == id);
            if !answered {
                return Some(format!("tool call {id:?} has no tool result"));
            }
        }
    }
    None
}

async fn chat_completions(State(shared): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    let request = serde_json::from_slice::<Value>(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let captured = headers
        .iter()
        .map(|(name, value)| {
            let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
            (name.as_str().to_owned(), value)
        })
        .collect();

    // Record first (before any Delay), then pick the script; the responder runs
    // outside the lock so it may itself call methods of the handle.
    let (sequence, next) = {
        let mut state = shared.lock();
        let authorized = is_authorized(&state, &headers);
        state.received += 1;
        if state.recording {
            state.requests.push(request.clone());
            state.headers.push(captured);
        }
        let sequence = state.received;
        let next = if !authorized {
            None
        } else if !request.is_object() {
            Some(Ok(Script::Status {
                code: 400,
                retry_after: None,
                body: Some(invalid_json_body().to_string()),
            }))
        } else if let Some(problem) = invalid_history(&request) {
            // What llama.cpp and vLLM do with a history they cannot replay.
            Some(Ok(Script::Status {
                code: 400,
                retry_after: None,
                body: Some(json!({"error": {"message": problem, "type": "invalid_request_error"}}).to_string()),
            }))
        } else if let Some(script) = state.queue.pop_front() {
            Some(Ok(script))
        } else {
            Some(Err(Arc::clone(&state.responder)))
        };
        (sequence, next)
    };
    shared.arrived.notify_waiters();

    let script = match next {
        None => return unauthorized(),
        Some(Ok(script)) => script,
        Some(Err(responder)) => responder(&request),
    };
    respond(script, &request, sequence).await
}

async fn models(State(shared): State<Arc<Shared>>, headers: HeaderMap) -> Response {
    if !is_authorized(&shared.lock(), &headers) {
        return unauthorized();
    }
    axum::Json(json!({
        "object": "list",
        "data": [{"id": "fake", "object": "model"}],
    }))
    .into_response()
}

fn is_authorized(state: &Recorded, headers: &HeaderMap) -> bool {
    match &state.api_key {
        None => true,
        Some(key) => headers
            .get(AUTHORIZATION)
            .is_some_and(|value| value.as_bytes() == format!("Bearer {key}").as_bytes()),
    }
}

async fn respond(script: Script, request: &Value, sequence: usize) -> Response {
    if request["stream"] == true {
        let streamed = match &script {
            Script::Reply(text) => Some(Streamed::words(text)),
            Script::Echo => Some(Streamed::words(&format!("echo: {}", last_user_text(request)))),
            Script::ToolCall { name, arguments } => Some(Streamed {
                tool_call: Some((name.clone(), halves(arguments))),
                ..Streamed::text(&[])
            }),
            Script::Stream(streamed) => Some(streamed.clone()),
            _ => None,
        };
        if let Some(streamed) = streamed {
            return stream::respond(streamed, request, sequence, prompt_tokens(request));
        }
    }
    match script {
        Script::Reply(text) => {
            let message = json!({"role": "assistant", "content": text});
            completion(request, sequence, message, "stop", &text)
        }
        Script::Echo => {
            let text = format!("echo: {}", last_user_text(request));
            let message = json!({"role": "assistant", "content": text});
            completion(request, sequence, message, "stop", &text)
        }
        Script::ToolCall { name, arguments } => {
            let message = json!({
                "role": "assistant",
                "content": null,
                "tool_calls": [{
                    "id": format!("call_{sequence}"),
                    "type": "function",
                    "function": {"name": name, "arguments": arguments},
                }],
            });
            completion(request, sequence, message, "tool_calls", &arguments)
        }
        Script::Status {
            code,
            retry_after,
            body,
        } => {
            let status = StatusCode::from_u16(code)
                .unwrap_or_else(|_| panic!("fake LLM: Script::Status code {code} is not an HTTP status"));
            let body = body.unwrap_or_else(|| default_error_body(status).to_string());
            let mut response = (status, [(CONTENT_TYPE, "application/json")], body).into_response();
            if let Some(seconds) = retry_after {
                response.headers_mut().insert("retry-after", HeaderValue::from(seconds));
            }
            response
        }
        Script::Garbage => (
            [(CONTENT_TYPE, "application/json")],
            "<html><body>this is not JSON</body></html>",
        )
            .into_response(),
        Script::Delay(wait, next) => {
            tokio::time::sleep(wait).await;
            Box::pin(respond(*next, request, sequence)).await
        }
        Script::Hang => std::future::pending().await,
        // Never finished, it is never answered whole.
        Script::Stream(streamed) if streamed.end == StreamEnd::Hang => std::future::pending().await,
        Script::Stream(streamed) => match streamed.joined() {
            (_, Some((name, arguments))) => {
                Box::pin(respond(Script::ToolCall { name, arguments }, request, sequence)).await
            }
            (text, None) => Box::pin(respond(Script::Reply(text), request, sequence)).await,
        },
    }
}

fn completion(request: &Value, sequence: usize, message: Value, finish_reason: &str, output: &str) -> Response {
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    let prompt_tokens = prompt_tokens(request);
    let completion_tokens = count_words(output);
    axum::Json(json!({
        "id": format!("chatcmpl-fake-{sequence}"),
        "object": "chat.completion",
        "created": created,
        "model": request["model"].as_str().unwrap_or("fake"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }))
    .into_response()
}

/// The prompt's size by [`count_words`], over its plain-text messages.
fn prompt_tokens(request: &Value) -> usize {
    request["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|message| message["content"].as_str())
        .map(count_words)
        .sum()
}

/// A stand-in for a tokenizer: deterministic, and non-zero for non-empty text.
fn count_words(text: &str) -> usize {
    text.split_whitespace().count()
}

fn default_error_body(status: StatusCode) -> Value {
    let (kind, code) = match status.as_u16() {
        401 => ("invalid_request_error", Some("invalid_api_key")),
        403 => ("permission_error", None),
        404 => ("invalid_request_error", Some("model_not_found")),
        429 => ("requests", Some("rate_limit_exceeded")),
        500..=599 => ("server_error", None),
        _ => ("invalid_request_error", None),
    };
    json!({"error": {
        "message": format!("fake LLM: {status}"),
        "type": kind,
        "param": null,
        "code": code,
    }})
}

fn invalid_json_body() -> Value {
    json!({"error": {
        "message": "fake LLM: the request body is not a JSON object",
        "type": "invalid_request_error",
        "param": null,
        "code": null,
    }})
}

fn unauthorized() -> Response {
    let body = json!({"error": {
        "message": "Incorrect API key provided.",
        "type": "invalid_request_error",
        "param": null,
        "code": "invalid_api_key",
    }});
    (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response()
}

/// Serves `app` on `listener` in a background task until `shutdown` turns
/// `true`; then every connection dies at once, as if the server vanished.
/// Shared by the fake servers.
pub fn serve_until_shutdown(listener: TcpListener, app: Router, shutdown: &watch::Sender<bool>) {
    let listener = KillableListener {
        inner: Some(listener),
        shutdown: shutdown.subscribe(),
    };
    let mut stop = shutdown.subscribe();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|&down| down).await;
            })
            .await;
    });
}

/// The TCP listener, closed as soon as shutdown is signalled.
struct KillableListener {
    inner: Option<TcpListener>,
    shutdown: watch::Receiver<bool>,
}

impl axum::serve::Listener for KillableListener {
    type Io = KillableStream;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Some(listener) = &self.inner else {
                return std::future::pending().await;
            };
            let accepted = tokio::select! {
                biased;
                _ = self.shutdown.wait_for(|&down| down) => None,
                accepted = listener.accept() => Some(accepted),
            };
            match accepted {
                // Dropping the listener refuses every later connection attempt.
                None => self.inner = None,
                Some(Ok((stream, peer))) => {
                    // As real servers stream: each event goes out at once,
                    // not held back by Nagle until the last one is acknowledged.
                    let _ = stream.set_nodelay(true);
                    let stream = KillableStream::new(stream, self.shutdown.clone());
                    return (stream, peer);
                }
                // Out of file descriptors or similar: back off instead of spinning.
                Some(Err(_)) => tokio::time::sleep(Duration::from_millis(10)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        match &self.inner {
            Some(listener) => listener.local_addr(),
            None => Err(io::Error::other("the fake server is shut down")),
        }
    }
}

/// A connection that fails every read and write once shutdown is signalled, so
/// hyper drops it (idle keep-alive connections and answers in progress alike).
struct KillableStream {
    inner: TcpStream,
    killed: Pin<Box<dyn Future<Output = ()> + Send>>,
    dead: bool,
}

impl KillableStream {
    fn new(inner: TcpStream, mut shutdown: watch::Receiver<bool>) -> Self {
        let killed = Box::pin(async move {
            let _ = shutdown.wait_for(|&down| down).await;
        });
        Self {
            inner,
            killed,
            dead: false,
        }
    }

    /// Fails once shutdown is signalled; otherwise registers for the signal.
    fn check(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if !self.dead && self.killed.as_mut().poll(cx).is_ready() {
            self.dead = true;
        }
        if self.dead {
            Err(io::Error::new(io::ErrorKind::ConnectionAborted, "fake LLM shut down"))
        } else {
            Ok(())
        }
    }
}

impl AsyncRead for KillableStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Err(error) = this.check(cx) {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for KillableStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Err(error) = this.check(cx) {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if let Err(error) = this.check(cx) {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut this.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if let Err(error) = this.check(cx) {
            return Poll::Ready(Err(error));
        }
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Waits until `check` finds something, looking again whenever `changed` is
/// notified; `None` once `timeout` has passed. Each look registers for the
/// next notification first, so a change landing in between is not missed.
/// What the fake servers' `wait_for_…` are built on.
pub async fn wait_on<T>(changed: &Notify, timeout: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let notified = changed.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(found) = check() {
            return Some(found);
        }
        if tokio::time::timeout_at(deadline, notified).await.is_err() {
            return None;
        }
    }
}
