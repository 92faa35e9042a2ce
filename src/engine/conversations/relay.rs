//! Relaying in a bridged group's worker. Each message of a bridged group is
//! journaled like any other and runs in its chat's worker, in order: one
//! not for the assistant commits only its copies for the bridge's other
//! chats (with the journal entry's removal, so a crash redoes it or finds
//! it done, never both); one for the assistant runs its turn, and the
//! turn's commit carries the person's copies and the assistant's answers.
//! The copies are delivered from the other chats' outboxes, in order, where
//! replies are mapped to each chat's own messages (see `delivery`).

use passepartout_gateway::{ConversationKey, Inbound, MessageId, Outbound, OutboundBody};

use super::Conversations;
use crate::engine::bridges::relay::{self, Heard};
use crate::store::{OutboxEntry, PendingOutbound, Posted, Relayed};

/// What the worker does with a message of a bridged group.
pub(super) struct Relaying {
    /// Only relayed: no turn for the assistant.
    pub only: bool,
    /// The person's message for the other chats (none when it is a
    /// command or an approval answer).
    person: Vec<Relayed>,
    question: Posted,
}

impl Relaying {
    /// What the turn commits for the other chats, given its `replies`.
    pub fn with_answers(self, cx: &Conversations, key: &ConversationKey, replies: &[PendingOutbound]) -> Vec<Relayed> {
        let mut relayed = self.person;
        if let Some(bridge) = cx.bridges().of(key) {
            relayed.extend(relay::answers(bridge, key, &self.question, replies));
        }
        relayed
    }

    /// The person's copies alone, for a turn that could only apologise.
    pub fn person(&self) -> &[Relayed] {
        &self.person
    }
}

/// How `inbound`, in `key`, is relayed; none when `key` is in no bridge.
pub(super) async fn plan(cx: &Conversations, key: &ConversationKey, inbound: &Inbound) -> Option<Relaying> {
    let bridge = cx.bridges().of(key)?;
    let replies_to_a_copy = inbound.reply_to.as_ref().is_some_and(|reply_to| {
        let replied = Posted {
            conversation: key.clone(),
            message: reply_to.clone(),
        };
        cx.store
            .origin_of(&replied)
            .unwrap_or_else(|error| {
                tracing::warn!(conversation = %key, %error, "cannot read whether a message replies to a copy");
                None
            })
            .is_some()
    });
    let (only, relay_person) = match relay::heard(inbound, replies_to_a_copy) {
        Heard::RelayOnly => (true, true),
        Heard::Turn { relay_person } => (false, relay_person),
        Heard::Nothing => (true, false),
    };
    let person = if relay_person {
        cx.bridges().copies(bridge, key, inbound).await
    } else {
        Vec::new()
    };
    let question = Posted {
        conversation: key.clone(),
        message: inbound.message_id.clone(),
    };
    Some(Relaying { only, person, question })
}

/// How a relayed entry goes out.
pub(super) enum Sending {
    /// As it is stored.
    AsIs,
    /// With the messages it refers to mapped to this chat's.
    Mapped(Box<Outbound>),
    /// Not at all: the copy it edits or deletes never reached this chat.
    Nothing,
}

/// `entry` as it is sent to `key`: a relayed message replies to the
/// counterpart here of the message it replies to, when there is one (else
/// it goes unquoted); an edit or a deletion acts on the copy here.
pub(super) fn as_sent(cx: &Conversations, key: &ConversationKey, entry: &OutboxEntry) -> Sending {
    let Some(relay) = &entry.relay else {
        return Sending::AsIs;
    };
    let here = |message: &Posted| {
        cx.store.counterparts(message, key).unwrap_or_else(|error| {
            tracing::warn!(conversation = %key, %error, "cannot read which message a relay refers to here");
            Vec::new()
        })
    };
    let mut outbound = entry.outbound.clone();
    if let Some(changed) = &relay.changes {
        let copies = here(changed);
        let Some(first) = copies.first().cloned() else {
            return Sending::Nothing;
        };
        match &mut outbound.body {
            // The text is in the first copy (a caption under the first file).
            OutboundBody::Edit { message, .. } => *message = first,
            // Every copy goes.
            _ => outbound.drafts = copies,
        }
        return Sending::Mapped(Box::new(outbound));
    }
    match &relay.quote {
        Some(quote) => {
            outbound.in_reply_to = here(quote).into_iter().next();
            Sending::Mapped(Box::new(outbound))
        }
        None => Sending::AsIs,
    }
}

/// `entry`, a copy of someone's message, reached `key` as `ids`: replies to
/// them are mapped from now on.
pub(super) fn sent(cx: &Conversations, key: &ConversationKey, entry: &OutboxEntry, ids: &[MessageId]) {
    let Some(origin) = entry.relay.as_ref().and_then(|relay| relay.origin.as_ref()) else {
        return;
    };
    if let Err(error) = cx.store.index_copy(origin, key, ids, cx.clock.now_ms()) {
        // Replies to this copy go unquoted on the other sides.
        tracing::warn!(conversation = %key, %error, "cannot remember where a relayed message went");
    }
}
