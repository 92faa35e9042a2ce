//! The Matrix gateway over matrix-sdk: [`MatrixGateway`] syncs, hands
//! what it takes to the core, and delivers the core's messages.
//!
//! One sync at a time: its invitations are answered (joined when an
//! allowed person, or an allowed room, invited; declined otherwise), its
//! rooms' events normalized ([`normalize`]) and submitted, each only after
//! the one before it was acknowledged, and the sync token is saved
//! ([`SyncCursor`]) only once every message of that sync was. A core that is
//! busy gets the same sync again later; a message that could not be
//! decrypted is answered with a notice rather than lost in silence. Sends
//! carry the outbox message's id as their transaction id, so a send
//! repeated after a crash is dropped by the homeserver.

pub mod cursor;
pub mod html;
pub mod normalize;
pub mod session;

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use matrix_sdk::Client;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::deserialized_responses::TimelineEventKind;
use matrix_sdk::ruma::{OwnedRoomId, RoomId, TransactionId};
use passepartout_gateway::retry::BackoffPolicy;
use passepartout_gateway::{
    Ack, ConversationKey, Deliver, Delivered, GatewayError, GatewayId, GroupMode, Health, HealthState, Intake, Listen,
    MessageId, Outbound, OutboundBody, ReplyKind,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use cursor::{MemoryCursor, SyncCursor};
use normalize::{Rules, normalize};
pub use session::{Account, Login, SessionError};

/// How many of its own event ids the gateway remembers, to know a reply
/// or a reaction to one of its messages.
const OWN_EVENTS_KEPT: usize = 1024;

/// What the gateway is set to do.
#[derive(Clone, Debug)]
pub struct MatrixSettings {
    /// The account and its session's folder.
    pub account: Account,
    /// Who may invite it into a direct chat or a room.
    pub allowed_users: Vec<String>,
    /// Rooms it joins when invited, whoever invited it.
    pub allowed_rooms: Vec<String>,
    /// Which messages of a room that is no direct chat it takes.
    pub group_mode: GroupMode,
    /// Rooms joined to a bridge.
    pub bridged: BTreeSet<String>,
    /// How long one sync waits on the homeserver for news.
    pub sync_timeout: Duration,
}

/// Why a sync did not go through.
enum Failure {
    /// Worth trying again after a pause.
    Retry(String),
    /// Nothing works until the configuration changes.
    Fatal(GatewayError),
}

/// The gateway.
pub struct MatrixGateway {
    settings: MatrixSettings,
    cursor: Arc<dyn SyncCursor>,
    client: tokio::sync::OnceCell<Client>,
    health: Mutex<Health>,
    own_events: Mutex<VecDeque<String>>,
}

impl MatrixGateway {
    /// A gateway with `settings`, saving its sync token in `cursor`; it
    /// connects when it first listens or delivers.
    pub fn new(settings: MatrixSettings, cursor: Arc<dyn SyncCursor>) -> Self {
        Self {
            settings,
            cursor,
            client: tokio::sync::OnceCell::new(),
            health: Mutex::new(Health::with(HealthState::Starting, "connecting to the homeserver")),
            own_events: Mutex::new(VecDeque::new()),
        }
    }

    async fn client(&self) -> Result<&Client, Failure> {
        self.client
            .get_or_try_init(|| self.settings.account.connect())
            .await
            .map_err(|error| match error {
                SessionError::Unreachable(why) => Failure::Retry(why),
                other => Failure::Fatal(GatewayError::Unauthorized {
                    reason: other.to_string(),
                }),
            })
    }

    fn set_health(&self, health: Health) {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner) = health;
    }

    fn remember(&self, event_id: &str) {
        let mut own = self.own_events.lock().unwrap_or_else(PoisonError::into_inner);
        if own.len() == OWN_EVENTS_KEPT {
            own.pop_front();
        }
        own.push_back(event_id.to_owned());
    }

    fn is_ours(&self, event_id: &str) -> bool {
        (self.own_events.lock().unwrap_or_else(PoisonError::into_inner))
            .iter()
            .any(|id| id == event_id)
    }

    /// One sync: invitations answered, messages submitted, the token saved.
    async fn sync(&self, client: &Client, intake: &Intake) -> Result<(), Failure> {
        let mut settings = SyncSettings::default().timeout(self.settings.sync_timeout);
        if let Some(token) = self.cursor.load() {
            settings = settings.token(token);
        }
        let response = client
            .sync_once(settings)
            .await
            .map_err(|error| Failure::Retry(error.to_string()))?;
        for (room_id, invited) in &response.rooms.invited {
            self.answer_invitation(client, room_id, &invited.invite_state.events)
                .await;
        }
        for (room_id, joined) in &response.rooms.joined {
            let direct = match client.get_room(room_id) {
                Some(room) => room.is_direct().await.unwrap_or(false),
                None => false,
            };
            for event in &joined.timeline.events {
                if let TimelineEventKind::UnableToDecrypt { .. } = &event.kind {
                    self.undecryptable(client, room_id, event.event_id().as_deref().map(|id| id.as_str()))
                        .await;
                    continue;
                }
                let Ok(json) = serde_json::from_str::<Value>(event.raw().json().get()) else {
                    continue;
                };
                self.submit(room_id, &json, direct, intake).await?;
            }
        }
        if let Err(why) = self.cursor.save(&response.next_batch).await {
            tracing::warn!(error = %why, "the Matrix sync token could not be saved; events may come again");
        }
        Ok(())
    }

    /// Submits one event, if it is taken; a busy core gets the sync again.
    async fn submit(&self, room_id: &RoomId, json: &Value, direct: bool, intake: &Intake) -> Result<(), Failure> {
        let taken = {
            let is_ours = |id: &str| self.is_ours(id);
            let rules = Rules {
                own_user: &self.settings.account.user,
                direct,
                group_mode: self.settings.group_mode,
                bridged: self.settings.bridged.contains(room_id.as_str()),
                is_ours: &is_ours,
            };
            normalize(room_id.as_str(), json, &rules)
        };
        let inbound = match taken {
            Ok(inbound) => inbound,
            Err(skipped) => {
                tracing::debug!(room = %room_id, reason = skipped.0, "a Matrix event skipped");
                return Ok(());
            }
        };
        match intake.submit(inbound).await {
            Ok(Ack::Busy) => Err(Failure::Retry("the daemon is busy".into())),
            Ok(_) => Ok(()),
            Err(closed) => Err(Failure::Fatal(GatewayError::Transient {
                reason: closed.to_string(),
            })),
        }
    }

    /// Joins a room an allowed person (or an allowed room) invited it to;
    /// declines the others.
    async fn answer_invitation(
        &self,
        client: &Client,
        room_id: &OwnedRoomId,
        state: &[matrix_sdk::ruma::serde::Raw<matrix_sdk::ruma::events::AnyStrippedStateEvent>],
    ) {
        let own = self.settings.account.user.as_str();
        let inviter = state.iter().find_map(|event| {
            let event: Value = serde_json::from_str(event.json().get()).ok()?;
            (event["type"] == "m.room.member"
                && event["state_key"] == own
                && event["content"]["membership"] == "invite")
                .then(|| event["sender"].as_str().map(str::to_owned))
                .flatten()
        });
        let allowed = inviter
            .as_deref()
            .is_some_and(|who| self.settings.allowed_users.iter().any(|u| u == who))
            || self.settings.allowed_rooms.iter().any(|room| room == room_id.as_str());
        let Some(room) = client.get_room(room_id) else {
            return;
        };
        let outcome = if allowed { room.join().await } else { room.leave().await };
        match outcome {
            Ok(()) if allowed => tracing::info!(room = %room_id, "joined a Matrix room on an invitation"),
            Ok(()) => {
                tracing::info!(room = %room_id, inviter = ?inviter, "declined a Matrix invitation from someone not allowed")
            }
            Err(error) => tracing::warn!(room = %room_id, %error, "a Matrix invitation could not be answered"),
        }
    }

    /// Tells the room a message could not be decrypted.
    async fn undecryptable(&self, client: &Client, room_id: &RoomId, event_id: Option<&str>) {
        let Some(room) = client.get_room(room_id) else {
            return;
        };
        let mut content = json!({
            "msgtype": "m.notice",
            "body": "I could not decrypt your message: my device has no key for it yet. Please send it again.",
        });
        if let Some(event_id) = event_id {
            content["m.relates_to"] = json!({ "m.in_reply_to": { "event_id": event_id } });
        }
        // One notice per event, even when the sync comes again.
        let txn = event_id.map(|id| format!("undecryptable-{id}"));
        let send = room.send_raw("m.room.message", content);
        let send = match &txn {
            Some(txn) => send.with_transaction_id(<&TransactionId>::from(txn.as_str())),
            None => send,
        };
        if let Err(error) = send.await {
            tracing::warn!(room = %room_id, %error, "the notice of an undecryptable message was not sent");
        }
    }
}

#[async_trait]
impl Listen for MatrixGateway {
    fn id(&self) -> GatewayId {
        normalize::gateway()
    }

    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        let backoff = BackoffPolicy::new(Duration::from_secs(1), Duration::from_secs(60));
        let mut failures = 0u32;
        loop {
            let step = async {
                let client = self.client().await?;
                self.sync(client, &intake).await
            };
            let outcome = tokio::select! {
                () = shutdown.cancelled() => return Ok(()),
                outcome = step => outcome,
            };
            match outcome {
                Ok(()) => {
                    failures = 0;
                    self.set_health(Health::up());
                }
                Err(Failure::Fatal(error)) => {
                    self.set_health(Health::with(HealthState::Down, error.to_string()));
                    return Err(error);
                }
                Err(Failure::Retry(why)) => {
                    tracing::warn!(error = %why, "Matrix sync failed; trying again");
                    self.set_health(Health::with(HealthState::Degraded, why));
                    let wait = backoff.delay(failures, passepartout_gateway::retry::random_unit());
                    failures = failures.saturating_add(1);
                    tokio::select! {
                        () = shutdown.cancelled() => return Ok(()),
                        () = tokio::time::sleep(wait) => {}
                    }
                }
            }
        }
    }

    fn health(&self) -> Health {
        self.health.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

#[async_trait]
impl Deliver for MatrixGateway {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        let content = match &message.body {
            OutboundBody::Text { text, kind } => {
                let mut content = formatted(text, *kind != ReplyKind::Answer);
                if let Some(reply_to) = &message.in_reply_to {
                    content["m.relates_to"] = json!({ "m.in_reply_to": { "event_id": reply_to.as_str() } });
                }
                content
            }
            OutboundBody::ApprovalPrompt { text, .. } => formatted(text, false),
            OutboundBody::ApprovalDecided { prompt, text, .. } => replacement(prompt, text),
            OutboundBody::Edit { message: target, text } => replacement(target, text),
            OutboundBody::Withdraw | OutboundBody::Stopped { .. } => {
                return Ok(Delivered {
                    message_ids: Vec::new(),
                });
            }
            OutboundBody::File(_) => {
                return Err(GatewayError::Rejected {
                    reason: "sending files over Matrix is not supported yet".into(),
                });
            }
        };
        let client = self.client().await.map_err(|failure| match failure {
            Failure::Retry(reason) => GatewayError::Transient { reason },
            Failure::Fatal(error) => error,
        })?;
        let room = room(client, &message.conversation)?;
        let sent = room
            .send_raw("m.room.message", content)
            .with_transaction_id(<&TransactionId>::from(message.id.as_str()))
            .await
            .map_err(sending_error)?;
        let event_id = sent.event_id.to_string();
        self.remember(&event_id);
        let id = MessageId::new(event_id).map_err(|_| GatewayError::Rejected {
            reason: "the homeserver gave an event id that is not one".into(),
        })?;
        Ok(Delivered { message_ids: vec![id] })
    }

    async fn typing(&self, conversation: &ConversationKey) -> Result<(), GatewayError> {
        let Some(client) = self.client.get() else {
            return Ok(());
        };
        room(client, conversation)?
            .typing_notice(true)
            .await
            .map_err(sending_error)
    }
}

/// The joined room a conversation is in.
fn room(client: &Client, conversation: &ConversationKey) -> Result<matrix_sdk::Room, GatewayError> {
    let room_id = <&RoomId>::try_from(conversation.chat.as_str()).map_err(|_| GatewayError::Rejected {
        reason: format!("{} is not a Matrix room id", conversation.chat.as_str()),
    })?;
    client.get_room(room_id).ok_or_else(|| GatewayError::Rejected {
        reason: "the assistant is not in that room".into(),
    })
}

/// A text message with its Markdown as HTML; a notice for what the daemon
/// itself says.
fn formatted(markdown: &str, notice: bool) -> Value {
    let (body, html) = html::formatted(markdown);
    json!({
        "msgtype": if notice { "m.notice" } else { "m.text" },
        "body": body,
        "format": "org.matrix.custom.html",
        "formatted_body": html,
    })
}

/// An edit of the assistant's message `target` to show `markdown`.
fn replacement(target: &MessageId, markdown: &str) -> Value {
    let new = formatted(markdown, false);
    json!({
        "msgtype": "m.text",
        "body": format!("* {}", new["body"].as_str().unwrap_or_default()),
        "m.new_content": new,
        "m.relates_to": { "rel_type": "m.replace", "event_id": target.as_str() },
    })
}

/// A send's failure as the outbox reads it: rate limits waited for, what
/// the homeserver refused for good dropped, the rest retried.
fn sending_error(error: matrix_sdk::Error) -> GatewayError {
    match error.as_client_api_error().map(|error| error.status_code.as_u16()) {
        Some(429) => GatewayError::RateLimited {
            retry_after: Duration::from_secs(1),
        },
        Some(401) => GatewayError::Unauthorized {
            reason: error.to_string(),
        },
        Some(status) if (400..500).contains(&status) => GatewayError::Rejected {
            reason: error.to_string(),
        },
        _ => GatewayError::Transient {
            reason: error.to_string(),
        },
    }
}
