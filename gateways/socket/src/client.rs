//! The client's half, for the CLI (`passepartout chat`, `send`, `status`) and
//! for tests: connect, say hello, send messages and wait for their acks.
//!
//! A client does one request at a time. Frames that arrive while it waits
//! for an answer — replies, approval prompts, typing — are kept in order and
//! handed out by [`Client::next_event`], so nothing is lost to a race between
//! an ack and the core's first reply.

use std::collections::VecDeque;
use std::io;
use std::path::{Path, PathBuf};

use passepartout_gateway::{ChatId, InvalidId, MessageId, UserId};
use serde::de::DeserializeOwned;
use thiserror::Error;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};

use crate::key::{SocketKey, key_path};
use crate::protocol::{
    AdminRequest, ClientFrame, ErrorCode, PROTOCOL_VERSION, ServerFrame, encode_line, is_unknown_server_frame,
};
use passepartout_gateway::lines::{LineReader, ReadLine};

/// The longest frame a client reads, in bytes: replies can be long.
const CLIENT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// Why a client request failed.
#[derive(Debug, Error)]
pub enum ClientError {
    /// Nothing listens at the socket path: the daemon is not running.
    #[error("the passepartout daemon is not running (nothing listens at {})", path.display())]
    NotRunning {
        /// The socket file looked for.
        path: PathBuf,
    },
    /// Reading or writing the socket failed (the cause is in the message:
    /// the CLI prints errors with plain `Display`).
    #[error("socket I/O failed: {0}")]
    Io(#[from] io::Error),
    /// The daemon sent something this client does not understand.
    #[error("protocol error: {0}")]
    Protocol(String),
    /// The daemon answered with an error frame.
    #[error("the daemon refused: {message} ({code})")]
    Refused {
        /// What went wrong, for a client to decide on.
        code: ErrorCode,
        /// Why, for people.
        message: String,
    },
    /// The daemon closed the connection.
    #[error("the daemon closed the connection")]
    Closed,
    /// The daemon's key could not be read: this process is not the daemon's
    /// user, or runs confined (a tool's process), or the daemon is not one
    /// that writes a key.
    #[error("cannot read the daemon's key at {}: {source}", path.display())]
    Key {
        /// The socket file.
        path: PathBuf,
        #[source]
        /// Why it failed.
        source: io::Error,
    },
    /// An id given to the client is not a valid id.
    #[error(transparent)]
    InvalidId(#[from] InvalidId),
    /// The message is larger than the daemon said it accepts; it was not sent.
    #[error("{}", crate::size::too_large(*limit, *size, false))]
    TooLarge {
        /// The most the daemon accepts, in bytes.
        limit: u64,
        /// The message's size, in bytes.
        size: u64,
    },
}

impl ClientError {
    /// Whether the message was refused for its size, here or by the daemon.
    pub fn is_too_large(&self) -> bool {
        matches!(
            self,
            Self::TooLarge { .. }
                | Self::Refused {
                    code: ErrorCode::TooLarge | ErrorCode::LineTooLong,
                    ..
                }
        )
    }
}

/// What the daemon did with a sent message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendOutcome {
    /// Journaled; a reply will follow.
    Accepted,
    /// The same id was accepted before; it is not processed again.
    Duplicate,
}

/// A connection to the daemon's socket, after the hello exchange.
#[derive(Debug)]
pub struct Client {
    reader: LineReader<OwnedReadHalf>,
    writer: OwnedWriteHalf,
    chat: ChatId,
    user: UserId,
    /// The longest message the daemon accepts, when it said.
    max_message_bytes: Option<u64>,
    /// Frames that arrived while waiting for an answer.
    pending: VecDeque<ServerFrame>,
}

impl Client {
    /// Connects to the daemon at `path` and opens a session in `chat` (the
    /// daemon's default, `uid-<uid>`, when `None`).
    pub async fn connect(path: impl AsRef<Path>, chat: Option<ChatId>) -> Result<Client, ClientError> {
        let path = path.as_ref();
        let stream = UnixStream::connect(path).await.map_err(|error| match error.kind() {
            io::ErrorKind::NotFound | io::ErrorKind::ConnectionRefused => {
                ClientError::NotRunning { path: path.to_owned() }
            }
            _ => ClientError::Io(error),
        })?;
        let key = SocketKey::read_for(path).map_err(|source| ClientError::Key {
            path: key_path(path),
            source,
        })?;
        let (read_half, mut writer) = stream.into_split();
        let mut reader = LineReader::new(read_half, CLIENT_MAX_LINE_BYTES);
        // A daemon that turns us away writes why and closes, possibly before
        // our hello is written: read its answer even when writing failed.
        let sent = write_frame(
            &mut writer,
            &ClientFrame::Hello {
                version: PROTOCOL_VERSION,
                chat,
                key: Some(key.as_str().to_owned()),
            },
        )
        .await;
        let mut pending = VecDeque::new();
        let answer = loop {
            match read_frame(&mut reader).await {
                Ok(ServerFrame::Welcome {
                    chat,
                    user,
                    max_message_bytes,
                    ..
                }) => break Ok((chat, user, max_message_bytes)),
                Ok(ServerFrame::Error { code, message, .. }) => {
                    break Err(ClientError::Refused { code, message });
                }
                Ok(other) => pending.push_back(other),
                Err(error) => break Err(sent.err().unwrap_or(error)),
            }
        };
        let (chat, user, max_message_bytes) = answer?;
        Ok(Client {
            reader,
            writer,
            chat,
            user,
            max_message_bytes,
            pending,
        })
    }

    /// The chat this session speaks in.
    pub fn chat(&self) -> &ChatId {
        &self.chat
    }

    /// Who the daemon takes this client to be.
    pub fn user(&self) -> &UserId {
        &self.user
    }

    /// Sends a message and waits for the daemon's ack. Give an `id` to make a
    /// resend recognizable as a duplicate; without one the daemon makes one
    /// up. Returns the message's id and what the daemon did with it.
    pub async fn send(
        &mut self,
        id: Option<String>,
        text: impl Into<String>,
        reply_to: Option<String>,
    ) -> Result<(String, SendOutcome), ClientError> {
        let text = text.into();
        // Refused here rather than after megabytes went over the socket.
        if let Some(limit) = self.max_message_bytes
            && text.len() as u64 > limit
        {
            return Err(ClientError::TooLarge {
                limit,
                size: text.len() as u64,
            });
        }
        let sent = id.clone();
        let id = id.map(MessageId::new).transpose()?;
        let reply_to = reply_to.map(MessageId::new).transpose()?;
        let frame = ClientFrame::Message { id, text, reply_to };
        write_frame(&mut self.writer, &frame).await?;
        // One request at a time, so the first answer is ours. Comparing ids
        // keeps a late answer to an earlier request (whose caller stopped
        // waiting) from being taken for this one; it goes to `next_event`.
        let ours = |answer: Option<&String>| sent.is_none() || answer.is_none() || answer == sent.as_ref();
        loop {
            match read_frame(&mut self.reader).await? {
                ServerFrame::Accepted { id } if ours(Some(&id)) => {
                    return Ok((id, SendOutcome::Accepted));
                }
                ServerFrame::Duplicate { id } if ours(Some(&id)) => {
                    return Ok((id, SendOutcome::Duplicate));
                }
                ServerFrame::Error { code, message, id } if ours(id.as_ref()) => {
                    return Err(ClientError::Refused { code, message });
                }
                other => self.pending.push_back(other),
            }
        }
    }

    /// Asks the daemon `request` and returns its answer, read as `T`: the
    /// document the answering frame carries (a `status`, `approvals`,
    /// `rules`, `loops` or `tools` frame's JSON, which `T` =
    /// `serde_json::Value` takes whole), or the answer itself (a
    /// [`LoopControl`](crate::protocol::LoopControl),
    /// [`AccessAnswer`](crate::AccessAnswer), [`WebAnswer`](crate::WebAnswer)
    /// or [`Reloaded`](crate::Reloaded)). A connection-level error refuses
    /// it; every other frame is kept for [`Client::next_event`].
    pub async fn ask<T: DeserializeOwned>(&mut self, request: AdminRequest) -> Result<T, ClientError> {
        write_frame(&mut self.writer, &ClientFrame::Admin(request)).await?;
        let answer = loop {
            let mut frame = read_frame(&mut self.reader).await?;
            if let Some(answer) = answer(&mut frame) {
                break answer;
            }
            match frame {
                ServerFrame::Error {
                    code,
                    message,
                    id: None,
                } => return Err(ClientError::Refused { code, message }),
                other => self.pending.push_back(other),
            }
        };
        serde_json::from_value(answer)
            .map_err(|e| ClientError::Protocol(format!("unreadable answer from the daemon: {e}")))
    }

    /// Checks that the daemon still answers.
    pub async fn ping(&mut self) -> Result<(), ClientError> {
        write_frame(&mut self.writer, &ClientFrame::Ping {}).await?;
        loop {
            match read_frame(&mut self.reader).await? {
                ServerFrame::Pong {} => return Ok(()),
                other => self.pending.push_back(other),
            }
        }
    }

    /// The next frame from the daemon: those kept while waiting first, then
    /// what arrives. Cancel-safe, so it can wait in a `select!`.
    pub async fn next_event(&mut self) -> Result<ServerFrame, ClientError> {
        match self.pending.pop_front() {
            Some(frame) => Ok(frame),
            None => read_frame(&mut self.reader).await,
        }
    }
}

/// What an answering frame carries; none when it answers no admin request.
fn answer(frame: &mut ServerFrame) -> Option<serde_json::Value> {
    match frame {
        ServerFrame::Status { status: document }
        | ServerFrame::Approvals { approvals: document }
        | ServerFrame::Rules { rules: document }
        | ServerFrame::Loops { loops: document }
        | ServerFrame::Tools { tools: document } => Some(document.take()),
        ServerFrame::LoopControl(answer) => Some(to_value(answer)),
        ServerFrame::Access(answer) => Some(to_value(answer)),
        ServerFrame::Web(answer) => Some(to_value(answer)),
        ServerFrame::Reloaded(answer) => Some(to_value(answer)),
        _ => None,
    }
}

/// An answer as JSON (a struct of plain fields: it always serializes).
fn to_value(answer: impl serde::Serialize) -> serde_json::Value {
    serde_json::to_value(answer).unwrap_or_default()
}

async fn write_frame(writer: &mut OwnedWriteHalf, frame: &ClientFrame) -> Result<(), ClientError> {
    let line = encode_line(frame).map_err(|e| ClientError::Protocol(format!("cannot encode a frame: {e}")))?;
    writer.write_all(&line).await?;
    writer.flush().await?;
    Ok(())
}

/// Reads the next frame, skipping blank lines.
async fn read_frame(reader: &mut LineReader<OwnedReadHalf>) -> Result<ServerFrame, ClientError> {
    loop {
        match reader.next_line().await? {
            ReadLine::Line(line) | ReadLine::Unterminated(line) if line.trim_ascii().is_empty() => {}
            // A newer daemon's frame: nothing this client can show.
            ReadLine::Line(line) | ReadLine::Unterminated(line) if is_unknown_server_frame(&line) => {}
            ReadLine::Line(line) | ReadLine::Unterminated(line) => {
                return serde_json::from_slice(&line)
                    .map_err(|e| ClientError::Protocol(format!("unreadable frame from the daemon: {e}")));
            }
            ReadLine::TooLong { .. } => {
                return Err(ClientError::Protocol(format!(
                    "a frame longer than {CLIENT_MAX_LINE_BYTES} bytes"
                )));
            }
            ReadLine::Eof => return Err(ClientError::Closed),
        }
    }
}
