//! Hand-offs between a linked person's private conversations: `/handoff
//! signal` carries this conversation's summary and recent turns over to
//! their private chat on Signal, so that what was started at the desk goes
//! on from the phone; `/continue` carries the latest of their other chats
//! over to this one.
//!
//! A conversation's worker is the only writer of its history, so
//! `/handoff` only asks: its commit keeps a `handoffs` record for the
//! receiving conversation and wakes its worker, which carries the turns
//! over after its next job, removing the record in the same commit (a
//! crash in between leaves the record, and the start wakes it again).
//! `/continue` is already where the turns go, and carries them over in its
//! own turn.
//!
//! What goes over is one history record: a note naming where it comes
//! from, with that conversation's summary, then its recent turns as they
//! were. Nothing moves unless both chats are the person's linked private
//! ones when it happens: an unlink in between carries nothing.

use std::sync::Arc;

use passepartout_gateway::{ConversationKey, GatewayId, ReplyKind, UserId};

use super::Conversations;
use super::ending::{Answering, Ending, Extras, Said};
use super::history::RecentHistory;
use crate::engine::pipeline::commands::ChannelAsk;
use crate::engine::pipeline::{TurnOutput, TurnRecord};
use crate::model::llm::{ChatMessage, Note};
use crate::people::linking::words::not_linked;
use crate::store::{Handoff, HandoffWrite, Identity};

/// The answer to `/handoff` or `/continue`.
#[derive(Debug, Default)]
pub(super) struct Answered {
    pub text: String,
    /// What the turn carries over into its own conversation (`/continue`).
    pub record: Option<TurnRecord>,
    /// The hand-off the turn asks for; its receiving worker is woken once
    /// the turn is committed.
    pub asked: Option<HandoffWrite>,
}

impl Answered {
    fn told(text: String) -> Self {
        Self {
            text,
            ..Self::default()
        }
    }
}

/// Answers `ask` (a hand-off, `/continue` or `/here`) from `by` in `key`.
pub(super) fn answer(cx: &Conversations, key: &ConversationKey, by: &UserId, ask: &ChannelAsk) -> Answered {
    let Some(person) = cx.linked_here(&key.gateway, by, key) else {
        return Answered::told(not_linked());
    };
    let others: Vec<&Identity> = person
        .identities
        .iter()
        .filter(|identity| !identity.is(&key.gateway, by))
        .collect();
    match ask {
        ChannelAsk::HandOff(to) => hand_off(cx, key, to.as_deref(), &others),
        ChannelAsk::Continue => continue_here(cx, by, &others),
        ChannelAsk::Here => Answered::told(super::follow::here(cx, key, &person)),
    }
}

fn hand_off(cx: &Conversations, key: &ConversationKey, to: Option<&str>, others: &[&Identity]) -> Answered {
    let words = || {
        others
            .iter()
            .map(|other| format!("/handoff {}", cx.channels().word(&other.gateway)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let target = match to {
        None if others.len() == 1 => others[0],
        None => return Answered::told(format!("Hand over to which channel? {}.", words())),
        Some(to) => {
            let named = |gateway: &GatewayId| gateway.as_str() == to || cx.channels().word(gateway) == to;
            match others.iter().find(|other| named(&other.gateway)) {
                Some(other) => other,
                None if named(&key.gateway) => {
                    return Answered::told(format!(
                        "This chat is on {} already. Yours elsewhere: {}.",
                        cx.channels().name(&key.gateway),
                        words()
                    ));
                }
                None => {
                    return Answered::told(format!(
                        "You have no linked chat on {}. Yours: {}.",
                        passepartout_gateway::markup::escape(to),
                        words()
                    ));
                }
            }
        }
    };
    let asked = HandoffWrite::Ask {
        to: target.conversation.clone(),
        handoff: Handoff {
            from: key.clone(),
            by: target.user.clone(),
            at_ms: cx.clock.now_ms(),
        },
    };
    Answered {
        text: format!(
            "Handing this conversation over to {}: its summary and recent turns go there. Go on from there.",
            cx.channels().name(&target.gateway)
        ),
        record: None,
        asked: Some(asked),
    }
}

fn continue_here(cx: &Conversations, by: &UserId, others: &[&Identity]) -> Answered {
    // The chat last written to: history ids grow across conversations.
    let latest = others
        .iter()
        .filter_map(|other| {
            let newest = cx
                .store
                .recent_kept_after::<serde::de::IgnoredAny>(&other.conversation, 1, None);
            match newest {
                Ok(newest) => newest.first().map(|(id, _)| (*id, *other)),
                Err(error) => {
                    tracing::warn!(conversation = %other.conversation, %error, "cannot read a linked chat's history");
                    None
                }
            }
        })
        .max_by_key(|(id, _)| *id)
        .map(|(_, other)| other);
    let Some(from) = latest else {
        return Answered::told("Nothing to carry over: we have not talked on your other channels yet.".to_owned());
    };
    let (text, record) = carried(cx, &from.conversation, by);
    Answered {
        text,
        record,
        asked: None,
    }
}

/// What goes over from `from` into a conversation where the person is
/// `by`: the words that say so, and the record, when there is
/// anything to carry.
fn carried(cx: &Conversations, from: &ConversationKey, by: &UserId) -> (String, Option<TurnRecord>) {
    let there = cx.channels().name(&from.gateway);
    let pipeline = cx.pipeline();
    let mut source = RecentHistory::new(cx.settings.history_turns, pipeline.compacting());
    let earlier = match source.load(&cx.store, from) {
        Ok(earlier) => earlier,
        Err(error) => {
            tracing::error!(conversation = %from, %error, "cannot read the conversation to carry over");
            return (format!("I could not read our conversation on {there}: {error}"), None);
        }
    };
    let (summary, turns) = pipeline.carried(earlier);
    if summary.is_none() && turns.is_empty() {
        return (
            format!("Nothing to carry over from {there}: we have not talked there since it last started afresh."),
            None,
        );
    }
    let mut note = format!("[Carried over from our conversation on {there}.]");
    if let Some(summary) = summary {
        note.push_str(&format!(" What we said there earlier, in short: {summary}"));
    }
    let mut messages = vec![ChatMessage::noted(
        note,
        Note::event(format!("Carried over from {there}")),
    )];
    messages.extend(turns.iter().flat_map(|turn| turn.messages.iter().cloned()));
    let what = match (summary.is_some(), turns.len()) {
        (true, 0) => "its summary".to_owned(),
        (true, 1) => "its summary and the last turn".to_owned(),
        (true, n) => format!("its summary and the last {n} turns"),
        (false, 1) => "the last turn".to_owned(),
        (false, n) => format!("the last {n} turns"),
    };
    let text = format!("Carried over from {there}: {what}. Go on here.");
    let record = TurnRecord {
        messages,
        at_ms: None,
        by: Some(by.clone()),
    };
    (text, Some(record))
}

/// Carries over the hand-off waiting for `key`, if there is one: the
/// worker calls it after each job.
pub(super) async fn carry_over(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory) {
    let handoff = match cx.store.handoff_to(key) {
        Ok(Some(handoff)) => handoff,
        Ok(None) => return,
        Err(error) => {
            // Waits still: tried again after the next job, or at the start.
            tracing::error!(conversation = %key, %error, "cannot read the hand-off waiting here");
            return;
        }
    };
    if cx.store.is_poisoned() || cx.lifecycle.is_draining() {
        return;
    }
    let linked = cx.linked_here(&key.gateway, &handoff.by, key).is_some_and(|person| {
        person
            .identities
            .iter()
            .any(|identity| identity.conversation == handoff.from)
    });
    let output = if linked {
        let (text, record) = carried(cx, &handoff.from, &handoff.by);
        TurnOutput {
            replies: vec![(ReplyKind::Notice, text)],
            record,
            ..TurnOutput::default()
        }
    } else {
        tracing::info!(conversation = %key, "a hand-off from a chat no longer linked here is dropped");
        TurnOutput::default()
    };
    let ending = Ending {
        answering: Answering::Nothing,
        said: Said::Output(Box::new(output)),
        extras: Extras {
            handoff: Some(HandoffWrite::Done {
                to: key.clone(),
                at_ms: handoff.at_ms,
            }),
            ..Extras::default()
        },
    };
    if let Err(error) = ending.finish(cx, key, recent).await {
        tracing::error!(conversation = %key, %error, "cannot commit a hand-off; it waits for the next start");
    }
}
