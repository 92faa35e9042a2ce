//! The daemon's half: [`SocketGateway`] listens on the socket, hands messages
//! to the core's intake and admin questions to its admin queue, and delivers
//! the core's replies to the connected clients.
//!
//! Lifecycle: [`SocketGateway::bind`] creates the socket; [`Listen::listen`]
//! accepts clients until its shutdown token fires, then stops accepting and
//! refuses further messages with `shutting_down` while the connections stay
//! open, so replies of turns still finishing reach their clients;
//! [`SocketGateway::close`], called by the daemon after draining, ends every
//! connection and removes the socket file.

use std::io;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use passepartout_admin::Admin;
use passepartout_gateway::{
    ChatId, ConversationKey, Deliver, Delivered, Draft, DraftPace, DraftText, GatewayError, GatewayId, Health,
    HealthState, Intake, Listen, MessageId, Outbound, OutboundBody, UserId,
};
use tokio::net::UnixListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::config::SocketConfig;
use crate::connection;
use crate::error::SocketError;
use crate::key::SocketKey;
use crate::message_ids::MessageIds;
use crate::protocol::ServerFrame;
use crate::registry::Registry;
use crate::socket_file::{self, SocketFile};
use crate::writer::Outgoing;

/// The id of this gateway in conversation keys.
pub const GATEWAY_ID: &str = "socket";

/// What the socket's people have: a terminal on this machine (`passepartout
/// chat`), where a one-word line after a prompt answers it.
pub const SURFACE: passepartout_gateway::Surface = passepartout_gateway::Surface {
    buttons: false,
    reply_to: true,
    reactions: false,
    terminal: true,
    who_approves: None,
};

/// The local socket gateway. Shared by the daemon's listener and its
/// delivery side, hence always in an [`Arc`].
#[derive(Debug)]
pub struct SocketGateway {
    shared: Arc<Shared>,
    /// Taken when accepting stops, so new clients are refused at once.
    listener: Mutex<Option<Arc<UnixListener>>>,
    file: SocketFile,
    tracker: TaskTracker,
}

/// What the connection tasks share with the gateway.
#[derive(Debug)]
pub(crate) struct Shared {
    pub gateway: GatewayId,
    /// Our effective uid: the only one let in.
    pub uid: u32,
    /// What a client must present in `hello` (see [`crate::key`]).
    pub key: SocketKey,
    /// Where the socket is, named when a client is refused.
    pub path: std::path::PathBuf,
    /// Our uid as the sender of every message.
    pub user: UserId,
    /// The chat of a client that does not name one: `uid-<uid>`.
    pub default_chat: ChatId,
    pub max_line_bytes: usize,
    pub max_clients: usize,
    /// The core's message limit, when it has one (see [`SocketConfig`]).
    pub max_message_bytes: Option<usize>,
    pub registry: Registry,
    pub message_ids: MessageIds,
    /// Where the clients' admin questions (status, approvals, loops) go.
    pub admin: Admin,
    /// Fires when accepting stops: messages are refused from then on.
    pub draining: CancellationToken,
    /// Fires on close: every connection ends.
    pub closed: CancellationToken,
}

impl SocketGateway {
    /// Creates the socket at `config.path` (see [`SocketConfig`]) and a new
    /// key beside it, which every client must present; clients' admin
    /// questions are asked through `admin`. Fails with
    /// [`SocketError::InUse`] when another daemon answers there; a stale
    /// socket file nobody answers on is replaced.
    pub async fn bind(config: SocketConfig, admin: Admin) -> Result<Arc<SocketGateway>, SocketError> {
        let key = SocketKey::generate().map_err(|source| SocketError::Io {
            action: "make a key for",
            path: config.path.clone(),
            source,
        })?;
        let (listener, file) = socket_file::bind(&config.path, &key).await?;
        let uid = rustix::process::geteuid().as_raw();
        let shared = Shared {
            gateway: GatewayId::new(GATEWAY_ID).expect("\"socket\" is a valid gateway id"),
            uid,
            key,
            path: config.path.clone(),
            user: UserId::new(uid.to_string()).expect("a number is a valid user id"),
            default_chat: ChatId::new(format!("uid-{uid}")).expect("uid-<number> is a valid chat id"),
            max_line_bytes: config.max_line_bytes,
            max_clients: config.max_clients,
            max_message_bytes: config.max_message_bytes,
            registry: Registry::default(),
            message_ids: MessageIds::new(),
            admin,
            draining: CancellationToken::new(),
            closed: CancellationToken::new(),
        };
        tracing::info!(path = %config.path.display(), "socket gateway listening");
        Ok(Arc::new(SocketGateway {
            shared: Arc::new(shared),
            listener: Mutex::new(Some(Arc::new(listener))),
            file,
            tracker: TaskTracker::new(),
        }))
    }

    /// Where the socket is.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// How many clients are connected.
    pub fn connections(&self) -> usize {
        self.shared.registry.len()
    }

    /// Ends every connection, waits for their tasks, and removes the socket
    /// file (if it is still ours). Also stops accepting if `listen` still runs.
    pub async fn close(&self) {
        self.stop_accepting();
        self.shared.draining.cancel();
        self.shared.closed.cancel();
        self.shared.registry.clear();
        self.tracker.close();
        self.tracker.wait().await;
        self.file.remove_if_ours();
        tracing::info!(path = %self.path().display(), "socket gateway closed");
    }

    fn listener(&self) -> Option<Arc<UnixListener>> {
        self.listener.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    fn stop_accepting(&self) {
        self.listener.lock().unwrap_or_else(PoisonError::into_inner).take();
    }
}

impl Drop for SocketGateway {
    fn drop(&mut self) {
        self.shared.closed.cancel();
        self.file.remove_if_ours();
    }
}

#[async_trait]
impl Listen for SocketGateway {
    fn id(&self) -> GatewayId {
        self.shared.gateway.clone()
    }

    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        let Some(listener) = self.listener() else {
            return Err(GatewayError::Closed);
        };
        loop {
            let accepted = tokio::select! {
                biased;
                () = shutdown.cancelled() => break,
                () = self.shared.closed.cancelled() => break,
                accepted = listener.accept() => accepted,
            };
            match accepted {
                Ok((stream, _addr)) => connection::accept(&self.shared, &self.tracker, stream, &intake),
                Err(error) if is_per_connection(&error) => {
                    tracing::debug!(%error, "a socket client vanished while being accepted");
                }
                Err(error) => {
                    // Out of file descriptors and the like: let the supervisor back off.
                    tracing::warn!(%error, "socket gateway cannot accept clients");
                    return Err(GatewayError::Transient {
                        reason: format!("accept failed: {error}"),
                    });
                }
            }
        }
        self.stop_accepting();
        self.shared.draining.cancel();
        tracing::info!(connections = self.connections(), "socket gateway stopped accepting");
        Ok(())
    }

    async fn close(&self) {
        SocketGateway::close(self).await;
    }

    fn health(&self) -> Health {
        if self.shared.closed.is_cancelled() {
            Health::with(HealthState::Down, "closed")
        } else if self.shared.draining.is_cancelled() {
            Health::with(HealthState::Degraded, "shutting down; not accepting clients")
        } else {
            Health::up()
        }
    }
}

fn is_per_connection(error: &io::Error) -> bool {
    matches!(
        error.kind(),
        io::ErrorKind::ConnectionAborted | io::ErrorKind::ConnectionReset | io::ErrorKind::Interrupted
    )
}

#[async_trait]
impl Deliver for SocketGateway {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        if self.shared.closed.is_cancelled() {
            return Err(GatewayError::Closed);
        }
        let conversation = &message.conversation;
        if conversation.gateway != self.shared.gateway {
            return Err(GatewayError::Rejected {
                reason: format!("{conversation} is not a socket conversation"),
            });
        }
        let message_id = MessageId::new(message.id.as_str()).map_err(|error| GatewayError::Rejected {
            reason: format!("bad outbound id: {error}"),
        })?;
        let Some(frame) = outbound_frame(message) else {
            // Nothing to show: the client was told the outcome in a reply.
            return Ok(Delivered::default());
        };
        let outboxes = self.shared.registry.outboxes_for(&conversation.chat);
        if outboxes.is_empty() {
            return Err(GatewayError::NotConnected);
        }
        let mut confirmations = JoinSet::new();
        for outbox in outboxes {
            let (outgoing, written) = Outgoing::confirmed(frame.clone());
            // A connection whose writer is gone just does not confirm.
            if outbox.send(outgoing).await.is_ok() {
                confirmations.spawn(written);
            }
        }
        while let Some(confirmation) = confirmations.join_next().await {
            if matches!(confirmation, Ok(Ok(()))) {
                tracing::debug!(conversation = %conversation, outbound_id = %message.id, "delivered over the socket");
                return Ok(Delivered {
                    message_ids: vec![message_id],
                });
            }
        }
        if self.shared.closed.is_cancelled() {
            Err(GatewayError::Closed)
        } else {
            Err(GatewayError::NotConnected)
        }
    }

    async fn typing(&self, conversation: &ConversationKey) -> Result<(), GatewayError> {
        if conversation.gateway != self.shared.gateway {
            return Ok(());
        }
        for outbox in self.shared.registry.outboxes_for(&conversation.chat) {
            // Best effort: a full queue sheds the indicator.
            let _ = outbox.try_send(Outgoing::frame(ServerFrame::Typing {
                chat: conversation.chat.clone(),
            }));
        }
        Ok(())
    }
}

/// A draft is its text sent to the chat's clients as it grows; the clients
/// print it, so it occupies no message of its own.
#[async_trait]
impl Draft for SocketGateway {
    fn pace(&self) -> DraftPace {
        DraftPace::AT_ONCE
    }

    async fn show_draft(
        &self,
        conversation: &ConversationKey,
        _shown: &[MessageId],
        draft: DraftText<'_>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        if self.shared.closed.is_cancelled() {
            return Err(GatewayError::Closed);
        }
        let (text, restart) = draft.news();
        let frame = ServerFrame::Draft {
            chat: conversation.chat.clone(),
            in_reply_to: draft.in_reply_to.map(|id| id.as_str().to_owned()),
            text: text.to_owned(),
            restart,
        };
        let outboxes = self.shared.registry.outboxes_for(&conversation.chat);
        if outboxes.is_empty() {
            return Err(GatewayError::NotConnected);
        }
        for outbox in outboxes {
            // In order and whole, or the client's text would not add up;
            // a connection whose writer is gone just misses it.
            let _ = outbox.send(Outgoing::frame(frame.clone())).await;
        }
        Ok(vec![MessageId::new(DRAFT_ID).expect("a valid message id")])
    }
}

/// What a draft over the socket is called: it is the chat's one draft.
const DRAFT_ID: &str = "draft";

/// The frame that carries `message` to a client, if it has one.
fn outbound_frame(message: &Outbound) -> Option<ServerFrame> {
    let id = message.id.clone();
    let chat = message.conversation.chat.clone();
    let in_reply_to = message.in_reply_to.clone().map(String::from);
    Some(match &message.body {
        OutboundBody::Text { text, kind } => ServerFrame::Reply {
            id,
            chat,
            in_reply_to,
            text: text.clone(),
            kind: *kind,
            drafted: !message.drafts.is_empty(),
        },
        OutboundBody::Stopped { partial } => ServerFrame::Stopped {
            id,
            chat,
            in_reply_to,
            text: partial.clone(),
        },
        OutboundBody::Withdraw => ServerFrame::Draft {
            chat,
            in_reply_to,
            text: String::new(),
            restart: true,
        },
        OutboundBody::ApprovalPrompt { token, action, text } => ServerFrame::Approval {
            id,
            chat,
            in_reply_to,
            token: token.clone(),
            action: action.clone(),
            text: text.clone(),
        },
        // Only relayed copies are edited, and the terminal is in no bridge.
        OutboundBody::ApprovalDecided { .. } | OutboundBody::Edit { .. } => return None,
        OutboundBody::File(file) => ServerFrame::File {
            id,
            chat,
            in_reply_to,
            path: file.path.clone(),
            name: file.name.clone(),
            media_type: file.media_type.clone(),
            size: file.size,
            caption: file.caption.clone(),
        },
    })
}
