//! The hand-off from a gateway to the core.
//!
//! [`Intake`] is the gateway's end of a bounded queue; the core owns the
//! [`IntakeQueue`]. [`Intake::submit`] resolves only after the core decided
//! about the message — for an accepted one, after it is in the durable journal —
//! so a gateway that advances its platform cursor after `submit` returned never
//! loses an update, and a resubmitted one is reported as a duplicate.

use serde::{Deserialize, Serialize};
use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

use crate::ids::ConversationKey;
use crate::message::Inbound;

/// The core's answer to a submitted message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "ack", rename_all = "snake_case")]
pub enum Ack {
    /// Journaled durably; it will be processed, and answered, exactly once.
    Accepted,
    /// The same message (conversation and platform message id) was accepted before.
    Duplicate,
    /// Not taken, for a reason the sender may be told.
    Refused {
        /// Why it was not taken.
        reason: Refusal,
    },
    /// The conversation's queue is full; nothing was journaled. Retry later.
    Busy,
}

/// Why a message was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Refusal {
    /// The sender is not on the gateway's allowlist.
    NotAllowed,
    /// The sender is not on the gateway's allowlist, and the core answered
    /// them itself (with a pairing code): the gateway says nothing more.
    Pairing,
    /// The message is larger than the core accepts.
    TooLarge,
    /// A button press answering an approval its sender may not decide; the
    /// approval keeps waiting.
    NotApprover,
}

/// What travels from gateways to the core.
// Nearly every event is a message: boxing it would allocate once per
// message to spare the rare `Reachable` a few bytes of queue slot.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum IntakeEvent {
    /// A message, with the channel on which the core acknowledges it.
    Inbound {
        /// The message.
        inbound: Inbound,
        /// Where the core sends its answer once it decided.
        ack: oneshot::Sender<Ack>,
    },
    /// A conversation can receive messages again (a local client reconnected):
    /// whatever is waiting in the outbox for it can go now.
    Reachable(ConversationKey),
}

/// The core is no longer taking messages (it is shutting down).
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[error("the daemon is shutting down and takes no more messages")]
pub struct IntakeClosed;

/// The gateway's handle on the core's intake. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Intake {
    tx: mpsc::Sender<IntakeEvent>,
}

/// The core's end of the intake queue.
pub type IntakeQueue = mpsc::Receiver<IntakeEvent>;

impl Intake {
    /// A bounded intake queue: `capacity` events wait at most; further
    /// submitters wait for room (back-pressure onto the platform).
    pub fn channel(capacity: usize) -> (Intake, IntakeQueue) {
        let (tx, rx) = mpsc::channel(capacity);
        (Intake { tx }, rx)
    }

    /// Hands `inbound` to the core and waits for its decision.
    pub async fn submit(&self, inbound: Inbound) -> Result<Ack, IntakeClosed> {
        let (ack, answer) = oneshot::channel();
        self.tx
            .send(IntakeEvent::Inbound { inbound, ack })
            .await
            .map_err(|_| IntakeClosed)?;
        answer.await.map_err(|_| IntakeClosed)
    }

    /// Tells the core that `conversation` can receive messages again.
    pub async fn reachable(&self, conversation: ConversationKey) -> Result<(), IntakeClosed> {
        self.tx
            .send(IntakeEvent::Reachable(conversation))
            .await
            .map_err(|_| IntakeClosed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{ChatId, GatewayId, MessageId, UserId};
    use crate::message::{InboundBody, Sender};

    fn inbound() -> Inbound {
        Inbound {
            conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("c").unwrap()),
            sender: Sender::new(UserId::new("1000").unwrap()),
            message_id: MessageId::new("m1").unwrap(),
            reply_to: None,
            body: InboundBody::Text { text: "hi".into() },
            received_at_ms: 0,
            overheard: false,
            by_reply_only: false,
            client: None,
        }
    }

    #[tokio::test]
    async fn submit_waits_for_the_cores_ack() {
        let (intake, mut queue) = Intake::channel(1);
        let core = tokio::spawn(async move {
            match queue.recv().await {
                Some(IntakeEvent::Inbound { ack, .. }) => ack.send(Ack::Accepted).unwrap(),
                other => panic!("unexpected {other:?}"),
            }
        });
        assert_eq!(intake.submit(inbound()).await, Ok(Ack::Accepted));
        core.await.unwrap();
    }

    #[tokio::test]
    async fn submit_reports_a_core_that_dropped_the_message_as_closed() {
        let (intake, mut queue) = Intake::channel(1);
        tokio::spawn(async move { drop(queue.recv().await) });
        assert_eq!(intake.submit(inbound()).await, Err(IntakeClosed));
    }
}
