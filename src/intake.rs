//! The intake loop: the core's end of the gateways' queue.
//!
//! It takes whatever has queued up (a batch), decides about each message —
//! allowed? too large? room in its conversation's queue? seen before? —,
//! journals the new ones, makes the whole batch durable with one flush, and
//! only then acknowledges each to its gateway and hands it to its worker.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use passepartout_gateway::{Ack, ControlRequest, Inbound, InboundBody, IntakeEvent, IntakeQueue, Refusal};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::conversations::Job;
use crate::core::{Core, Stats};
use crate::store::Accepted;

/// Most events taken into one batch (one flush).
const MAX_BATCH: usize = 512;

struct Decision {
    ack: oneshot::Sender<Ack>,
    answer: Ack,
    dispatch: Option<(mpsc::OwnedPermit<Job>, u64)>,
}

/// Runs until `stop` is cancelled or every gateway dropped its intake.
pub async fn run(core: Arc<Core>, mut queue: IntakeQueue, stop: CancellationToken) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    loop {
        let first = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            event = queue.recv() => match event {
                Some(event) => event,
                None => break,
            },
        };
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(event) => batch.push(event),
                Err(_) => break,
            }
        }
        process(&core, &mut batch).await;
    }
    // Whatever is still queued is answered "closed" by dropping it: nothing of
    // it was journaled, so the gateways will offer it again after a restart.
    queue.close();
    tracing::debug!("intake stopped");
}

async fn process(core: &Arc<Core>, batch: &mut Vec<IntakeEvent>) {
    let mut decisions = Vec::with_capacity(batch.len());
    for event in batch.drain(..) {
        match event {
            IntakeEvent::Inbound { inbound, ack } => {
                let (answer, dispatch) = decide(core, &inbound);
                decisions.push(Decision { ack, answer, dispatch });
            }
            IntakeEvent::Reachable(key) => core.router.nudge(core, &key),
            IntakeEvent::Control {
                request: ControlRequest::Status,
                reply,
            } => {
                let _ = reply.send(core.status_document());
            }
        }
    }
    if decisions.iter().any(|d| d.dispatch.is_some())
        && let Err(error) = core.store.durable().await
    {
        // Not known to be on disk: say busy so the gateway offers them again;
        // the journal's dedupe makes a second offer harmless.
        tracing::error!(%error, "journal flush failed; refusing the batch as busy");
        for decision in &mut decisions {
            if decision.dispatch.take().is_some() {
                decision.answer = Ack::Busy;
            }
        }
    }
    for decision in decisions {
        if let Some((permit, seq)) = decision.dispatch {
            permit.send(Job::Turn(seq));
        }
        let _ = decision.ack.send(decision.answer);
    }
}

fn decide(core: &Arc<Core>, inbound: &Inbound) -> (Ack, Option<(mpsc::OwnedPermit<Job>, u64)>) {
    if !core.allowed(inbound) {
        Stats::bump(&core.stats.refused);
        tracing::info!(conversation = %inbound.conversation, sender = %inbound.sender.id, "sender not allowed");
        return (
            Ack::Refused {
                reason: Refusal::NotAllowed,
            },
            None,
        );
    }
    if let InboundBody::Text { text } = &inbound.body
        && text.len() > core.settings.max_message_bytes
    {
        Stats::bump(&core.stats.refused);
        return (
            Ack::Refused {
                reason: Refusal::TooLarge,
            },
            None,
        );
    }
    let Ok(permit) = core.router.try_reserve(core, &inbound.conversation) else {
        Stats::bump(&core.stats.busy);
        return (Ack::Busy, None);
    };
    match core.store.journal_accept(inbound, now_ms()) {
        Ok(Accepted::New(seq)) => {
            Stats::bump(&core.stats.accepted);
            (Ack::Accepted, Some((permit, seq)))
        }
        Ok(Accepted::Duplicate(_)) => {
            Stats::bump(&core.stats.duplicates);
            (Ack::Duplicate, None)
        }
        Err(error) => {
            tracing::error!(conversation = %inbound.conversation, %error, "journal write failed");
            (Ack::Busy, None)
        }
    }
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}
