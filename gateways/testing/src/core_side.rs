//! The core's side of an intake, played by the test itself: it takes each
//! submitted message and decides when and how to acknowledge it, so a test
//! can check what the gateway does while it waits for the ack.

use passepartout_gateway::{Ack, Inbound, IntakeEvent, IntakeQueue};
use tokio::sync::oneshot;

use crate::within;

/// Reads an intake queue for a test.
#[derive(Debug)]
pub struct CoreSide {
    queue: IntakeQueue,
}

impl CoreSide {
    /// Reads `queue`, the other end of the gateway's intake.
    pub fn new(queue: IntakeQueue) -> Self {
        Self { queue }
    }

    /// The next submitted message and the channel to acknowledge it on.
    pub async fn next(&mut self) -> (Inbound, oneshot::Sender<Ack>) {
        let event = within(self.queue.recv()).await.expect("the intake is open");
        match event {
            IntakeEvent::Inbound { inbound, ack } => (inbound, ack),
            other => panic!("expected an inbound message, got {other:?}"),
        }
    }

    /// The next submitted message, answered with `ack`.
    pub async fn answer(&mut self, ack: Ack) -> Inbound {
        let (inbound, tx) = self.next().await;
        tx.send(ack).expect("the gateway waits for the ack");
        inbound
    }

    /// Whether nothing is waiting in the queue right now (what is, is taken).
    pub fn is_idle(&mut self) -> bool {
        self.queue.try_recv().is_err()
    }
}
