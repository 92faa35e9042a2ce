//! A core that answers the intake from a script, in a task of its own, and
//! records what it saw, for tests about what happens around the core rather
//! than about its answers.
//!
//! By default it accepts each message once and calls a repeated one (the same
//! conversation and message id) a duplicate, as the real core's journal does.
//! What the test serves beside the intake (an admin queue, say) can be
//! recorded in the same sequence through a [`Recorder`].

use std::collections::HashSet;

use passepartout_gateway::{Ack, ConversationKey, Inbound, IntakeEvent, IntakeQueue};
use tokio::sync::mpsc;

use crate::within;

/// What the scripted core saw, in order.
#[derive(Debug)]
// As `IntakeEvent`: nearly everything seen is a message; no box for it.
#[allow(clippy::large_enum_variant)]
pub enum Seen {
    /// A submitted message (already answered).
    Inbound(Inbound),
    /// A conversation announced as reachable.
    Reachable(ConversationKey),
    /// Something else the test recorded, by its label (see [`Recorder`]).
    Other(&'static str),
}

/// A core in a task, answering every message by its script.
#[derive(Debug)]
pub struct ScriptedCore {
    seen: mpsc::UnboundedReceiver<Seen>,
    record: mpsc::UnboundedSender<Seen>,
}

/// Records labelled events into a [`ScriptedCore`]'s sequence, in the order
/// they happen with its messages.
#[derive(Clone, Debug)]
pub struct Recorder(mpsc::UnboundedSender<Seen>);

impl Recorder {
    /// Adds `label` to the sequence, after what the core has seen so far.
    pub fn record(&self, label: &'static str) {
        // The test may have stopped listening.
        let _ = self.0.send(Seen::Other(label));
    }
}

impl ScriptedCore {
    /// Accepts each message once; a repeated one is a duplicate.
    pub fn spawn(queue: IntakeQueue) -> Self {
        Self::answering(queue, Self::accept_once())
    }

    /// The default script: accepted the first time, a duplicate after.
    pub fn accept_once() -> impl FnMut(&Inbound) -> Ack + Send + 'static {
        let mut accepted = HashSet::new();
        move |inbound: &Inbound| {
            if accepted.insert((inbound.conversation.clone(), inbound.message_id.clone())) {
                Ack::Accepted
            } else {
                Ack::Duplicate
            }
        }
    }

    /// Answers each message with what `script` says.
    pub fn answering(mut queue: IntakeQueue, mut script: impl FnMut(&Inbound) -> Ack + Send + 'static) -> Self {
        let (tx, seen) = mpsc::unbounded_channel();
        let record = tx.clone();
        tokio::spawn(async move {
            while let Some(event) = queue.recv().await {
                let report = match event {
                    IntakeEvent::Inbound { inbound, ack } => {
                        // The gateway may have given up waiting; the record stands.
                        let _ = ack.send(script(&inbound));
                        Seen::Inbound(inbound)
                    }
                    IntakeEvent::Reachable(key) => Seen::Reachable(key),
                };
                // The test may have stopped listening; the core goes on answering.
                let _ = tx.send(report);
            }
        });
        Self { seen, record }
    }

    /// A handle that records other events into this core's sequence.
    pub fn recorder(&self) -> Recorder {
        Recorder(self.record.clone())
    }

    /// The next thing the core saw.
    pub async fn next(&mut self) -> Seen {
        within(self.seen.recv()).await.expect("the scripted core stopped")
    }

    /// The next inbound message, skipping other events.
    pub async fn next_inbound(&mut self) -> Inbound {
        loop {
            if let Seen::Inbound(inbound) = self.next().await {
                return inbound;
            }
        }
    }

    /// The next reachable announcement, skipping other events.
    pub async fn next_reachable(&mut self) -> ConversationKey {
        loop {
            if let Seen::Reachable(key) = self.next().await {
                return key;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::Intake;

    use super::*;
    use crate::build;

    #[tokio::test]
    async fn answers_by_script_and_records_in_order() {
        let (intake, queue) = Intake::channel(4);
        let mut core = ScriptedCore::spawn(queue);
        let message = build::text_inbound(build::conversation("socket", "c"), "m1", "hi");
        assert_eq!(intake.submit(message.clone()).await, Ok(Ack::Accepted));
        assert_eq!(intake.submit(message.clone()).await, Ok(Ack::Duplicate));
        intake.reachable(message.conversation.clone()).await.unwrap();
        assert_eq!(core.next_inbound().await, message);
        assert_eq!(core.next_inbound().await, message);
        assert_eq!(core.next_reachable().await, message.conversation);
    }
}
