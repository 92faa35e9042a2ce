//! A fake signal-cli JSON-RPC daemon, listening at once on a Unix socket in a
//! temp dir and on TCP `127.0.0.1:0`, for testing the Signal client and
//! gateway over the real wire protocol: newline-delimited JSON-RPC 2.0, as
//! `signal-cli daemon --receive-mode=manual` speaks it.
//!
//! It answers `version`, `listAccounts`, `subscribeReceive` /
//! `unsubscribeReceive`, `send` (checking its `textStyle`), `remoteDelete`
//! (the `targetTimestamp` of a message, recorded as deleted), `sendTyping`,
//! `sendReaction`, `getAttachment` (the bytes of an attachment registered
//! with [`FakeSignal::add_attachment`], in base64, or signal-cli's error for
//! an unknown one), and, as a multi-account daemon does, `startLink` (a
//! `sgnl://linkdevice` URI) and `finishLink` (that URI and a device name in,
//! the linked account's number out: the phone agrees at once), and `-32601`
//! to anything else. [`FakeSignal::answer_next`] replaces a call's result
//! (to answer in the wrong shape). In manual receive mode nothing is pushed on a
//! connection before it called `subscribeReceive`: envelopes queued while no
//! subscriber is connected wait, and go out after the next subscription.
//!
//! Tests can make the next call of a method fail with a JSON-RPC error
//! ([`FakeSignal::fail_next`]), hold its response back until released (to
//! answer out of order, or never), write raw lines (garbage, giant lines,
//! responses to unknown ids), and drop every connection mid-stream. Every wait
//! is on an event, under a timeout. Self-contained (tokio, tokio-util,
//! serde_json, tempfile, base64).
#![allow(dead_code)] // every including target uses a different part of it

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// The account the fake daemon serves.
pub const ACCOUNT: &str = "+15550000001";
/// That account's UUID.
pub const ACCOUNT_UUID: &str = "b0b0b0b0-0000-4000-8000-000000000001";
/// What `version` answers.
pub const VERSION: &str = "0.13.19";
/// The account a phone links through `startLink` / `finishLink`.
pub const LINKED_NUMBER: &str = "+15550000077";
/// The URI `startLink` answers.
pub const LINK_URI: &str = "sgnl://linkdevice?uuid=ZmFrZS1saW5r&pub_key=BWZha2UtcHVibGljLWtleS1vZi10aGUtZGV2aWNl";
/// The timestamp of the first message the fake sends; later ones count up.
const FIRST_SENT_TIMESTAMP: u64 = 1_800_000_000_000;
/// How long the `wait_for_*` helpers wait before failing the test.
const WAIT: Duration = Duration::from_secs(5);

/// The JSON-RPC error codes of signal-cli-jsonrpc(5).
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const INTERNAL_ERROR: i64 = -32603;
    pub const USER_ERROR: i64 = -1;
    pub const IO_ERROR: i64 = -3;
    pub const UNTRUSTED_KEY: i64 = -4;
    pub const RATE_LIMIT: i64 = -5;
}

/// One request the fake received.
#[derive(Clone, Debug, PartialEq)]
pub struct Call {
    /// Which connection it came on (counted from 1).
    pub connection: u64,
    pub id: Value,
    pub method: String,
    pub params: Value,
}

/// One successful `send`, as the client asked for it.
#[derive(Clone, Debug, PartialEq)]
pub struct Sent {
    /// The timestamp the fake gave the message (its Signal message id).
    pub timestamp: u64,
    /// `recipient`, as a list even when sent as one string.
    pub recipients: Vec<String>,
    pub group_id: Option<String>,
    pub message: Option<String>,
    pub quote_timestamp: Option<u64>,
    pub quote_author: Option<String>,
    /// `textStyle`, as a list even when sent as one string.
    pub text_styles: Vec<String>,
    /// Every parameter, as received.
    pub params: Value,
}

/// Handle to a running fake daemon; it stops when dropped.
pub struct FakeSignal {
    shared: Arc<Shared>,
    socket_path: PathBuf,
    tcp_addr: SocketAddr,
    stop: CancellationToken,
    _dir: tempfile::TempDir,
}

struct Shared {
    state: Mutex<State>,
    /// Woken whenever anything in `state` changed.
    changed: Notify,
}

#[derive(Default)]
struct State {
    calls: Vec<Call>,
    sent: Vec<Sent>,
    /// The `targetTimestamp`s of `remoteDelete`s, in order.
    deleted: Vec<u64>,
    failures: HashMap<String, VecDeque<(i64, String)>>,
    /// Results to answer instead of the usual, per method, in order.
    answers: HashMap<String, VecDeque<Value>>,
    /// A failure for a method once it succeeded this many more times.
    failing_after: HashMap<String, (usize, (i64, String))>,
    /// Methods whose next response(s) are held back, with how many.
    hold: HashMap<String, usize>,
    held: Vec<(u64, Vec<u8>)>,
    /// Envelopes waiting for a subscriber.
    queued: VecDeque<Value>,
    connections: HashMap<u64, Connection>,
    next_connection: u64,
    next_subscription: i64,
    next_timestamp: u64,
    /// Envelopes pushed to a subscriber so far.
    delivered: usize,
    /// Connections accepted so far, including closed ones.
    accepted: u64,
    /// The bytes `getAttachment` answers, by attachment id.
    attachments: HashMap<String, Vec<u8>>,
}

struct Connection {
    out: mpsc::UnboundedSender<Vec<u8>>,
    subscription: Option<i64>,
    /// Cancelled to drop the connection.
    kill: CancellationToken,
}

impl State {
    /// The failure scheduled by `fail_after` for this call of `method`, if
    /// it is due; a call that is not due counts as one more success.
    fn failure_due(&mut self, method: &str) -> Option<(i64, String)> {
        let (successes, _) = self.failing_after.get_mut(method)?;
        if *successes > 0 {
            *successes -= 1;
            return None;
        }
        self.failing_after.remove(method).map(|(_, failure)| failure)
    }

    /// The most recently subscribed connection, which gets new envelopes.
    fn subscriber(&self) -> Option<(u64, &Connection)> {
        self.connections
            .iter()
            .filter(|(_, conn)| conn.subscription.is_some())
            .max_by_key(|(_, conn)| conn.subscription)
            .map(|(id, conn)| (*id, conn))
    }
}

impl FakeSignal {
    /// Starts the fake on a fresh Unix socket and on `127.0.0.1:0`.
    pub async fn start() -> FakeSignal {
        let dir = tempfile::tempdir().expect("a temp dir for the socket");
        let socket_path = dir.path().join("signal-cli.sock");
        let unix = UnixListener::bind(&socket_path).expect("bind the fake's Unix socket");
        let tcp = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the fake's TCP port");
        let tcp_addr = tcp.local_addr().expect("the fake's TCP address");
        let shared = Arc::new(Shared {
            state: Mutex::new(State {
                next_connection: 1,
                next_subscription: 0,
                next_timestamp: FIRST_SENT_TIMESTAMP,
                ..State::default()
            }),
            changed: Notify::new(),
        });
        let stop = CancellationToken::new();
        {
            let (shared, stop) = (shared.clone(), stop.clone());
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => break,
                        accepted = unix.accept() => match accepted {
                            Ok((stream, _)) => spawn_connection(&shared, &stop, stream),
                            Err(_) => break,
                        },
                    }
                }
            });
        }
        {
            let (shared, stop) = (shared.clone(), stop.clone());
            tokio::spawn(async move {
                loop {
                    tokio::select! {
                        () = stop.cancelled() => break,
                        accepted = tcp.accept() => match accepted {
                            Ok((stream, _)) => spawn_connection(&shared, &stop, stream),
                            Err(_) => break,
                        },
                    }
                }
            });
        }
        FakeSignal {
            shared,
            socket_path,
            tcp_addr,
            stop,
            _dir: dir,
        }
    }

    /// The Unix socket's path.
    pub fn socket_path(&self) -> &Path {
        &self.socket_path
    }

    /// The TCP address.
    pub fn tcp_addr(&self) -> SocketAddr {
        self.tcp_addr
    }

    /// The endpoint in configuration form: `unix:PATH`.
    pub fn unix_endpoint(&self) -> String {
        format!("unix:{}", self.socket_path.display())
    }

    /// The endpoint in configuration form: `tcp:127.0.0.1:PORT`.
    pub fn tcp_endpoint(&self) -> String {
        format!("tcp:{}", self.tcp_addr)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.shared.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `envelope` for the current subscriber, or for the next one.
    pub fn push_envelope(&self, envelope: Value) {
        let mut state = self.state();
        state.queued.push_back(envelope);
        if let Some((_, conn)) = state.subscriber() {
            let (out, subscription) = (conn.out.clone(), conn.subscription);
            flush_queue(&mut state, &out, subscription);
        }
        drop(state);
        self.shared.changed.notify_waiters();
    }

    /// Makes `getAttachment` answer `bytes` for attachment `id` (what signal-cli
    /// downloaded when the message came); whatever size an envelope declares.
    pub fn add_attachment(&self, id: &str, bytes: impl Into<Vec<u8>>) {
        self.state().attachments.insert(id.to_owned(), bytes.into());
    }

    /// Makes the next call of `method` fail with this JSON-RPC error.
    pub fn fail_next(&self, method: &str, code: i64, message: &str) {
        self.state()
            .failures
            .entry(method.to_owned())
            .or_default()
            .push_back((code, message.to_owned()));
    }

    /// Makes the next call of `method` succeed with `result`, whatever it is.
    pub fn answer_next(&self, method: &str, result: Value) {
        self.state()
            .answers
            .entry(method.to_owned())
            .or_default()
            .push_back(result);
    }

    /// Makes a call of `method` fail with this JSON-RPC error once
    /// `successes` more calls of it were answered normally: e.g. the second
    /// part of a reply with `fail_after("send", 1, …)`.
    pub fn fail_after(&self, method: &str, successes: usize, code: i64, message: &str) {
        self.state()
            .failing_after
            .insert(method.to_owned(), (successes, (code, message.to_owned())));
    }

    /// Holds back the response to the next call of `method` until [`release_held`](Self::release_held).
    pub fn hold_next(&self, method: &str) {
        *self.state().hold.entry(method.to_owned()).or_default() += 1;
    }

    /// Sends every held response, in the order the calls came.
    pub fn release_held(&self) {
        let mut state = self.state();
        for (connection, line) in std::mem::take(&mut state.held) {
            if let Some(conn) = state.connections.get(&connection) {
                let _ = conn.out.send(line);
            }
        }
    }

    /// Writes `line` (a newline is added) to every connection as it is.
    pub fn send_raw(&self, line: impl Into<Vec<u8>>) {
        let mut line = line.into();
        line.push(b'\n');
        for conn in self.state().connections.values() {
            let _ = conn.out.send(line.clone());
        }
    }

    /// Drops every open connection, as a crashing or restarting daemon would.
    pub fn drop_connections(&self) {
        let mut state = self.state();
        for conn in state.connections.values() {
            conn.kill.cancel();
        }
        state.connections.clear();
        drop(state);
        self.shared.changed.notify_waiters();
    }

    /// The messages deleted for everyone (`remoteDelete`), by timestamp, in order.
    pub fn deleted(&self) -> Vec<u64> {
        self.state().deleted.clone()
    }

    /// Every call so far of `method`.
    pub fn calls(&self, method: &str) -> Vec<Call> {
        self.state()
            .calls
            .iter()
            .filter(|call| call.method == method)
            .cloned()
            .collect()
    }

    /// Every successful `send` so far.
    pub fn sent(&self) -> Vec<Sent> {
        self.state().sent.clone()
    }

    /// Envelopes waiting for a subscriber.
    pub fn queued(&self) -> usize {
        self.state().queued.len()
    }

    /// Envelopes pushed to subscribers so far.
    pub fn delivered(&self) -> usize {
        self.state().delivered
    }

    /// Connections open now.
    pub fn connections(&self) -> usize {
        self.state().connections.len()
    }

    /// Waits until `check` gives something, or fails the test.
    async fn wait_for<T>(&self, what: &str, check: impl FnMut(&State) -> Option<T>) -> T {
        self.within(WAIT, check)
            .await
            .unwrap_or_else(|| panic!("the fake signal-cli waited in vain for {what}"))
    }

    /// The first successful `send` satisfying `wanted`, waiting up to
    /// `timeout` for it; `None` if none came.
    pub async fn sent_matching(&self, timeout: Duration, wanted: impl Fn(&Sent) -> bool) -> Option<Sent> {
        self.within(timeout, |state| state.sent.iter().find(|sent| wanted(sent)).cloned())
            .await
    }

    /// What `check` finds, looking again on every change, or `None` after `timeout`.
    async fn within<T>(&self, timeout: Duration, mut check: impl FnMut(&State) -> Option<T>) -> Option<T> {
        let wait = async {
            loop {
                let notified = self.shared.changed.notified();
                tokio::pin!(notified);
                notified.as_mut().enable();
                if let Some(found) = check(&self.state()) {
                    return found;
                }
                notified.await;
            }
        };
        tokio::time::timeout(timeout, wait).await.ok()
    }

    /// Waits until `method` was called `count` times; returns those calls.
    pub async fn wait_for_calls(&self, method: &str, count: usize) -> Vec<Call> {
        self.wait_for(&format!("{count} calls of {method}"), |state| {
            let calls: Vec<Call> = state
                .calls
                .iter()
                .filter(|call| call.method == method)
                .cloned()
                .collect();
            (calls.len() >= count).then_some(calls)
        })
        .await
    }

    /// Waits until `count` messages were sent; returns them.
    pub async fn wait_for_sent(&self, count: usize) -> Vec<Sent> {
        self.wait_for(&format!("{count} sent messages"), |state| {
            (state.sent.len() >= count).then(|| state.sent.clone())
        })
        .await
    }

    /// The `n`th successful `send` that `wanted` picks, waiting up to
    /// `timeout` for it.
    ///
    /// # Panics
    /// If there is none by then.
    pub async fn nth_sent(&self, n: usize, timeout: Duration, wanted: impl Fn(&Sent) -> bool) -> Sent {
        let picked = self.within(timeout, |state| {
            state.sent.iter().filter(|sent| wanted(sent)).nth(n - 1).cloned()
        });
        picked.await.unwrap_or_else(|| {
            panic!(
                "no message {n} of those wanted within {timeout:?}; sent: {:#?}",
                self.sent()
            )
        })
    }

    /// Waits until exactly `count` connections are open.
    pub async fn wait_for_connections(&self, count: usize) {
        self.wait_for(&format!("{count} open connections"), |state| {
            (state.connections.len() == count).then_some(())
        })
        .await
    }

    /// Waits until `count` connections were accepted in all.
    pub async fn wait_for_accepted(&self, count: u64) {
        self.wait_for(&format!("{count} accepted connections"), |state| {
            (state.accepted >= count).then_some(())
        })
        .await
    }

    /// Waits until a connection subscribed.
    pub async fn wait_for_subscriber(&self) {
        self.wait_for("a subscribed connection", |state| {
            state.subscriber().is_some().then_some(())
        })
        .await
    }

    /// Stops listening and drops every connection.
    pub fn stop(&self) {
        self.stop.cancel();
        self.drop_connections();
    }
}

impl Drop for FakeSignal {
    fn drop(&mut self) {
        self.stop();
    }
}

fn spawn_connection<S>(shared: &Arc<Shared>, stop: &CancellationToken, stream: S)
where
    S: AsyncRead + AsyncWrite + Send + 'static,
{
    let (out, rx) = mpsc::unbounded_channel();
    let kill = stop.child_token();
    let id = {
        let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
        let id = state.next_connection;
        state.next_connection += 1;
        state.accepted += 1;
        state.connections.insert(
            id,
            Connection {
                out: out.clone(),
                subscription: None,
                kill: kill.clone(),
            },
        );
        id
    };
    shared.changed.notify_waiters();
    let shared = shared.clone();
    tokio::spawn(async move {
        serve(&shared, id, stream, out, rx, kill).await;
        shared
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .connections
            .remove(&id);
        shared.changed.notify_waiters();
    });
}

async fn serve<S>(
    shared: &Shared,
    id: u64,
    stream: S,
    out: mpsc::UnboundedSender<Vec<u8>>,
    mut rx: mpsc::UnboundedReceiver<Vec<u8>>,
    kill: CancellationToken,
) where
    S: AsyncRead + AsyncWrite,
{
    let (read, mut write) = tokio::io::split(stream);
    let mut lines = BufReader::new(read).lines();
    loop {
        tokio::select! {
            biased;
            () = kill.cancelled() => return,
            line = rx.recv() => {
                let Some(line) = line else { return };
                if write.write_all(&line).await.is_err() || write.flush().await.is_err() {
                    return;
                }
            }
            line = lines.next_line() => match line {
                Ok(Some(line)) => handle(shared, id, &line, &out),
                _ => return,
            },
        }
    }
}

/// Answers one request line.
fn handle(shared: &Shared, connection: u64, line: &str, out: &mpsc::UnboundedSender<Vec<u8>>) {
    let request: Value = match serde_json::from_str(line) {
        Ok(request) => request,
        Err(_) => {
            let _ = out.send(encode(&json!({ "jsonrpc": "2.0", "id": null,
                "error": { "code": codes::PARSE_ERROR, "message": "Parse error" } })));
            return;
        }
    };
    let id = request.get("id").cloned().unwrap_or(Value::Null);
    let method = request
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let params = request.get("params").cloned().unwrap_or(Value::Null);
    let mut state = shared.state.lock().unwrap_or_else(PoisonError::into_inner);
    state.calls.push(Call {
        connection,
        id: id.clone(),
        method: method.clone(),
        params: params.clone(),
    });
    let injected = state
        .failures
        .get_mut(&method)
        .and_then(VecDeque::pop_front)
        .or_else(|| state.failure_due(&method));
    let replaced = state.answers.get_mut(&method).and_then(VecDeque::pop_front);
    let outcome = match (injected, replaced) {
        (Some((code, message)), _) => Err((code, message)),
        (None, Some(result)) => Ok(result),
        (None, None) => answer(&mut state, connection, &method, &params),
    };
    let response = match outcome {
        Ok(result) => json!({ "jsonrpc": "2.0", "id": id, "result": result }),
        Err((code, message)) => json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }),
    };
    let response = encode(&response);
    match state.hold.get_mut(&method).filter(|count| **count > 0) {
        Some(count) => {
            *count -= 1;
            state.held.push((connection, response));
        }
        None => {
            let _ = out.send(response);
        }
    }
    // A new subscriber gets what waited for one, after its subscription id.
    if method == "subscribeReceive" {
        let subscription = state.connections.get(&connection).and_then(|conn| conn.subscription);
        if subscription.is_some() {
            flush_queue(&mut state, out, subscription);
        }
    }
    drop(state);
    shared.changed.notify_waiters();
}

/// The result of a successful call, or the error to answer with.
fn answer(state: &mut State, connection: u64, method: &str, params: &Value) -> Result<Value, (i64, String)> {
    let text = |key: &str| params.get(key).and_then(Value::as_str).map(str::to_owned);
    match method {
        "version" => Ok(json!({ "version": VERSION })),
        "listAccounts" => Ok(json!([{ "number": ACCOUNT }])),
        "subscribeReceive" => {
            let subscription = state.next_subscription;
            state.next_subscription += 1;
            if let Some(conn) = state.connections.get_mut(&connection) {
                conn.subscription = Some(subscription);
            }
            Ok(json!(subscription))
        }
        "unsubscribeReceive" => {
            if let Some(conn) = state.connections.get_mut(&connection) {
                conn.subscription = None;
            }
            Ok(json!(true))
        }
        "send" | "sendReaction" => {
            let recipients: Vec<String> = match params.get("recipient") {
                Some(Value::String(one)) => vec![one.clone()],
                Some(Value::Array(many)) => many.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
                _ => Vec::new(),
            };
            let group_id = text("groupId");
            if recipients.is_empty() && group_id.is_none() {
                return Err((codes::INVALID_PARAMS, "No recipients given".to_owned()));
            }
            let text_styles = check_text_styles(params)?;
            if let Err(error) = attachments_of(params) {
                return Err((codes::USER_ERROR, error));
            }
            let timestamp = state.next_timestamp;
            state.next_timestamp += 1;
            if method == "send" {
                state.sent.push(Sent {
                    timestamp,
                    recipients: recipients.clone(),
                    group_id,
                    message: text("message"),
                    quote_timestamp: params.get("quoteTimestamp").and_then(Value::as_u64),
                    quote_author: text("quoteAuthor"),
                    text_styles,
                    params: params.clone(),
                });
            }
            let results: Vec<Value> = recipients
                .iter()
                .map(|recipient| json!({ "recipientAddress": address(recipient), "type": "SUCCESS" }))
                .collect();
            Ok(json!({ "timestamp": timestamp, "results": results }))
        }
        "remoteDelete" => {
            let target = params.get("targetTimestamp").and_then(Value::as_u64);
            let target = target.ok_or((codes::USER_ERROR, "Missing target timestamp".to_owned()))?;
            if params.get("recipient").is_none() && params.get("groupId").is_none() {
                return Err((codes::INVALID_PARAMS, "No recipients given".to_owned()));
            }
            state.deleted.push(target);
            let timestamp = state.next_timestamp;
            state.next_timestamp += 1;
            Ok(json!({ "timestamp": timestamp, "results": [] }))
        }
        "sendTyping" => Ok(json!({})),
        "startLink" => Ok(json!({ "deviceLinkUri": LINK_URI })),
        "finishLink" => {
            if text("deviceLinkUri").as_deref() != Some(LINK_URI) {
                return Err((codes::USER_ERROR, "Invalid device link uri".to_owned()));
            }
            Ok(json!({ "number": LINKED_NUMBER }))
        }
        "getAttachment" => {
            let id = text("id").ok_or((codes::USER_ERROR, "Missing attachment id parameter".to_owned()))?;
            if params.get("recipient").is_none() && params.get("groupId").is_none() {
                return Err((codes::INVALID_PARAMS, "Neither recipient nor group id given".to_owned()));
            }
            let bytes = state
                .attachments
                .get(&id)
                .ok_or_else(|| (codes::USER_ERROR, format!("Could not find attachment with ID: {id}")))?;
            Ok(json!({ "data": base64::engine::general_purpose::STANDARD.encode(bytes) }))
        }
        _ => Err((codes::METHOD_NOT_FOUND, "Method not implemented".to_owned())),
    }
}

/// The styles signal-cli knows (signal-cli(1), `--text-style`).
const TEXT_STYLES: &[&str] = &["BOLD", "ITALIC", "SPOILER", "STRIKETHROUGH", "MONOSPACE"];

/// `textStyle` of a `send` (one string or a list), checked: each
/// `start:length:STYLE` as signal-cli parses it, answered with its words when
/// it cannot; and, stricter than signal-cli, within the message counted in
/// UTF-16 code units and not empty, which Signal's clients would otherwise
/// clamp or drop in silence.
fn check_text_styles(params: &Value) -> Result<Vec<String>, (i64, String)> {
    let styles: Vec<String> = match params.get("textStyle") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::String(one)) => vec![one.clone()],
        Some(Value::Array(many)) => many
            .iter()
            .map(|style| style.as_str().map(str::to_owned))
            .collect::<Option<_>>()
            .ok_or((codes::INVALID_PARAMS, "textStyle must be strings".to_owned()))?,
        Some(other) => return Err((codes::INVALID_PARAMS, format!("textStyle must be strings, not {other}"))),
    };
    let units = params
        .get("message")
        .and_then(Value::as_str)
        .map_or(0, |message| message.encode_utf16().count());
    for style in &styles {
        let syntax = || {
            (
                codes::USER_ERROR,
                format!("Invalid textStyle syntax ({style}) expected 'start:length:STYLE'"),
            )
        };
        let mut fields = style.splitn(3, ':');
        let (Some(start), Some(length), Some(name)) = (fields.next(), fields.next(), fields.next()) else {
            return Err(syntax());
        };
        let (Ok(start), Ok(length)) = (start.parse::<usize>(), length.parse::<usize>()) else {
            return Err(syntax());
        };
        if !TEXT_STYLES.contains(&name) {
            return Err((codes::USER_ERROR, format!("Invalid style: {name}")));
        }
        if length == 0 || start + length > units {
            return Err((
                codes::USER_ERROR,
                format!("Text style {style} lies outside the message of {units} UTF-16 units"),
            ));
        }
    }
    Ok(styles)
}

/// One attachment of a `send`, from its data URI.
#[derive(Clone, Debug, PartialEq)]
pub struct Attachment {
    pub media_type: String,
    pub file_name: Option<String>,
    pub bytes: Vec<u8>,
}

/// The attachments of a `send`'s params (`attachments`, a list, or
/// `attachment`, one), each a data URI as signal-cli reads them
/// (`data:<type>;filename=<name>;base64,<data>`); a file path is refused
/// (the fake has no files), as is a URI it cannot read.
pub fn attachments_of(params: &Value) -> Result<Vec<Attachment>, String> {
    let uris: Vec<&Value> = match (params.get("attachments"), params.get("attachment")) {
        (Some(Value::Array(many)), _) => many.iter().collect(),
        (Some(one), _) | (None, Some(one)) => vec![one],
        (None, None) => Vec::new(),
    };
    uris.into_iter()
        .map(|uri| {
            use base64::Engine;
            let uri = uri.as_str().ok_or("an attachment is not a string")?;
            let rest = uri
                .strip_prefix("data:")
                .ok_or("Attachment file not found (not a data URI)")?;
            let (head, data) = rest.split_once(',').ok_or("a data URI without data")?;
            let mut fields = head.split(';');
            let media_type = fields.next().unwrap_or_default().to_owned();
            let fields: Vec<&str> = fields.collect();
            if fields.last() != Some(&"base64") {
                return Err("a data URI that is not base64".to_owned());
            }
            let file_name = fields
                .iter()
                .find_map(|f| f.strip_prefix("filename="))
                .map(str::to_owned);
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .map_err(|error| format!("bad base64 in a data URI: {error}"))?;
            Ok(Attachment {
                media_type,
                file_name,
                bytes,
            })
        })
        .collect()
}

/// A recipient as signal-cli reports it: by UUID or by number.
fn address(recipient: &str) -> Value {
    if recipient.starts_with('+') {
        json!({ "uuid": null, "number": recipient })
    } else {
        json!({ "uuid": recipient, "number": null })
    }
}

/// Sends every queued envelope to `out` as `receive` notifications.
fn flush_queue(state: &mut State, out: &mpsc::UnboundedSender<Vec<u8>>, subscription: Option<i64>) {
    while let Some(envelope) = state.queued.pop_front() {
        let notification = json!({ "jsonrpc": "2.0", "method": "receive", "params": {
            "subscription": subscription,
            "result": { "envelope": envelope, "account": ACCOUNT },
        } });
        if out.send(encode(&notification)).is_err() {
            break;
        }
        state.delivered += 1;
    }
}

fn encode(message: &Value) -> Vec<u8> {
    let mut line = serde_json::to_vec(message).expect("JSON encodes");
    line.push(b'\n');
    line
}

// ---- Envelopes, shaped like signal-cli's ----

fn envelope(from_uuid: &str, timestamp: u64, content: Value) -> Value {
    let mut envelope = json!({
        "source": from_uuid,
        "sourceNumber": null,
        "sourceUuid": from_uuid,
        "sourceName": "Ada",
        "sourceDevice": 1,
        "timestamp": timestamp,
        "serverReceivedTimestamp": timestamp + 3,
        "serverDeliveredTimestamp": timestamp + 4,
    });
    if let (Some(envelope), Some(content)) = (envelope.as_object_mut(), content.as_object()) {
        envelope.extend(content.clone());
    }
    envelope
}

fn data_message(timestamp: u64, fields: Value) -> Value {
    let mut data = json!({ "timestamp": timestamp, "message": null, "expiresInSeconds": 0, "viewOnce": false });
    if let (Some(data), Some(fields)) = (data.as_object_mut(), fields.as_object()) {
        data.extend(fields.clone());
    }
    json!({ "dataMessage": data })
}

/// A one-to-one text message from `from_uuid`.
pub fn text_envelope(from_uuid: &str, timestamp: u64, text: &str) -> Value {
    envelope(
        from_uuid,
        timestamp,
        data_message(timestamp, json!({ "message": text })),
    )
}

/// A group message from `from_uuid` mentioning the account: `text` starts with
/// the mention's placeholder (U+FFFC), as signal-cli delivers it.
pub fn group_mention_envelope(from_uuid: &str, timestamp: u64, group_id: &str, text: &str) -> Value {
    let message = format!("\u{FFFC} {text}");
    let fields = json!({
        "message": message,
        "groupInfo": { "groupId": group_id, "groupName": "Team", "revision": 1, "type": "DELIVER" },
        "mentions": [{ "name": ACCOUNT, "number": ACCOUNT, "uuid": ACCOUNT_UUID, "start": 0, "length": 1 }],
    });
    envelope(from_uuid, timestamp, data_message(timestamp, fields))
}

/// A group message from `from_uuid`, called `name`, addressed to nobody;
/// quoting the message sent at `quoted` (timestamp, author UUID) if given.
pub fn group_text_envelope(
    from_uuid: &str,
    name: &str,
    timestamp: u64,
    group_id: &str,
    text: &str,
    quoted: Option<(u64, &str)>,
) -> Value {
    let mut fields = json!({
        "message": text,
        "groupInfo": { "groupId": group_id, "groupName": "Family", "revision": 1, "type": "DELIVER" },
    });
    if let Some((id, author)) = quoted {
        fields["quote"] = json!({ "id": id, "author": author, "authorNumber": null, "authorUuid": author,
            "text": "…", "attachments": [] });
    }
    let mut envelope = envelope(from_uuid, timestamp, data_message(timestamp, fields));
    envelope["sourceName"] = json!(name);
    envelope
}

/// `from_uuid`'s edit, at `timestamp`, of their group message sent at
/// `target`, which now says `text`.
pub fn group_edit_envelope(from_uuid: &str, timestamp: u64, group_id: &str, target: u64, text: &str) -> Value {
    let data = json!({
        "timestamp": timestamp,
        "message": text,
        "groupInfo": { "groupId": group_id, "groupName": "Family", "revision": 1, "type": "DELIVER" },
    });
    let mut envelope = envelope(
        from_uuid,
        timestamp,
        json!({ "editMessage": { "targetSentTimestamp": target, "dataMessage": data } }),
    );
    envelope["sourceName"] = json!("Bob");
    envelope
}

/// `from_uuid` deleting for everyone, at `timestamp`, their group message
/// sent at `target`.
pub fn group_delete_envelope(from_uuid: &str, timestamp: u64, group_id: &str, target: u64) -> Value {
    let fields = json!({
        "remoteDelete": { "timestamp": target },
        "groupInfo": { "groupId": group_id, "groupName": "Family", "revision": 1, "type": "DELIVER" },
    });
    envelope(from_uuid, timestamp, data_message(timestamp, fields))
}

/// A one-to-one message from `from_uuid` quoting the message sent at
/// `quoted_timestamp` by `quoted_author_uuid`.
pub fn quote_envelope(
    from_uuid: &str,
    timestamp: u64,
    text: &str,
    quoted_timestamp: u64,
    quoted_author_uuid: &str,
) -> Value {
    let fields = json!({
        "message": text,
        "quote": { "id": quoted_timestamp, "author": quoted_author_uuid, "authorNumber": null,
            "authorUuid": quoted_author_uuid, "text": "…", "attachments": [] },
    });
    envelope(from_uuid, timestamp, data_message(timestamp, fields))
}

/// A reaction (or its removal) by `from_uuid` on the message sent at
/// `target_timestamp` by `target_author_uuid`.
pub fn reaction_envelope(
    from_uuid: &str,
    timestamp: u64,
    emoji: &str,
    target_timestamp: u64,
    target_author_uuid: &str,
    remove: bool,
) -> Value {
    let fields = json!({ "reaction": { "emoji": emoji, "targetAuthor": target_author_uuid, "targetAuthorNumber": null,
        "targetAuthorUuid": target_author_uuid, "targetSentTimestamp": target_timestamp, "isRemove": remove } });
    envelope(from_uuid, timestamp, data_message(timestamp, fields))
}

/// A delivery receipt from `from_uuid` for messages sent at `timestamps`.
pub fn receipt_envelope(from_uuid: &str, timestamp: u64, timestamps: &[u64]) -> Value {
    envelope(
        from_uuid,
        timestamp,
        json!({ "receiptMessage": { "when": timestamp, "isDelivery": true, "isRead": false, "isViewed": false,
            "timestamps": timestamps } }),
    )
}

/// A typing indicator from `from_uuid`.
pub fn typing_envelope(from_uuid: &str, timestamp: u64) -> Value {
    envelope(
        from_uuid,
        timestamp,
        json!({ "typingMessage": { "action": "STARTED", "timestamp": timestamp } }),
    )
}

/// An attachment as signal-cli lists it in a data message: `filename` is
/// `None` for a voice note recorded in the app.
pub fn attachment(id: &str, content_type: &str, filename: Option<&str>, size: u64) -> Value {
    json!({ "contentType": content_type, "filename": filename, "id": id, "size": size,
        "width": null, "height": null, "caption": null, "uploadTimestamp": 1_700_000_000_000u64 })
}

/// A one-to-one message from `from_uuid` with `attachments` (see
/// [`attachment`]) and an optional text.
pub fn attachment_envelope(from_uuid: &str, timestamp: u64, text: Option<&str>, attachments: Vec<Value>) -> Value {
    envelope(
        from_uuid,
        timestamp,
        data_message(timestamp, json!({ "message": text, "attachments": attachments })),
    )
}

/// A sticker from `from_uuid` (signal-cli names only its pack and number).
pub fn sticker_envelope(from_uuid: &str, timestamp: u64) -> Value {
    let fields = json!({ "sticker": { "packId": "9a3c5e7f0b1d2e4f6a8c0e2f4a6c8e0f", "stickerId": 4 } });
    envelope(from_uuid, timestamp, data_message(timestamp, fields))
}

/// A shared contact from `from_uuid`.
pub fn contact_envelope(from_uuid: &str, timestamp: u64, given: &str, phone: &str) -> Value {
    let contact = json!({ "name": { "nickname": null, "given": given, "family": null, "prefix": null,
        "suffix": null, "middle": null }, "avatar": null,
        "phone": [{ "value": phone, "type": "MOBILE", "label": null }],
        "email": null, "address": null, "organization": null });
    envelope(
        from_uuid,
        timestamp,
        data_message(timestamp, json!({ "contacts": [contact] })),
    )
}

/// What the account's own device `device` sent to `destination` (a number,
/// or a UUID when `destination_uuid` only), as the sync message this device
/// receives: `syncMessage.sentMessage`, the data message's `fields` beside
/// the destination, as signal-cli unwraps them.
pub fn sync_sent_envelope(
    destination_number: Option<&str>,
    destination_uuid: Option<&str>,
    timestamp: u64,
    device: u64,
    fields: Value,
) -> Value {
    let mut sent = json!({
        "destination": destination_number.or(destination_uuid),
        "destinationNumber": destination_number,
        "destinationUuid": destination_uuid,
        "timestamp": timestamp, "message": null, "expiresInSeconds": 0, "viewOnce": false,
    });
    if let (Some(sent), Some(fields)) = (sent.as_object_mut(), fields.as_object()) {
        sent.extend(fields.clone());
    }
    json!({
        "source": ACCOUNT, "sourceNumber": ACCOUNT, "sourceUuid": ACCOUNT_UUID, "sourceName": "Me",
        "sourceDevice": device, "timestamp": timestamp,
        "serverReceivedTimestamp": timestamp + 3, "serverDeliveredTimestamp": timestamp + 4,
        "syncMessage": { "sentMessage": sent },
    })
}

/// A note the person wrote to Note to Self on their phone (device 1).
pub fn note_to_self_envelope(timestamp: u64, text: &str) -> Value {
    sync_sent_envelope(
        Some(ACCOUNT),
        Some(ACCOUNT_UUID),
        timestamp,
        1,
        json!({ "message": text }),
    )
}
