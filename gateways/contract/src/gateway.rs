//! The capabilities a gateway offers the core, one small trait each.

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use crate::error::GatewayError;
use crate::ids::{ConversationKey, GatewayId};
use crate::intake::Intake;
use crate::media::{Fetched, FileRef};
use crate::message::{Delivered, Outbound};
use crate::parts::Resume;

/// Receiving: the gateway's intake loop.
#[async_trait]
pub trait Listen: Send + Sync {
    /// Which gateway this is.
    fn id(&self) -> GatewayId;

    /// Receives platform updates and hands each to `intake`, acknowledging the
    /// platform only after `intake` acknowledged. Returns when `shutdown` is
    /// cancelled (`Ok`) or when the gateway cannot go on (`Err`; the supervisor
    /// decides whether to restart it).
    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError>;

    /// The gateway's current health, for `status` and `doctor`.
    fn health(&self) -> Health {
        Health::up()
    }

    /// Releases what the gateway holds (connections, files) once the core has
    /// drained: after `listen` returned and the last replies were delivered.
    async fn close(&self) {}
}

/// Sending: delivery of the core's messages.
#[async_trait]
pub trait Deliver: Send + Sync {
    /// Delivers one message. Returns only once the platform confirmed it.
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError>;

    /// Delivers `message` from its part `resume.first_part` on (the earlier
    /// parts went out in an earlier attempt), telling `resume.progress` of
    /// each part sent before the next is attempted (see [`crate::parts`]). The returned ids
    /// are those of the parts sent by this call. A gateway that never splits
    /// a message keeps this default, which sends it whole.
    async fn deliver_from(&self, message: &Outbound, resume: Resume<'_>) -> Result<Delivered, GatewayError> {
        let _ = resume;
        self.deliver(message).await
    }

    /// Shows that the assistant is working on an answer in `conversation`.
    /// Best effort: a gateway without such an indicator does nothing.
    async fn typing(&self, conversation: &ConversationKey) -> Result<(), GatewayError> {
        let _ = conversation;
        Ok(())
    }
}

/// Fetching: the bytes of media that came with an inbound message.
#[async_trait]
pub trait Fetch: Send + Sync {
    /// Fetches `file` (an [`Attachment`](crate::Attachment)'s reference made by
    /// this gateway), refusing with [`GatewayError::TooLarge`] rather than
    /// reading more than `max_bytes`.
    async fn fetch(&self, file: &FileRef, max_bytes: u64) -> Result<Fetched, GatewayError>;
}

/// Coarse health of a gateway.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HealthState {
    /// Not yet connected to its platform.
    Starting,
    /// Connected and working.
    Up,
    /// Running but in trouble (failures it retries, rate limits, shutting
    /// down): messages may wait.
    Degraded,
    /// Not working until something changes (a refused token, no
    /// configuration, closed).
    Down,
}

/// Health with a sentence saying why, when not up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Health {
    /// How the gateway is doing.
    pub state: HealthState,
    /// A sentence for people: why, when it is not up; when it is, anything
    /// worth knowing (the web chat's address).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl Health {
    /// Up, with nothing to say.
    pub fn up() -> Self {
        Self {
            state: HealthState::Up,
            detail: None,
        }
    }

    /// `state`, with `detail` saying why or what to know.
    pub fn with(state: HealthState, detail: impl Into<String>) -> Self {
        Self {
            state,
            detail: Some(detail.into()),
        }
    }
}

/// Which messages in a group chat a gateway takes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupMode {
    /// Only messages that mention the bot or reply to (quote) one of its messages.
    #[default]
    MentionOrReply,
    /// Every message (on Telegram the bot's privacy mode must be off).
    All,
}
