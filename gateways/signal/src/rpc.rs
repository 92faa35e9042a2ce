//! A JSON-RPC 2.0 client of the signal-cli daemon.
//!
//! signal-cli speaks newline-delimited JSON on a Unix socket or TCP, or on the
//! stdin and stdout of a child we started (see [`spawn`](crate::spawn)); the
//! client runs over any reader and writer ([`RpcClient::over`]). It serves
//! requests concurrently, so responses come in any order, interleaved with
//! `receive` notifications. One task owns the connection (in the manner of
//! mini-redis' buffered client): [`RpcClient::call`] hands it the request and
//! a oneshot, the task writes the line and, reading, matches each response to
//! its caller by id; notifications go to the [`Notifications`] channel.
//!
//! The reader never stalls on bad input: a line that is not JSON, a response
//! to an id nobody waits for, a line over the length cap are logged and
//! skipped. When the connection goes, every pending call fails with
//! [`RpcError::Closed`] and the notification channel's last item is
//! [`Notification::Lost`]; the caller connects again (and, in manual receive
//! mode, subscribes again — nothing is acknowledged to Signal meanwhile).
//!
//! Notifications wait in a bounded backlog inside the task when their receiver
//! is behind, so responses still flow while the gateway waits on the core; past
//! [`MAX_BACKLOG`] the task stops reading, pushing back onto the daemon.
//! Requests are written from the same task: they are small, and the daemon
//! reads its socket independently of answering, so a write does not wait on
//! our reading.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use passepartout_gateway::lines::{LineReader, ReadLine};
use serde_json::{Map, Value, json};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;
use tracing::{debug, warn};

use crate::endpoint::Endpoint;
use crate::error::{ErrorCode, RemoteError, RpcError};
use crate::spawn::ChildGuard;

/// Longest line read from signal-cli; longer ones are skipped.
pub const MAX_LINE_BYTES: usize = 1 << 20;
/// How long a call waits for its response unless told otherwise.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Notifications the channel holds before the connection task keeps them itself.
pub const DEFAULT_NOTIFICATION_CAPACITY: usize = 64;
/// Notifications the connection task holds before it stops reading.
pub const MAX_BACKLOG: usize = 1024;
/// Calls waiting to be written; further callers wait for room.
const COMMAND_CAPACITY: usize = 64;

/// How an [`RpcClient`] behaves.
#[derive(Clone, Debug)]
pub struct RpcOptions {
    /// The timeout of [`RpcClient::call`].
    pub call_timeout: Duration,
    /// Longest line accepted from the daemon, in bytes.
    pub max_line_bytes: usize,
    /// Capacity of the notification channel.
    pub notification_capacity: usize,
}

impl Default for RpcOptions {
    fn default() -> Self {
        Self {
            call_timeout: DEFAULT_CALL_TIMEOUT,
            max_line_bytes: MAX_LINE_BYTES,
            notification_capacity: DEFAULT_NOTIFICATION_CAPACITY,
        }
    }
}

/// One received envelope, from a `receive` notification.
#[derive(Clone, Debug, PartialEq)]
pub struct Received {
    /// The subscription it came on (manual receive mode), if any.
    pub subscription: Option<i64>,
    /// The account that received it (given in multi-account mode).
    pub account: Option<String>,
    /// The envelope, as signal-cli sent it; see [`normalize`](crate::normalize()).
    pub envelope: Value,
}

/// What the daemon sent without being asked, and the end of the connection.
#[derive(Clone, Debug, PartialEq)]
pub enum Notification {
    /// A `receive` notification carrying an envelope.
    Receive(Received),
    /// Any other notification (or a `receive` without an envelope).
    Other {
        /// The notification's method.
        method: String,
        /// Its parameters, as sent.
        params: Value,
    },
    /// The connection is gone; nothing follows.
    Lost(RpcError),
}

/// The receiving end of a connection's notifications.
#[derive(Debug)]
pub struct Notifications {
    rx: mpsc::Receiver<Notification>,
}

impl Notifications {
    /// The next notification; `None` after [`Notification::Lost`] was taken.
    pub async fn recv(&mut self) -> Option<Notification> {
        self.rx.recv().await
    }
}

/// A handle on one connection to signal-cli. Clones share the connection; it
/// closes when [`RpcClient::close`] is called or the last handle is dropped.
#[derive(Clone, Debug)]
pub struct RpcClient {
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    /// What the connection is to: an endpoint, or a spawned command line.
    label: String,
    /// The process id of the signal-cli child the connection runs over.
    child_id: Option<u32>,
    commands: mpsc::Sender<Command>,
    next_id: AtomicU64,
    call_timeout: Duration,
    shutdown: CancellationToken,
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// A request for the connection task.
#[derive(Debug)]
struct Command {
    id: u64,
    method: String,
    line: Vec<u8>,
    reply: oneshot::Sender<Result<Value, RpcError>>,
}

impl RpcClient {
    /// Connects to `endpoint` and starts the connection task.
    pub async fn connect(endpoint: &Endpoint, options: RpcOptions) -> Result<(RpcClient, Notifications), RpcError> {
        let connect_error = |error: std::io::Error| RpcError::Connect {
            endpoint: endpoint.to_string(),
            kind: error.kind(),
            reason: error.to_string(),
        };
        let connected = match endpoint {
            Endpoint::Unix(path) => {
                let (read, write) = UnixStream::connect(path).await.map_err(connect_error)?.into_split();
                Self::over(read, write, endpoint.to_string(), options)
            }
            Endpoint::Tcp(address) => {
                let stream = TcpStream::connect(address.as_str()).await.map_err(connect_error)?;
                // Requests are small and latency matters more than packing.
                let _ = stream.set_nodelay(true);
                let (read, write) = stream.into_split();
                Self::over(read, write, endpoint.to_string(), options)
            }
        };
        debug!(%endpoint, "connected to signal-cli");
        Ok(connected)
    }

    /// A connection over `reader` and `writer`, already open to signal-cli
    /// (or anything speaking its protocol); `label` says what it is, for
    /// [`endpoint`](Self::endpoint). Starts the connection task.
    pub fn over<R, W>(reader: R, writer: W, label: impl Into<String>, options: RpcOptions) -> (RpcClient, Notifications)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        Self::start(reader, writer, label.into(), None, options)
    }

    /// [`over`](Self::over), with the child process the pipes lead to, which
    /// the connection task ends with the connection.
    pub(crate) fn start<R, W>(
        reader: R,
        writer: W,
        label: String,
        child: Option<ChildGuard>,
        options: RpcOptions,
    ) -> (RpcClient, Notifications)
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (commands_tx, commands_rx) = mpsc::channel(COMMAND_CAPACITY);
        let (notify_tx, notify_rx) = mpsc::channel(options.notification_capacity.max(1));
        let shutdown = CancellationToken::new();
        let child_id = child.as_ref().and_then(ChildGuard::pid);
        let task = Task {
            commands: commands_rx,
            notifications: notify_tx,
            shutdown: shutdown.clone(),
            child,
        };
        tokio::spawn(task.run(LineReader::new(reader, options.max_line_bytes), writer));
        let client = RpcClient {
            shared: Arc::new(Shared {
                label,
                child_id,
                commands: commands_tx,
                next_id: AtomicU64::new(1),
                call_timeout: options.call_timeout,
                shutdown,
            }),
        };
        (client, Notifications { rx: notify_rx })
    }

    /// What this client is connected to: the endpoint (`unix:…`, `tcp:…`), or
    /// the command line of the signal-cli it started.
    pub fn endpoint(&self) -> &str {
        &self.shared.label
    }

    /// The process id of the signal-cli child this connection runs over, when
    /// it started one ([`RpcClient::spawn`]).
    pub fn child_id(&self) -> Option<u32> {
        self.shared.child_id
    }

    /// Calls `method` with `params` (`Value::Null` sends none) and waits for
    /// the result, at most the configured call timeout.
    pub async fn call(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        self.call_with_timeout(method, params, self.shared.call_timeout).await
    }

    /// [`call`](Self::call) with its own timeout.
    pub async fn call_with_timeout(&self, method: &str, params: Value, timeout: Duration) -> Result<Value, RpcError> {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let mut request = json!({ "jsonrpc": "2.0", "id": id, "method": method });
        if !params.is_null() {
            request["params"] = params;
        }
        let mut line = serde_json::to_vec(&request).map_err(|error| RpcError::Protocol {
            reason: format!("cannot encode the request: {error}"),
        })?;
        line.push(b'\n');
        let (reply, answer) = oneshot::channel();
        let command = Command {
            id,
            method: method.to_owned(),
            line,
            reply,
        };
        let exchange = async {
            self.shared
                .commands
                .send(command)
                .await
                .map_err(|_| closed("the connection task ended"))?;
            answer.await.map_err(|_| closed("the connection task ended"))?
        };
        tokio::time::timeout(timeout, exchange).await.unwrap_or_else(|_| {
            Err(RpcError::Timeout {
                method: method.to_owned(),
                timeout,
            })
        })
    }

    /// Whether the connection is gone: every call will fail with [`RpcError::Closed`].
    pub fn is_closed(&self) -> bool {
        self.shared.commands.is_closed()
    }

    /// Closes the connection; pending calls fail with [`RpcError::Closed`].
    /// A signal-cli child it runs over is killed.
    pub fn close(&self) {
        self.shared.shutdown.cancel();
    }
}

fn closed(reason: &str) -> RpcError {
    RpcError::Closed {
        reason: reason.to_owned(),
    }
}

/// The connection task's state.
struct Task {
    commands: mpsc::Receiver<Command>,
    notifications: mpsc::Sender<Notification>,
    shutdown: CancellationToken,
    /// The signal-cli child the connection runs over, if we started it.
    child: Option<ChildGuard>,
}

struct Pending {
    method: String,
    reply: oneshot::Sender<Result<Value, RpcError>>,
}

impl Task {
    async fn run<R, W>(self, mut reader: LineReader<R>, mut writer: W)
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let Task {
            mut commands,
            notifications,
            shutdown,
            child,
        } = self;
        let mut state = State {
            pending: HashMap::new(),
            backlog: VecDeque::new(),
            notifications: notifications.clone(),
        };
        // Why the connection ended.
        let reason = loop {
            tokio::select! {
                biased;
                () = shutdown.cancelled() => break "the client closed the connection".to_owned(),
                permit = notifications.reserve(), if !state.backlog.is_empty() => match permit {
                    Ok(permit) => permit.send(state.backlog.pop_front().expect("the backlog is not empty")),
                    Err(_) => state.backlog.clear(),
                },
                command = commands.recv() => {
                    let Some(command) = command else {
                        break "every client handle was dropped".to_owned();
                    };
                    if let Err(error) = state.write(&mut writer, command).await {
                        break format!("writing to signal-cli failed: {error}");
                    }
                }
                line = reader.next_line(), if state.backlog.len() < MAX_BACKLOG => match line {
                    Ok(ReadLine::Line(bytes)) => state.dispatch(&bytes),
                    Ok(ReadLine::TooLong { len }) => warn!(len, "skipping an over-long line from signal-cli"),
                    // signal-cli ends every line: one cut off by the close is not a message.
                    Ok(ReadLine::Unterminated(_) | ReadLine::Eof) => break "signal-cli closed the connection".to_owned(),
                    Err(error) => break format!("reading from signal-cli failed: {error}"),
                },
            }
        };
        // The child ends before anyone hears of the loss: who does may start
        // another, which would wait for this one's lock on the account.
        // A spawned child exits when its stdin closes.
        drop(writer);
        let reason = match child {
            Some(child) => child.finish(reason).await,
            None => reason,
        };
        debug!(%reason, "signal-cli connection ended");
        drop(notifications);
        state.fail_everything(commands, RpcError::Closed { reason }).await;
    }
}

/// What the connection task keeps between events.
struct State {
    pending: HashMap<u64, Pending>,
    backlog: VecDeque<Notification>,
    notifications: mpsc::Sender<Notification>,
}

impl State {
    async fn write<W: AsyncWrite + Unpin>(&mut self, writer: &mut W, command: Command) -> std::io::Result<()> {
        // Callers that timed out left their entries behind: drop them here.
        self.pending.retain(|_, pending| !pending.reply.is_closed());
        self.pending.insert(
            command.id,
            Pending {
                method: command.method,
                reply: command.reply,
            },
        );
        writer.write_all(&command.line).await?;
        writer.flush().await
    }

    fn dispatch(&mut self, bytes: &[u8]) {
        let message = match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(message)) => message,
            Ok(_) => {
                return warn!(
                    len = bytes.len(),
                    "skipping a line from signal-cli that is not an object"
                );
            }
            Err(error) => return warn!(len = bytes.len(), %error, "skipping a line from signal-cli that is not JSON"),
        };
        match (message.contains_key("method"), message.contains_key("id")) {
            (true, false) => self.notification(message),
            (false, true) => self.response(message),
            (true, true) => warn!("skipping a request from signal-cli: the client serves none"),
            (false, false) => warn!("skipping a JSON object from signal-cli that is no JSON-RPC message"),
        }
    }

    fn response(&mut self, mut message: Map<String, Value>) {
        let id = message.get("id").and_then(Value::as_u64);
        let Some(pending) = id.and_then(|id| self.pending.remove(&id)) else {
            if let Some(error) = message.get("error").filter(|_| message.get("id") == Some(&Value::Null)) {
                warn!(%error, "signal-cli reported an error it could not attach to a request");
            } else {
                debug!(id = ?message.get("id"), "ignoring a response to no pending call");
            }
            return;
        };
        let result = if let Some(error) = message.remove("error") {
            Err(remote_error(error))
        } else if let Some(result) = message.remove("result") {
            Ok(result)
        } else {
            Err(RpcError::Protocol {
                reason: format!("the response to {} has neither result nor error", pending.method),
            })
        };
        // The caller may have timed out meanwhile; then nobody wants it.
        let _ = pending.reply.send(result);
    }

    fn notification(&mut self, mut message: Map<String, Value>) {
        if self.notifications.is_closed() {
            return;
        }
        let method = match message.remove("method") {
            Some(Value::String(method)) => method,
            other => return warn!(method = ?other, "skipping a notification without a method name"),
        };
        let params = message.remove("params").unwrap_or(Value::Null);
        let notification = if method == "receive" {
            received(&params).map_or(Notification::Other { method, params }, Notification::Receive)
        } else {
            Notification::Other { method, params }
        };
        self.backlog.push_back(notification);
    }

    async fn fail_everything(mut self, mut commands: mpsc::Receiver<Command>, error: RpcError) {
        commands.close();
        while let Ok(command) = commands.try_recv() {
            let _ = command.reply.send(Err(error.clone()));
        }
        for (_, pending) in self.pending.drain() {
            let _ = pending.reply.send(Err(error.clone()));
        }
        self.backlog.push_back(Notification::Lost(error));
        while let Some(notification) = self.backlog.pop_front() {
            if self.notifications.send(notification).await.is_err() {
                break;
            }
        }
    }
}

/// The envelope of a `receive` notification's params: `{subscription,
/// result: {envelope, account}}` in manual receive mode, `{envelope, account}`
/// otherwise.
fn received(params: &Value) -> Option<Received> {
    let (subscription, body) = match params.get("result") {
        Some(result) => (params.get("subscription").and_then(Value::as_i64), result),
        None => (None, params),
    };
    Some(Received {
        subscription,
        account: body.get("account").and_then(Value::as_str).map(str::to_owned),
        envelope: body.get("envelope").filter(|e| e.is_object())?.clone(),
    })
}

fn remote_error(error: Value) -> RpcError {
    let Value::Object(mut error) = error else {
        return RpcError::Protocol {
            reason: format!("the error member is not an object: {error}"),
        };
    };
    let code = error
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(ErrorCode::Internal.code());
    let message = match error.remove("message") {
        Some(Value::String(message)) => message,
        _ => String::new(),
    };
    RpcError::Remote(RemoteError {
        code: ErrorCode::from_code(code),
        message,
        data: error.remove("data"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_params_in_both_receive_modes() {
        let manual = json!({ "subscription": 3, "result": { "envelope": { "timestamp": 1 }, "account": "+1" } });
        let got = received(&manual).unwrap();
        assert_eq!(got.subscription, Some(3));
        assert_eq!(got.account.as_deref(), Some("+1"));
        assert_eq!(got.envelope, json!({ "timestamp": 1 }));
        let on_start = json!({ "envelope": { "timestamp": 2 } });
        let got = received(&on_start).unwrap();
        assert_eq!((got.subscription, got.account), (None, None));
        assert!(received(&json!({ "subscription": 3, "result": { "exception": {} } })).is_none());
    }

    #[test]
    fn error_objects_keep_code_message_and_data() {
        let error = remote_error(json!({ "code": -5, "message": "rate limited", "data": { "x": 1 } }));
        assert_eq!(error.code(), Some(ErrorCode::RateLimit));
        let RpcError::Remote(remote) = error else {
            unreachable!()
        };
        assert_eq!(remote.message, "rate limited");
        assert_eq!(remote.data, Some(json!({ "x": 1 })));
        assert!(matches!(remote_error(json!("oops")), RpcError::Protocol { .. }));
    }
}
