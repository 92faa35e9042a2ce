//! The intake loop: the core's end of the gateways' queue.
//!
//! It takes whatever has queued up (a batch), decides about each message —
//! allowed? an approval button its presser may not press? too large? room
//! in its conversation's queue? seen before? —,
//! journals the new ones in one transaction and hands them to their workers,
//! makes the whole batch durable with one flush, and only then acknowledges
//! each to its gateway.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use passepartout_gateway::{Ack, Inbound, InboundBody, IntakeEvent, IntakeQueue, Refusal};
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
    let poisoned = core.store.is_poisoned();
    let mut decisions = Vec::with_capacity(batch.len());
    let mut admitted = Vec::with_capacity(batch.len());
    let mut slots = Vec::with_capacity(batch.len());
    for event in batch.drain(..) {
        match event {
            // A store that cannot flush acknowledges nothing: the gateway keeps
            // the message and offers it again after a restart.
            IntakeEvent::Inbound { ack, .. } if poisoned => decisions.push(Decision { ack, answer: Ack::Busy }),
            IntakeEvent::Inbound { inbound, ack } => match admit(core, &inbound) {
                Ok(permit) => {
                    decisions.push(Decision { ack, answer: Ack::Busy });
                    admitted.push(inbound);
                    slots.push((decisions.len() - 1, permit));
                }
                Err(answer) => decisions.push(Decision { ack, answer }),
            },
            IntakeEvent::Reachable(key) if core.store.has_outbox(&key) => core.router.nudge(core, &key),
            IntakeEvent::Reachable(_) => {}
        }
    }
    if !admitted.is_empty() {
        journal(core, admitted, slots, &mut decisions).await;
    }
    for decision in decisions {
        let _ = decision.ack.send(decision.answer);
    }
}

/// Journals the admitted messages in one transaction and one flush, and
/// fills in their decisions. Anything not known to be on disk is answered
/// busy, so the gateway offers it again; the journal's dedupe makes a second
/// offer harmless.
/// `slots[i]` is the decision index and reserved queue place of `inbounds[i]`.
async fn journal(
    core: &Arc<Core>,
    inbounds: Vec<Inbound>,
    slots: Vec<(usize, mpsc::OwnedPermit<Job>)>,
    decisions: &mut [Decision],
) {
    let count = inbounds.len();
    let outcomes = match core.store.journal_accept_batch_async(inbounds, now_ms()).await {
        Ok(outcomes) => outcomes,
        Err(error) => {
            tracing::error!(%error, messages = count, "journal write failed; answering busy");
            return;
        }
    };
    // Turns start now, while the journal is flushed: their replies are only
    // delivered after their own commit is flushed, which covers the journal
    // too, and a failed flush stops all delivery. Only the ack must wait.
    let mut answers = Vec::with_capacity(outcomes.len());
    for ((index, permit), outcome) in slots.into_iter().zip(outcomes) {
        match outcome {
            Accepted::New(seq) => {
                permit.send(Job::Turn(seq));
                answers.push((index, Ack::Accepted));
            }
            Accepted::Duplicate(_) => answers.push((index, Ack::Duplicate)),
        }
    }
    if answers.iter().any(|(_, answer)| *answer == Ack::Accepted)
        && let Err(error) = core.store.durable().await
    {
        tracing::error!(%error, "journal flush failed; answering busy");
        return;
    }
    for (index, answer) in answers {
        match answer {
            Ack::Accepted => Stats::bump(&core.stats.accepted),
            _ => Stats::bump(&core.stats.duplicates),
        }
        decisions[index].answer = answer;
    }
}

/// The checks before journaling: allowed, not too large, room in the
/// conversation's queue (reserved now, so an accepted message always fits).
fn admit(core: &Arc<Core>, inbound: &Inbound) -> Result<mpsc::OwnedPermit<Job>, Ack> {
    if !core.allowed(inbound) {
        Stats::bump(&core.stats.refused);
        tracing::info!(conversation = %inbound.conversation, sender = %inbound.sender.id, "sender not allowed");
        return Err(Ack::Refused {
            reason: Refusal::NotAllowed,
        });
    }
    if !core.pipeline.approvals().may_press(inbound) {
        // Answered at once (the gateway shows it on the button), and nothing
        // of it is journaled: the approval keeps waiting.
        Stats::bump(&core.stats.refused);
        tracing::info!(conversation = %inbound.conversation, sender = %inbound.sender.id, "approval button pressed by someone who may not decide");
        return Err(Ack::Refused {
            reason: Refusal::NotApprover,
        });
    }
    if let InboundBody::Text { text } = &inbound.body
        && text.len() > core.settings.max_message_bytes
    {
        Stats::bump(&core.stats.refused);
        return Err(Ack::Refused {
            reason: Refusal::TooLarge,
        });
    }
    core.router.try_reserve(core, &inbound.conversation).map_err(|_| {
        Stats::bump(&core.stats.busy);
        Ack::Busy
    })
}

pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or_default()
}
