//! The Matrix gateway over matrix-sdk: [`MatrixGateway`] syncs, hands
//! what it takes to the core, and delivers the core's messages.
//!
//! One sync at a time: its invitations are answered (joined when an
//! allowed person invited, or to an allowed room, or to a direct chat
//! with anyone when strangers are offered pairing codes; declined
//! otherwise), its
//! rooms' events normalized ([`normalize`]) and submitted, each only after
//! the one before it was acknowledged, and the sync token is saved
//! ([`SyncCursor`]) only once every message of that sync was. A core that is
//! busy is waited for; what a sync the SDK processed brought before a crash
//! is read from the rooms' histories after it; a message that could not be
//! decrypted is answered with a notice rather than lost in silence. Sends
//! carry the outbox message's id as their transaction id, so a send
//! repeated after a crash is dropped by the homeserver. The people allowed
//! to talk to it may verify its device by emoji ([`verify`]).

pub mod backup;
pub mod cursor;
mod deliver;
mod draft;
mod failure;
mod fetch;
pub mod html;
pub mod normalize;
mod recent;
pub mod reply;
pub mod session;
mod verify;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use matrix_sdk::Client;
use matrix_sdk::config::SyncSettings;
use matrix_sdk::deserialized_responses::TimelineEventKind;
use matrix_sdk::ruma::api::client::receipt::create_receipt::v3::ReceiptType;
use matrix_sdk::ruma::events::receipt::ReceiptThread;
use matrix_sdk::ruma::{OwnedEventId, OwnedRoomId, RoomId, TransactionId};
use passepartout_gateway::retry::BackoffPolicy;
use passepartout_gateway::{Ack, GatewayError, GatewayId, GroupMode, Health, HealthState, Intake, Listen};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

pub use cursor::{MemoryCursor, SyncCursor};
use matrix_sdk::room::MessagesOptions;
use matrix_sdk::store::StateStoreDataKey;
use normalize::{Rules, normalize};
use recent::Recent;
pub use session::{Account, Login, SessionError};

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
    /// Whether strangers are offered a pairing code: then anyone's
    /// invitation to a direct chat is accepted, so that the core can offer
    /// them one (an invitation to a room still needs someone allowed).
    pub pairing: bool,
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
    /// Its own recent messages.
    own_events: Recent,
    /// The thread each recent message it was sent in a thread is in.
    threads: Recent,
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
            own_events: Recent::default(),
            threads: Recent::default(),
        }
    }

    async fn client(&self) -> Result<&Client, Failure> {
        self.client
            .get_or_try_init(|| async {
                let client = self.settings.account.connect().await?;
                verify::answer(&client, self.settings.allowed_users.clone());
                Ok(client)
            })
            .await
            .map_err(|error| match error {
                SessionError::Unreachable(why) => Failure::Retry(why),
                other => Failure::Fatal(GatewayError::Unauthorized {
                    reason: other.to_string(),
                }),
            })
    }

    /// The client, for a delivery: a failure to connect as the outbox reads it.
    async fn connected(&self) -> Result<&Client, GatewayError> {
        self.client().await.map_err(|failure| match failure {
            Failure::Retry(reason) => GatewayError::Transient { reason },
            Failure::Fatal(error) => error,
        })
    }

    fn set_health(&self, health: Health) {
        *self.health.lock().unwrap_or_else(PoisonError::into_inner) = health;
    }

    /// One sync: invitations answered, messages submitted, the token saved.
    ///
    /// The SDK keeps the token of the last sync it processed, and drops a
    /// response whose token it has seen. So a sync is never asked again:
    /// a busy core is waited for, and when the SDK is ahead of the saved
    /// token (a crash between its saving and ours, or ours failing), the
    /// events in between are read from each room's history instead. A
    /// room whose news did not all fit in the sync (`limited`) has the
    /// rest read from its history too.
    async fn sync(&self, client: &Client, intake: &Intake) -> Result<(), Failure> {
        let ours = self.cursor.load();
        if let (Some(from), Some(to)) = (&ours, sdk_token(client).await)
            && *from != to
        {
            tracing::info!("reading what the last Matrix syncs brought from the rooms' histories");
            for room in client.joined_rooms() {
                self.history(client, &room, from, &to, intake).await?;
            }
            self.save(&to).await;
            return Ok(());
        }
        let mut settings = SyncSettings::default().timeout(self.settings.sync_timeout);
        if let Some(token) = &ours {
            settings = settings.token(token.clone());
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
            let Some(room) = client.get_room(room_id) else {
                continue;
            };
            if let (true, Some(from), Some(to)) = (joined.timeline.limited, &ours, &joined.timeline.prev_batch) {
                self.history(client, &room, from, to, intake).await?;
            }
            self.take(client, &room, &joined.timeline.events, intake).await?;
        }
        self.save(&response.next_batch).await;
        Ok(())
    }

    /// Saves the sync token; one not saved only means events read again.
    async fn save(&self, token: &str) {
        if let Err(why) = self.cursor.save(token).await {
            tracing::warn!(error = %why, "the Matrix sync token could not be saved; events may come again");
        }
    }

    /// Takes the events of `room`'s history from token `from` to token `to`.
    async fn history(
        &self,
        client: &Client,
        room: &matrix_sdk::Room,
        from: &str,
        to: &str,
        intake: &Intake,
    ) -> Result<(), Failure> {
        let mut from = from.to_owned();
        loop {
            let mut options = MessagesOptions::forward().from(from.as_str());
            options.to = Some(to.to_owned());
            let page = room
                .messages(options)
                .await
                .map_err(|error| Failure::Retry(error.to_string()))?;
            self.take(client, room, &page.chunk, intake).await?;
            match page.end {
                Some(end) if !page.chunk.is_empty() => from = end,
                _ => return Ok(()),
            }
        }
    }

    /// Submits what `room`'s `events` bring, in order, answers what could
    /// not be decrypted, and marks the room read up to the last one taken.
    async fn take(
        &self,
        client: &Client,
        room: &matrix_sdk::Room,
        events: &[matrix_sdk::deserialized_responses::TimelineEvent],
        intake: &Intake,
    ) -> Result<(), Failure> {
        let room_id = room.room_id();
        let direct = room.is_direct().await.unwrap_or(false);
        let mut read = None;
        for event in events {
            if let TimelineEventKind::UnableToDecrypt { .. } = &event.kind {
                self.undecryptable(client, room_id, event.event_id().as_deref().map(|id| id.as_str()))
                    .await;
                continue;
            }
            let Ok(json) = serde_json::from_str::<Value>(event.raw().json().get()) else {
                continue;
            };
            if self.submit(client, room_id, &json, direct, intake).await? {
                read = event.event_id();
            }
        }
        if let Some(event) = read {
            self.mark_read(client, room_id, event).await;
        }
        Ok(())
    }

    /// Submits one event, if it is taken (then `true`); a busy core is
    /// waited for.
    async fn submit(
        &self,
        client: &Client,
        room_id: &RoomId,
        json: &Value,
        direct: bool,
        intake: &Intake,
    ) -> Result<bool, Failure> {
        let taken = {
            let is_ours = |id: &str| self.own_events.contains(id);
            let rules = Rules {
                own_user: &self.settings.account.user,
                direct,
                group_mode: self.settings.group_mode,
                bridged: self.settings.bridged.contains(room_id.as_str()),
                is_ours: &is_ours,
            };
            normalize(room_id.as_str(), json, &rules)
        };
        let mut inbound = match taken {
            Ok(inbound) => inbound,
            Err(skipped) => {
                tracing::debug!(room = %room_id, reason = skipped.0, "a Matrix event skipped");
                return Ok(false);
            }
        };
        inbound.sender.display_name = display_name(client, room_id, inbound.sender.id.as_str()).await;
        if let Some(root) = normalize::thread_root(json) {
            self.threads.remember(inbound.message_id.as_str(), root);
        }
        // How long a message waits for a busy core before it is handed in again.
        let backoff = BackoffPolicy::new(Duration::from_millis(100), Duration::from_secs(5));
        let mut waits = 0u32;
        loop {
            match intake.submit(inbound.clone()).await {
                Ok(Ack::Busy) => {
                    // The same message again once the core has room.
                    let wait = backoff.delay(waits, passepartout_gateway::retry::random_unit());
                    waits = waits.saturating_add(1);
                    tokio::time::sleep(wait).await;
                }
                Ok(_) => return Ok(true),
                Err(closed) => {
                    return Err(Failure::Fatal(GatewayError::Transient {
                        reason: closed.to_string(),
                    }));
                }
            }
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
        let invitation = state.iter().find_map(|event| {
            let event: Value = serde_json::from_str(event.json().get()).ok()?;
            (event["type"] == "m.room.member"
                && event["state_key"] == own
                && event["content"]["membership"] == "invite")
                .then_some(event)
        });
        let inviter = invitation.as_ref().and_then(|event| event["sender"].as_str());
        let direct = invitation
            .as_ref()
            .is_some_and(|event| event["content"]["is_direct"] == true);
        let allowed = inviter.is_some_and(|who| self.settings.allowed_users.iter().any(|u| u == who))
            || self.settings.allowed_rooms.iter().any(|room| room == room_id.as_str())
            || (self.settings.pairing && direct && inviter.is_some());
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

    /// Tells the room (its other members' clients) that the assistant has
    /// read up to `event`, now that what it took is journaled.
    async fn mark_read(&self, client: &Client, room_id: &RoomId, event: OwnedEventId) {
        let Some(room) = client.get_room(room_id) else {
            return;
        };
        if let Err(error) = room
            .send_single_receipt(ReceiptType::Read, ReceiptThread::Unthreaded, event)
            .await
        {
            tracing::debug!(room = %room_id, %error, "a read receipt was not sent");
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

/// The name `user` goes by in the room, as its members' list has it.
async fn display_name(client: &Client, room_id: &RoomId, user: &str) -> Option<String> {
    let user = <&matrix_sdk::ruma::UserId>::try_from(user).ok()?;
    let member = client.get_room(room_id)?.get_member_no_sync(user).await.ok()??;
    member.display_name().map(str::to_owned)
}

/// The token of the last sync the SDK processed, as its store keeps it.
async fn sdk_token(client: &Client) -> Option<String> {
    let data = client
        .state_store()
        .get_kv_data(StateStoreDataKey::SyncToken)
        .await
        .ok()??;
    data.into_sync_token()
}
