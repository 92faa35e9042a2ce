//! How every turn ends. A message's turn, an approval's outcome, an
//! errand's turn, a hand-off carried over and a message only relayed all
//! end through [`Ending`], which takes what the turn said and its extras
//! (relays, hand-off, follows, loop record, draft, stop) and does the whole
//! tail in one order:
//!
//! 1. the commit: the turn's writes, or the apology for a turn that failed,
//!    with the draft handed over and the extras; then the bridge's copies
//!    of the person's message and of the answers;
//! 2. durable, before anything is delivered: a reply a person has seen is
//!    never redone;
//! 3. the follow-ups (approvals armed, outcomes owed, the hand-off's chat
//!    woken), which stand whether or not the turn committed;
//! 4. the worker's copy of the recent history, kept or invalidated;
//! 5. when the store refused a message's turn: the apology in its place, so
//!    the message is not answered again at every start;
//! 6. delivery elsewhere (a bridge's other chats, where a reply follows a
//!    person), forgetting the draft and the stop mark, then delivery here.

use std::sync::Arc;

use passepartout_gateway::{ConversationKey, MessageId, OutboundBody, ReplyKind};
use tokio::time::Instant;

use super::drafting::{self, ShownText};
use super::failure::{TurnFailed, error_id};
use super::history::{RecentHistory, Remembered};
use super::relay::Relaying;
use super::stop::Running;
use super::turn_commit::{Followups, commit_of};
use super::{Conversations, delivery};
use crate::engine::pipeline::TurnOutput;
use crate::safety::approvals::Approval;
use crate::store::{
    ApprovalWrite, HandoffWrite, JournalEntry, LoopRecordWrite, OutboxEntry, PendingOutbound, Relayed, StoreError,
    TurnCommit,
};

/// What the turn answers.
pub(super) enum Answering<'e> {
    /// Nobody asked: an errand's turn, a hand-off carried over.
    Nothing,
    /// A message, pending in the journal until the turn commits.
    Message(&'e JournalEntry),
    /// An approval whose outcome the conversation is owed: a failure
    /// settles it still, so it is told once.
    Approval(&'e Approval),
}

/// What the turn said.
pub(super) enum Said {
    /// On the heap: a turn's output is large beside the other two.
    Output(Box<TurnOutput>),
    Failed(TurnFailed),
    /// Nothing of the assistant's: a message only relayed.
    Nothing,
}

/// What comes with a turn beside what it said.
#[derive(Default)]
pub(super) struct Extras {
    /// In a bridged group: the copies for the other chats.
    pub relaying: Option<Relaying>,
    /// The hand-off the turn asks for, or carries over.
    pub handoff: Option<HandoffWrite>,
    /// In a linked person's private chat, what it says follows them.
    pub follows: bool,
    /// A loop's record, written with the turn.
    pub loop_record: Option<LoopRecordWrite>,
    /// The chat started afresh: the copy of its history is read again.
    pub fresh_start: bool,
    /// What the turn's draft showed, when it had one.
    pub drafted: Option<ShownText>,
    /// The turn was stopped (its draft is marked so; its stop is forgotten).
    pub stopped: bool,
    /// When the turn started: timed once it is durable.
    pub started: Option<Instant>,
    /// The turn's registration, so a `/stop` finds it: ended with its stop
    /// mark, before its reply is delivered, so a `/stop` during delivery
    /// leaves no mark behind.
    pub running: Option<Running>,
}

/// A turn's end: what it answers, what it said, and its extras.
pub(super) struct Ending<'e> {
    pub answering: Answering<'e>,
    pub said: Said,
    pub extras: Extras,
}

/// The commit built, with what goes with it.
struct Built {
    commit: TurnCommit,
    remembered: Option<Remembered>,
    followups: Followups,
    /// The messages the draft occupies.
    drafts: Vec<MessageId>,
    /// The person's copies alone, for a turn that could only apologise.
    person: Vec<Relayed>,
}

impl Ending<'_> {
    /// Does the whole tail (see the module doc). `Err`: nothing was
    /// committed, nor delivered; a message's turn has logged why.
    pub(super) async fn finish(
        self,
        cx: &Arc<Conversations>,
        key: &ConversationKey,
        recent: &mut RecentHistory,
    ) -> Result<(), StoreError> {
        let Ending {
            answering,
            said,
            mut extras,
        } = self;
        let answered = !matches!(said, Said::Nothing);
        let mut built = build(cx, key, recent, &answering, said, &mut extras);
        if let Some(relaying) = extras.relaying.take() {
            built.commit.relayed = relaying.with_answers(cx, key, &built.commit.replies);
        }
        let committed = cx.store.commit_turn_durably(key, built.commit).await;
        // Timed here, before anything is delivered, so whoever reads the
        // reply finds the turn already counted.
        if let Some(started) = extras.started {
            cx.time_turn(started.elapsed());
        }
        built.followups.run(cx, key, committed.is_ok());
        match (&committed, built.remembered) {
            // The copy was loaded without the new mark.
            (Ok(_), Some(_)) if extras.fresh_start => recent.invalidate(),
            (Ok(_), Some(remembered)) => recent.committed(remembered),
            (Ok(_), None) => {}
            (Err(_), _) => recent.invalidate(),
        }
        let committed = match (committed, &answering) {
            (Ok(committed), _) => committed,
            (Err(error), Answering::Message(entry)) if answered => {
                let handover = Handover::of(&extras, built.drafts);
                apologise(cx, key, entry, error, handover, built.person).await?
            }
            (Err(error), _) => return Err(error),
        };
        delivery::deliver_elsewhere(cx, key, &committed);
        if let Answering::Message(entry) = answering {
            forget(cx, key, entry.seq, &extras);
        }
        drop(extras.running.take());
        deliver_here(cx, key).await;
        Ok(())
    }
}

/// The commit for what the turn said, with its extras and its draft
/// handed over.
fn build(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    recent: &RecentHistory,
    answering: &Answering<'_>,
    said: Said,
    extras: &mut Extras,
) -> Built {
    let (mut commit, remembered, mut followups) = match said {
        Said::Output(output) => {
            let (commit, remembered, followups) = commit_of(cx, recent, answering.seq(), answering.message(), *output);
            (commit, Some(remembered), followups)
        }
        Said::Failed(failure) => (answering.failed(key, &failure), None, Followups::default()),
        Said::Nothing => (
            TurnCommit {
                journal_seq: answering.seq(),
                ..TurnCommit::default()
            },
            None,
            Followups::default(),
        ),
    };
    if let Some(HandoffWrite::Ask { to, .. }) = &extras.handoff {
        followups.handed_to = Some(to.clone());
    }
    commit.handoff = extras.handoff.take();
    commit.loop_record = extras.loop_record.take();
    if extras.follows {
        commit.follows = super::follow::following(cx, key);
    }
    // Read back rather than taken from the drafter: a stopped turn's
    // drafter never finished, but what it showed is recorded.
    let drafts = match (&extras.drafted, answering.seq()) {
        (Some(_), Some(seq)) => drafts_of(cx, key, seq),
        _ => Vec::new(),
    };
    let handover = Handover::of(extras, drafts.clone());
    if let Answering::Message(entry) = answering {
        handover.hand_over(&mut commit.replies, &entry.inbound.message_id);
    }
    let person = extras
        .relaying
        .as_ref()
        .map(|relaying| relaying.person().to_vec())
        .unwrap_or_default();
    Built {
        commit,
        remembered,
        followups,
        drafts,
        person,
    }
}

/// How a turn's draft goes over to its replies.
struct Handover {
    /// What the stopped turn's draft showed; none when it was not stopped.
    partial: Option<String>,
    drafts: Vec<MessageId>,
}

impl Handover {
    fn of(extras: &Extras, drafts: Vec<MessageId>) -> Self {
        let shown = || extras.drafted.as_ref().map(ShownText::get).unwrap_or_default();
        Self {
            partial: extras.stopped.then(shown),
            drafts,
        }
    }

    fn hand_over(self, replies: &mut Vec<PendingOutbound>, answering: &MessageId) {
        match self.partial {
            Some(partial) => drafting::hand_over_stopped(replies, self.drafts, partial, answering),
            None => drafting::hand_over(replies, self.drafts),
        }
    }
}

impl Answering<'_> {
    /// The journal entry the turn removes, if it answers a message.
    fn seq(&self) -> Option<u64> {
        match self {
            Answering::Message(entry) => Some(entry.seq),
            _ => None,
        }
    }

    /// The message the turn's replies answer.
    fn message(&self) -> Option<&MessageId> {
        match self {
            Answering::Nothing => None,
            Answering::Message(entry) => Some(&entry.inbound.message_id),
            Answering::Approval(approval) => Some(&approval.message_id),
        }
    }

    /// What a turn that failed commits: the apology, and for an approval
    /// its settling, so an approved action is never offered a second run.
    /// A turn nobody asked for tells nobody: whoever ran it is told.
    fn failed(&self, key: &ConversationKey, failure: &TurnFailed) -> TurnCommit {
        match self {
            Answering::Nothing => TurnCommit::default(),
            Answering::Message(entry) => {
                let text = match failure {
                    TurnFailed::History(error) => {
                        let id = error_id();
                        tracing::error!(conversation = %key, error_id = %id, %error, "cannot read history");
                        format!("I could not read this conversation's history (error id {id}).")
                    }
                    other => other.to_string(),
                };
                apology(entry, &text)
            }
            Answering::Approval(approval) => {
                let token = approval.token.as_str();
                let failure = match failure {
                    TurnFailed::History(error) => format!("I could not read this conversation's history: {error}"),
                    other => other.to_string(),
                };
                let id = error_id();
                tracing::error!(conversation = %key, token, error_id = %id, %failure, "settling an approval failed");
                let text = format!("Something went wrong while finishing approval {token} (error id {id}): {failure}");
                told_failure(approval, text)
            }
        }
    }
}

/// Commits, in place of the turn the store refused (`error`), the apology
/// for `entry` with the draft handed over and the person's copies for the
/// bridge's other chats. `Err` when the store cannot flush or refuses that
/// too: the message stays pending.
async fn apologise(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    entry: &JournalEntry,
    error: StoreError,
    handover: Handover,
    person: Vec<Relayed>,
) -> Result<Vec<OutboxEntry>, StoreError> {
    let seq = entry.seq;
    if cx.store.is_poisoned() {
        tracing::error!(conversation = %key, seq, %error, "turn not committed: the store cannot flush");
        return Err(error);
    }
    let id = error_id();
    tracing::error!(conversation = %key, seq, error_id = %id, %error, "turn commit failed");
    let mut fallback = apology(entry, &format!("the store refused the turn (error id {id})"));
    handover.hand_over(&mut fallback.replies, &entry.inbound.message_id);
    // What the person said still reaches the bridge's other chats.
    fallback.relayed = person;
    cx.store.commit_turn_durably(key, fallback).await.inspect_err(|error| {
        tracing::error!(conversation = %key, seq, %error, "apology commit failed; the message stays pending");
    })
}

/// Forgets the committed turn's draft and stop mark; what cannot be
/// forgotten now is swept at the next start.
fn forget(cx: &Arc<Conversations>, key: &ConversationKey, seq: u64, extras: &Extras) {
    if extras.drafted.is_some()
        && let Err(error) = cx.store.forget_draft(seq)
    {
        tracing::debug!(conversation = %key, seq, %error, "cannot forget a handed-over draft");
    }
    if extras.stopped
        && let Err(error) = cx.store.forget_stop(seq)
    {
        tracing::debug!(conversation = %key, seq, %error, "cannot forget a committed turn's stop");
    }
}

/// Delivers `key`'s outbox. A bridged chat's outbox also takes the other
/// chats' copies, whose delivery may wait minutes on the platform's pace:
/// the worker does not wait with it.
async fn deliver_here(cx: &Arc<Conversations>, key: &ConversationKey) {
    if cx.bridges().of(key).is_some() {
        cx.deliver_waiting(key);
    } else {
        delivery::deliver(cx, key).await;
    }
}

/// The messages the draft of journal entry `seq` occupies.
fn drafts_of(cx: &Arc<Conversations>, key: &ConversationKey, seq: u64) -> Vec<MessageId> {
    cx.store.draft_messages(seq).unwrap_or_else(|error| {
        tracing::error!(conversation = %key, seq, %error, "cannot read where a draft is shown");
        Vec::new()
    })
}

/// The apology for `entry`, saying `text`.
fn apology(entry: &JournalEntry, text: &str) -> TurnCommit {
    TurnCommit {
        journal_seq: Some(entry.seq),
        replies: vec![PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: Some(entry.inbound.message_id.clone()),
            body: OutboundBody::Text {
                text: text.to_owned(),
                kind: ReplyKind::Failure,
            },
        }],
        ..TurnCommit::default()
    }
}

/// Settles `approval` with only `text` for the person.
fn told_failure(approval: &Approval, text: String) -> TurnCommit {
    TurnCommit {
        replies: vec![PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: Some(approval.message_id.clone()),
            body: OutboundBody::Text {
                text,
                kind: ReplyKind::Failure,
            },
        }],
        approvals: vec![ApprovalWrite::Settle {
            token: approval.token.clone(),
            run: None,
        }],
        ..TurnCommit::default()
    }
}

#[cfg(test)]
#[path = "ending_tests.rs"]
mod tests;
