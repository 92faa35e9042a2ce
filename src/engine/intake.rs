//! The intake loop: the daemon's end of the gateways' queue.
//!
//! It takes whatever has queued up (a batch), decides about each message —
//! allowed (or to be sent a pairing code)? an owner's `/pair`? a person's
//! `/link` or `/unlink`? an approval
//! button its presser may not press? too large? room in its conversation's
//! queue? seen before? —,
//! journals the new ones in one transaction and hands them to their workers,
//! makes the whole batch durable with one flush, and only then acknowledges
//! each to its gateway.

use std::sync::Arc;

use passepartout_gateway::{Ack, Inbound, InboundBody, IntakeEvent, IntakeQueue, Refusal};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::engine::conversations::{Conversations, Counted, Job};
use crate::engine::pipeline::perceive::{Command, Perception, perceive};
use crate::foundation::clock::Clock;
use crate::foundation::lifecycle::Lifecycle;
use crate::people::access::Access;
use crate::people::linking::Linking;
use crate::people::pairing::{Offer, Pairing};
use crate::safety::approvals::Approvals;
use crate::store::{Accepted, Store};

/// Most events taken into one batch (one flush).
const MAX_BATCH: usize = 512;

/// What the intake works with.
pub struct IntakeContext {
    /// Where admitted messages go.
    pub conversations: Arc<Conversations>,
    /// Where they are journaled, made durable before they are acknowledged.
    pub store: Store,
    /// Who may press an approval's buttons.
    pub approvals: Arc<Approvals>,
    /// Who may talk to the assistant, per gateway (replaced on a reload).
    pub access: Arc<Access>,
    /// Codes for whoever is not allowed, and owners' `/pair`.
    pub pairing: Arc<Pairing>,
    /// `/link` and `/unlink`.
    pub linking: Arc<Linking>,
    /// Stamps journal entries.
    pub clock: Clock,
    /// Longer messages are refused (`pipeline.max_message_bytes`).
    pub max_message_bytes: usize,
    /// Tracks the sends of pairing notices, so shutdown waits for them.
    pub lifecycle: Lifecycle,
}

struct Decision {
    ack: oneshot::Sender<Ack>,
    answer: Ack,
}

/// Runs until `stop` is cancelled or every gateway dropped its intake.
pub async fn run(intake: Arc<IntakeContext>, mut queue: IntakeQueue, stop: CancellationToken) {
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
        process(&intake, &mut batch).await;
    }
    // Whatever is still queued is answered "closed" by dropping it: nothing of
    // it was journaled, so the gateways will offer it again after a restart.
    queue.close();
    tracing::debug!("intake stopped");
}

async fn process(intake: &Arc<IntakeContext>, batch: &mut Vec<IntakeEvent>) {
    let cx = &intake.conversations;
    let poisoned = intake.store.is_poisoned();
    let mut decisions = Vec::with_capacity(batch.len());
    let mut admitted = Vec::with_capacity(batch.len());
    let mut slots = Vec::with_capacity(batch.len());
    for event in batch.drain(..) {
        match event {
            // A store that cannot flush acknowledges nothing: the gateway keeps
            // the message and offers it again after a restart.
            IntakeEvent::Inbound { ack, .. } if poisoned => decisions.push(Decision { ack, answer: Ack::Busy }),
            IntakeEvent::Inbound { inbound, ack } => match admit(intake, &inbound) {
                Ok(permit) => {
                    decisions.push(Decision { ack, answer: Ack::Busy });
                    admitted.push(inbound);
                    slots.push((decisions.len() - 1, permit));
                }
                Err(answer) => decisions.push(Decision { ack, answer }),
            },
            // Delivered at once, not queued behind the conversation's running turn.
            IntakeEvent::Reachable(key) if intake.store.has_outbox(&key) => cx.deliver_waiting(&key),
            IntakeEvent::Reachable(_) => {}
        }
    }
    if !admitted.is_empty() {
        journal(intake, admitted, slots, &mut decisions).await;
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
    intake: &IntakeContext,
    inbounds: Vec<Inbound>,
    slots: Vec<(usize, mpsc::OwnedPermit<Job>)>,
    decisions: &mut [Decision],
) {
    let cx = &intake.conversations;
    let count = inbounds.len();
    // A `/stop` cannot wait in the queue behind the turn it stops.
    let stops: Vec<Option<_>> = inbounds
        .iter()
        .map(|inbound| {
            let stop = Perception::Command(Command::Stop);
            (perceive(inbound) == stop).then(|| inbound.conversation.clone())
        })
        .collect();
    let outcomes = match intake
        .store
        .journal_accept_batch_async(inbounds, intake.clock.now_ms())
        .await
    {
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
    for (((index, permit), outcome), stop) in slots.into_iter().zip(outcomes).zip(stops) {
        match outcome {
            Accepted::New(seq) => {
                if let Some(conversation) = stop {
                    cx.stop_turn(&conversation);
                }
                permit.send(Job::Turn(seq));
                answers.push((index, Ack::Accepted));
            }
            Accepted::Duplicate(_) => answers.push((index, Ack::Duplicate)),
        }
    }
    if answers.iter().any(|(_, answer)| *answer == Ack::Accepted)
        && let Err(error) = intake.store.durable().await
    {
        tracing::error!(%error, "journal flush failed; answering busy");
        return;
    }
    for (index, answer) in answers {
        match answer {
            Ack::Accepted => cx.count(Counted::Accepted),
            _ => cx.count(Counted::Duplicate),
        }
        decisions[index].answer = answer;
    }
}

/// Sends `outbound` through its gateway at once, outside any conversation's
/// outbox: what pairing and linking say is not part of a conversation. A failure is
/// only logged.
fn tell(intake: &IntakeContext, outbound: passepartout_gateway::Outbound) {
    let Some(gateway) = intake
        .conversations
        .deliver_half(&outbound.conversation.gateway)
        .cloned()
    else {
        return;
    };
    intake.lifecycle.spawn(async move {
        if let Err(error) = gateway.deliver(&outbound).await {
            tracing::warn!(conversation = %outbound.conversation, %error, "could not send a pairing or linking notice");
        }
    });
}

/// Delivers what pairing put in the outboxes of `conversations` (owners
/// told who asks, a person told they are let in) once it is on disk, so no
/// one is told of a code or a pairing a crash could take back.
fn deliver_when_durable(intake: &IntakeContext, conversations: Vec<passepartout_gateway::ConversationKey>) {
    if conversations.is_empty() {
        return;
    }
    let (cx2, store) = (intake.conversations.clone(), intake.store.clone());
    intake.lifecycle.spawn(async move {
        if let Err(error) = store.durable().await {
            tracing::error!(%error, "cannot make pairing or linking notices durable; they wait in the outbox");
            return;
        }
        for conversation in &conversations {
            cx2.deliver_waiting(conversation);
        }
    });
}

/// The checks before journaling: allowed, not too large, room in the
/// conversation's queue (reserved now, so an accepted message always fits).
fn admit(intake: &IntakeContext, inbound: &Inbound) -> Result<mpsc::OwnedPermit<Job>, Ack> {
    let cx = &intake.conversations;
    // A link code said where others read it dies first, whoever said it.
    if let Some(told) = intake.linking.void_said_in_the_open(inbound) {
        tell(intake, told);
    }
    if inbound.overheard && cx.bridges().of(&inbound.conversation).is_none() {
        // Passed on only so that a link code said here dies: never answered.
        return Err(Ack::Accepted);
    }
    if !intake.access.allows(inbound) {
        cx.count(Counted::Refused);
        tracing::info!(conversation = %inbound.conversation, sender = %inbound.sender.id, "sender not allowed");
        let reason = match intake.pairing.offer(inbound) {
            None | Some(Offer::Full) => Refusal::NotAllowed,
            Some(Offer::Sent) => Refusal::Pairing,
            Some(Offer::Send { code, told }) => {
                tell(intake, *code);
                deliver_when_durable(intake, told);
                Refusal::Pairing
            }
        };
        return Err(Ack::Refused { reason });
    }
    if let Some(command) = crate::people::pairing::command::parse(inbound) {
        // Answered here, never journaled: the code stays out of the history.
        let (answer, told) = intake.pairing.answer_command(inbound, &command);
        tell(intake, answer);
        deliver_when_durable(intake, told.into_iter().collect());
        return Err(Ack::Accepted);
    }
    if let Some(command) = crate::people::linking::command::parse(inbound) {
        // Answered here, never journaled, as `/pair` is.
        let answer = intake.linking.answer_command(inbound, &command);
        if let Some(now) = answer.now {
            tell(intake, now);
        }
        deliver_when_durable(intake, answer.told);
        return Err(Ack::Accepted);
    }
    if !intake.approvals.may_press(inbound) {
        // Answered at once (the gateway shows it on the button), and nothing
        // of it is journaled: the approval keeps waiting.
        cx.count(Counted::Refused);
        tracing::info!(conversation = %inbound.conversation, sender = %inbound.sender.id, "approval button pressed by someone who may not decide");
        return Err(Ack::Refused {
            reason: Refusal::NotApprover,
        });
    }
    let words = match &inbound.body {
        InboundBody::Text { text } => Some(text),
        InboundBody::Media { caption, .. } => caption.as_ref(),
        _ => None,
    };
    if words.is_some_and(|words| words.len() > intake.max_message_bytes) {
        cx.count(Counted::Refused);
        return Err(Ack::Refused {
            reason: Refusal::TooLarge,
        });
    }
    cx.try_reserve(&inbound.conversation).map_err(|_| {
        cx.count(Counted::Busy);
        Ack::Busy
    })
}
