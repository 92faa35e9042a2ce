//! One client connection: admission, then a reader that turns lines into
//! frames and frames into calls on the core: messages go to its intake,
//! admin questions to its admin queue ([`crate::admin`]).
//!
//! The reader handles one frame at a time and waits for the core's answer
//! before reading the next line, which keeps a connection's messages in order.
//! Its answers, like the core's deliveries, go through the connection's
//! writer task ([`crate::writer`]).

use std::io;
use std::sync::Arc;
use std::time::Duration;

use passepartout_admin::{AdminClosed, AdminRequest, Asker, Via};
use passepartout_gateway::{
    Ack, ChatId, ConversationKey, Inbound, InboundBody, Intake, IntakeClosed, MessageId, Refusal, Sender,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::protocol::{ClientFrame, ErrorCode, PROTOCOL_VERSION, ServerFrame, encode_line, parse_client_frame};
use crate::registry::ConnId;
use crate::server::Shared;
use crate::writer::{OUTBOX_CAPACITY, Outgoing, write_loop};
use passepartout_gateway::lines::{LineReader, ReadLine};

/// How long a refused client gets to read why before it is cut off.
const REFUSAL_LINGER: Duration = Duration::from_secs(1);

/// The connection's writer is gone; stop reading.
struct Gone;

/// Admits `stream` or turns it away, and spawns its tasks on `tracker`.
pub(crate) fn accept(shared: &Arc<Shared>, tracker: &TaskTracker, stream: UnixStream, intake: &Intake) {
    let peer_uid = stream.peer_cred().map(|cred| cred.uid()).ok();
    if !peer_allowed(peer_uid, shared.uid) {
        tracing::warn!(peer_uid = ?peer_uid, "refused a socket client of another user");
        let refusal = error_frame(ErrorCode::NotAllowed, "only the daemon's own user may connect", None);
        tracker.spawn(refuse(stream, refusal, shared.closed.clone()));
        return;
    }
    let (outbox, queue) = mpsc::channel(OUTBOX_CAPACITY);
    let Ok(id) = shared.registry.admit(shared.max_clients, outbox.clone()) else {
        tracing::warn!(
            max_clients = shared.max_clients,
            "refused a socket client: too many connected"
        );
        let busy = error_frame(ErrorCode::Busy, "too many clients are connected; try again later", None);
        tracker.spawn(refuse(stream, busy, shared.closed.clone()));
        return;
    };
    tracing::debug!(conn = ?id, "socket client connected");
    let (read_half, write_half) = stream.into_split();
    let done = shared.closed.child_token();
    tracker.spawn(write_loop(write_half, queue, done.clone()));
    let connection = Connection {
        shared: Arc::clone(shared),
        id,
        intake: intake.clone(),
        outbox,
        chat: None,
        admitted: false,
        done,
    };
    tracker.spawn(connection.read_loop(LineReader::new(read_half, shared.max_line_bytes)));
}

/// Only our own user may use the daemon.
fn peer_allowed(peer_uid: Option<u32>, our_uid: u32) -> bool {
    peer_uid == Some(our_uid)
}

/// Tells a turned-away client why, then closes. The client's unread input is
/// drained first: closing a Unix socket with unread data resets the peer,
/// which could lose the error frame.
async fn refuse(mut stream: UnixStream, frame: ServerFrame, closed: CancellationToken) {
    let linger = async {
        let line = encode_line(&frame).map_err(io::Error::other)?;
        stream.write_all(&line).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        while stream.read(&mut sink).await? > 0 {}
        Ok::<_, io::Error>(())
    };
    tokio::select! {
        () = closed.cancelled() => {}
        _ = tokio::time::timeout(REFUSAL_LINGER, linger) => {}
    }
}

fn error_frame(code: ErrorCode, message: &str, id: Option<MessageId>) -> ServerFrame {
    ServerFrame::Error {
        code,
        message: message.to_owned(),
        id: id.map(String::from),
    }
}

/// The reader's side of one admitted connection.
struct Connection {
    shared: Arc<Shared>,
    id: ConnId,
    intake: Intake,
    outbox: mpsc::Sender<Outgoing>,
    /// Unset until hello, or until the first message picks the default chat.
    chat: Option<ChatId>,
    /// Whether the client presented the daemon's key in `hello`; until then
    /// no other frame is taken.
    admitted: bool,
    /// Fires when the writer failed or the gateway closed.
    done: CancellationToken,
}

impl Drop for Connection {
    fn drop(&mut self) {
        // What is queued is still written; the writer ends when the queue closes.
        self.shared.registry.remove(self.id);
        tracing::debug!(conn = ?self.id, "socket client disconnected");
    }
}

impl Connection {
    async fn read_loop(mut self, mut lines: LineReader<tokio::net::unix::OwnedReadHalf>) {
        loop {
            let next = tokio::select! {
                biased;
                () = self.done.cancelled() => return,
                next = lines.next_line() => next,
            };
            let handled = match next {
                // A client may end its last line with the connection instead of a newline.
                Ok(ReadLine::Line(line) | ReadLine::Unterminated(line)) => {
                    let done = self.done.clone();
                    tokio::select! {
                        biased;
                        () = done.cancelled() => return,
                        handled = self.handle_line(&line) => handled,
                    }
                }
                Ok(ReadLine::TooLong { len }) => {
                    let line = self.shared.max_line_bytes;
                    let limit = self.shared.max_message_bytes.map_or(line, |message| message.min(line));
                    let message = crate::size::too_large(limit as u64, len as u64, len > self.shared.max_line_bytes);
                    self.send(error_frame(ErrorCode::LineTooLong, &message, None)).await
                }
                Ok(ReadLine::Eof) => return,
                Err(error) => {
                    tracing::debug!(conn = ?self.id, %error, "reading from a socket client failed");
                    return;
                }
            };
            if handled.is_err() {
                return;
            }
        }
    }

    async fn send(&self, frame: ServerFrame) -> Result<(), Gone> {
        self.outbox.send(Outgoing::frame(frame)).await.map_err(|_| Gone)
    }

    async fn handle_line(&mut self, line: &[u8]) -> Result<(), Gone> {
        if line.trim_ascii().is_empty() {
            return Ok(());
        }
        match parse_client_frame(line) {
            Err(error) => {
                tracing::debug!(conn = ?self.id, code = %error.code, "bad frame from a socket client");
                self.send(error.into_frame()).await
            }
            Ok(ClientFrame::Hello { version, chat, key }) => self.hello(version, chat, key).await,
            Ok(_) if !self.admitted => self.turn_away("say hello with the daemon's key first").await,
            Ok(ClientFrame::Message { id, text, reply_to }) => self.message(id, text, reply_to).await,
            Ok(ClientFrame::Ping {}) => self.send(ServerFrame::Pong {}).await,
            Ok(ClientFrame::Admin(request)) => self.ask(request).await,
        }
    }

    async fn hello(&mut self, version: u32, chat: Option<ChatId>, key: Option<String>) -> Result<(), Gone> {
        // A later hello on an admitted connection (switching chats) may omit it.
        if !(self.admitted && key.is_none() || key.is_some_and(|key| self.shared.key.admits(&key))) {
            return self.turn_away("the key in hello is missing or not the daemon's").await;
        }
        self.admitted = true;
        if version != PROTOCOL_VERSION {
            let message = format!("this daemon speaks protocol version {PROTOCOL_VERSION}, not {version}");
            return self
                .send(error_frame(ErrorCode::UnsupportedVersion, &message, None))
                .await;
        }
        let chat = chat.unwrap_or_else(|| self.shared.default_chat.clone());
        self.shared.registry.set_chat(self.id, chat.clone());
        self.chat = Some(chat.clone());
        let welcome = ServerFrame::Welcome {
            version: PROTOCOL_VERSION,
            chat: chat.clone(),
            user: self.shared.user.clone(),
            max_message_bytes: self.shared.max_message_bytes.map(|limit| limit as u64),
        };
        self.send(welcome).await?;
        self.announce(chat).await;
        Ok(())
    }

    /// Refuses a client that has not shown the daemon's key, then ends the
    /// connection: a process that cannot read the key file (a confined tool's)
    /// gets nothing from the socket, not even a second try on this connection.
    async fn turn_away(&self, why: &str) -> Result<(), Gone> {
        tracing::warn!(conn = ?self.id, why, "refused a socket client without the daemon's key");
        let message = format!(
            "{why}: a client reads it from {} (only the daemon's own user can)",
            crate::key::key_path(&self.shared.path).display()
        );
        // The reader stops here; the writer sends what is queued, then closes.
        let _ = self.send(error_frame(ErrorCode::NotAllowed, &message, None)).await;
        Err(Gone)
    }

    /// Tells the core that the chat has a client again, so its waiting
    /// messages can be delivered.
    async fn announce(&self, chat: ChatId) {
        tracing::debug!(conn = ?self.id, chat = %chat, "socket client joined a chat");
        let key = ConversationKey::new(self.shared.gateway.clone(), chat);
        if self.intake.reachable(key).await.is_err() {
            tracing::debug!(conn = ?self.id, "intake closed; not announcing the chat");
        }
    }

    /// The connection's chat, picking the default for a client that said
    /// hello without naming one.
    async fn chat(&mut self) -> ChatId {
        if let Some(chat) = &self.chat {
            return chat.clone();
        }
        let chat = self.shared.default_chat.clone();
        self.shared.registry.set_chat(self.id, chat.clone());
        self.chat = Some(chat.clone());
        self.announce(chat.clone()).await;
        chat
    }

    async fn message(&mut self, id: Option<MessageId>, text: String, reply_to: Option<MessageId>) -> Result<(), Gone> {
        let id = id.unwrap_or_else(|| self.shared.message_ids.next());
        if self.shared.draining.is_cancelled() {
            let frame = error_frame(ErrorCode::ShuttingDown, "the daemon is shutting down", Some(id));
            return self.send(frame).await;
        }
        let chat = self.chat().await;
        let size = text.len();
        let inbound = Inbound {
            conversation: ConversationKey::new(self.shared.gateway.clone(), chat),
            sender: Sender::new(self.shared.user.clone()),
            message_id: id.clone(),
            reply_to,
            body: InboundBody::Text { text },
            received_at_ms: crate::message_ids::now_ms(),
            overheard: false,
            by_reply_only: false,
            client: None,
        };
        let ack = self.intake.submit(inbound).await;
        tracing::debug!(conn = ?self.id, message_id = %id, ack = ?ack, "socket message submitted");
        let limit = self.shared.max_message_bytes;
        let too_large = || match limit {
            Some(limit) => crate::size::too_large(limit as u64, size as u64, false),
            None => format!(
                "the message ({}) is larger than the daemon accepts",
                crate::size::in_words(size as u64)
            ),
        };
        self.send(ack_frame(ack, id, too_large)).await
    }

    /// Asks the core an admin question, as the daemon's user in this
    /// connection's chat, and sends its answer.
    async fn ask(&self, request: AdminRequest) -> Result<(), Gone> {
        let chat = self.chat.clone().unwrap_or_else(|| self.shared.default_chat.clone());
        let asker = Asker {
            by: self.shared.user.clone(),
            via: Via::Terminal,
            conversation: ConversationKey::new(self.shared.gateway.clone(), chat),
        };
        let frame = match self.shared.admin.ask(&asker, request).await {
            Ok(reply) => crate::admin::frame(reply),
            Err(AdminClosed) => error_frame(ErrorCode::ShuttingDown, "the daemon is shutting down", None),
        };
        self.send(frame).await
    }
}

/// The frame that tells the client what the core decided about message `id`.
/// `too_large` words the refusal of an oversized message, given the limit
/// the gateway knows of.
fn ack_frame(ack: Result<Ack, IntakeClosed>, id: MessageId, too_large: impl FnOnce() -> String) -> ServerFrame {
    let refused = |code, message: &str| error_frame(code, message, Some(id.clone()));
    match ack {
        Ok(Ack::Accepted) => ServerFrame::Accepted { id: id.into() },
        Ok(Ack::Duplicate) => ServerFrame::Duplicate { id: id.into() },
        Ok(Ack::Busy) => refused(ErrorCode::Busy, "the conversation's queue is full; try again later"),
        Ok(Ack::Refused {
            reason: Refusal::NotAllowed | Refusal::Pairing,
        }) => refused(ErrorCode::NotAllowed, "you may not send messages to this daemon"),
        Ok(Ack::Refused {
            reason: Refusal::NotApprover,
        }) => refused(ErrorCode::NotAllowed, "you may not decide this approval"),
        Ok(Ack::Refused {
            reason: Refusal::TooLarge,
        }) => refused(ErrorCode::TooLarge, &too_large()),
        Err(IntakeClosed) => refused(ErrorCode::ShuttingDown, "the daemon is shutting down"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(frame: &ServerFrame) -> Option<ErrorCode> {
        match frame {
            ServerFrame::Error { code, .. } => Some(*code),
            _ => None,
        }
    }

    #[test]
    fn acks_map_to_frames_that_name_the_message() {
        let id = MessageId::new("m1").unwrap();
        assert_eq!(
            ack_frame(Ok(Ack::Accepted), id.clone(), String::new),
            ServerFrame::Accepted { id: "m1".into() }
        );
        assert_eq!(
            ack_frame(Ok(Ack::Duplicate), id.clone(), String::new),
            ServerFrame::Duplicate { id: "m1".into() }
        );
        let cases = [
            (Ok(Ack::Busy), ErrorCode::Busy),
            (
                Ok(Ack::Refused {
                    reason: Refusal::NotAllowed,
                }),
                ErrorCode::NotAllowed,
            ),
            (
                Ok(Ack::Refused {
                    reason: Refusal::TooLarge,
                }),
                ErrorCode::TooLarge,
            ),
            (Err(IntakeClosed), ErrorCode::ShuttingDown),
        ];
        for (ack, expected) in cases {
            let frame = ack_frame(ack, id.clone(), String::new);
            assert_eq!(code(&frame), Some(expected));
            assert!(matches!(frame, ServerFrame::Error { id: Some(ref named), .. } if named == "m1"));
        }
    }

    #[test]
    fn only_our_own_user_is_let_in() {
        assert!(peer_allowed(Some(1000), 1000));
        assert!(!peer_allowed(Some(0), 1000), "not even root");
        assert!(!peer_allowed(None, 1000), "unknown credentials");
    }
}
