//! The outbox: replies waiting for a gateway to confirm delivery, kept per
//! conversation in commit order so a restart delivers what was not confirmed.
//!
//! A reply that goes out in several parts records each part as it is sent
//! ([`Store::outbox_part_sent`]), so a retry, or a restart, resumes at the
//! first part not delivered instead of showing the person the earlier ones
//! twice.

use passepartout_gateway::{ConversationKey, GatewayId, MessageId, Outbound, OutboundBody};
use serde::{Deserialize, Serialize};
use sled::transaction::TransactionalTree;

use super::approvals::Abort;
use super::error::StoreError;
use super::relays::Posted;
use super::{Store, keys};

/// A reply waiting for delivery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutboxEntry {
    pub outbound: Outbound,
    /// The journal entry this answers (marked done when delivered), if any.
    pub journal_seq: Option<u64>,
    /// Delivery attempts that failed so far.
    pub attempts: u32,
    /// How many of the reply's parts went out already: the next attempt
    /// starts at this part.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub parts_sent: u32,
    /// The platform ids of the parts sent so far, for matching later
    /// replies and reactions to them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub part_ids: Vec<MessageId>,
    /// The linked person it follows (a reminder, a loop's output): when
    /// its gateway cannot deliver it, it goes to their next private chat.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follows: Option<u64>,
    /// The gateways that could not deliver it, in order: it went on from
    /// each, and is not tried there again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tried: Vec<GatewayId>,
    /// A message of a bridged group relayed here: what it is a copy of, and
    /// what it replies to, mapped to this chat when it is sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relay: Option<Relay>,
    #[serde(skip)]
    key: Vec<u8>,
}

impl OutboxEntry {
    pub(super) fn new(key: Vec<u8>, outbound: Outbound, journal_seq: Option<u64>) -> Self {
        Self {
            outbound,
            journal_seq,
            attempts: 0,
            parts_sent: 0,
            part_ids: Vec::new(),
            follows: None,
            tried: Vec::new(),
            relay: None,
            key,
        }
    }

    pub(super) fn key(&self) -> &[u8] {
        &self.key
    }
}

/// What a relayed message refers to, in the chats of its bridge.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relay {
    /// The person's message this is a copy of, indexed once it is sent;
    /// none for the assistant's own answer, which is nobody's copy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<Posted>,
    /// The message it replies to, wherever it was posted: quoted as its
    /// counterpart in this chat, if it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quote: Option<Posted>,
    /// The person's message whose copy here it edits or deletes; nothing is
    /// sent when it has none here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub changes: Option<Posted>,
}

/// An outbox entry's key and stored bytes, for a transaction to write.
pub(super) type KeyValue = (Vec<u8>, Vec<u8>);

/// Writes `notices` ([`Store::prepare_notices`]) into the outbox inside the
/// transaction that makes what they tell true.
pub(super) fn put_notices(outbox: &TransactionalTree, notices: &[KeyValue]) -> Result<(), Abort> {
    for (key, value) in notices {
        outbox.insert(key.as_slice(), value.as_slice())?;
    }
    Ok(())
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

fn encode(entry: &OutboxEntry) -> Result<Vec<u8>, StoreError> {
    serde_json::to_vec(entry).map_err(|e| StoreError::Corrupt {
        tree: "outbox",
        reason: e.to_string(),
    })
}

fn decode(key: &[u8], value: &[u8]) -> Result<OutboxEntry, StoreError> {
    let mut entry: OutboxEntry = serde_json::from_slice(value).map_err(|e| StoreError::Corrupt {
        tree: "outbox",
        reason: e.to_string(),
    })?;
    entry.key = key.to_vec();
    Ok(entry)
}

impl Store {
    /// Waiting replies of `conversation`, oldest first.
    pub fn outbox_for(&self, conversation: &ConversationKey) -> Result<Vec<OutboxEntry>, StoreError> {
        let prefix = keys::conversation_prefix(conversation);
        self.inner
            .outbox
            .scan_prefix(prefix)
            .map(|item| {
                let (key, value) = item?;
                decode(&key, &value)
            })
            .collect()
    }

    /// Whether `conversation` has replies waiting.
    pub fn has_outbox(&self, conversation: &ConversationKey) -> bool {
        self.inner
            .outbox
            .scan_prefix(keys::conversation_prefix(conversation))
            .next()
            .is_some()
    }

    /// Conversations that have replies waiting.
    pub fn outbox_conversations(&self) -> Result<Vec<ConversationKey>, StoreError> {
        let mut out: Vec<ConversationKey> = Vec::new();
        for key in self.inner.outbox.iter().keys() {
            let key = key?;
            let conversation = keys::conversation_of(&key).ok_or_else(|| StoreError::Corrupt {
                tree: "outbox",
                reason: "unreadable key".into(),
            })?;
            if out.last() != Some(&conversation) {
                out.push(conversation);
            }
        }
        Ok(out)
    }

    /// How many replies wait for delivery.
    pub fn outbox_len(&self) -> usize {
        self.inner.outbox.len()
    }

    /// A gateway confirmed `entry`: forget it.
    pub fn outbox_delivered(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        self.wrote(self.inner.outbox.remove(entry.key()).map_err(StoreError::from))?;
        Ok(())
    }

    /// Records one more failed attempt at `entry`; returns the new count.
    pub fn outbox_failed(&self, entry: &OutboxEntry) -> Result<u32, StoreError> {
        let mut updated = entry.clone();
        updated.attempts += 1;
        // Only the conversation's worker touches its outbox entries, so a plain
        // write cannot race with the delivery that would remove it.
        self.rewrite(&updated)?;
        Ok(updated.attempts)
    }

    /// Records that part `index` of `entry` went out (as `id`, if the
    /// platform gave one) and returns the entry as it is stored now. Call
    /// [`Store::durable`] before sending the next part, so a crash cannot
    /// forget it.
    pub fn outbox_part_sent(
        &self,
        entry: &OutboxEntry,
        index: u32,
        id: Option<&MessageId>,
    ) -> Result<OutboxEntry, StoreError> {
        let mut updated = entry.clone();
        if index < updated.parts_sent {
            // Told twice of one part (never by a well-behaved gateway): no change.
            return Ok(updated);
        }
        updated.parts_sent = index + 1;
        updated.part_ids.extend(id.cloned());
        self.rewrite(&updated)?;
        Ok(updated)
    }

    /// Outbox entries, as keys and values, for messages of the daemon's own
    /// that belong to no turn (a pairing request told to an owner): the
    /// caller writes them in the transaction that makes them true, so each
    /// is sent exactly when what it tells happened.
    pub(super) fn prepare_notices(
        &self,
        notices: &[(ConversationKey, OutboundBody)],
    ) -> Result<Vec<KeyValue>, StoreError> {
        if notices.is_empty() {
            return Ok(Vec::new());
        }
        let base = self.next_id()?;
        notices
            .iter()
            .enumerate()
            .map(|(index, (conversation, body))| {
                let outbound = Outbound {
                    id: format!("{base}-{index}"),
                    conversation: conversation.clone(),
                    in_reply_to: None,
                    body: body.clone(),
                    drafts: Vec::new(),
                    turn_end: None,
                };
                let key = keys::sequenced(conversation, &[base, index as u64]);
                let value = encode(&OutboxEntry::new(key.clone(), outbound, None))?;
                Ok((key, value))
            })
            .collect()
    }

    /// Moves `entry`, which its own gateway could not deliver, to the
    /// outbox of `to` (another private chat of the person it follows), in
    /// one transaction: it is in exactly one outbox whenever the daemon
    /// stops. The first move says where it was meant to go, once. Returns
    /// the entry as it waits in `to`; call [`Store::durable`] before
    /// delivering it, so that a restart cannot find it in both places.
    pub fn move_outbox_entry(
        &self,
        entry: &OutboxEntry,
        to: &ConversationKey,
        meant_for: &str,
    ) -> Result<OutboxEntry, StoreError> {
        let from = &entry.outbound.conversation;
        let suffix = entry
            .key()
            .get(keys::conversation_prefix(from).len()..)
            .ok_or_else(|| StoreError::Corrupt {
                tree: "outbox",
                reason: "an outbox key outside its conversation".into(),
            })?;
        let mut key = keys::conversation_prefix(to);
        key.extend_from_slice(suffix);
        let mut moved = OutboxEntry::new(key, entry.outbound.clone(), entry.journal_seq);
        moved.follows = entry.follows;
        moved.tried = entry.tried.clone();
        moved.tried.push(from.gateway.clone());
        moved.outbound.conversation = to.clone();
        moved.outbound.in_reply_to = None;
        moved.outbound.drafts = Vec::new();
        if entry.tried.is_empty() {
            let note = format!("({meant_for} could not deliver this, so it comes here.)");
            match &mut moved.outbound.body {
                OutboundBody::Text { text, .. } => *text = format!("{note}\n\n{text}"),
                OutboundBody::File(file) => {
                    file.caption = Some(match file.caption.take() {
                        Some(caption) => format!("{note}\n\n{caption}"),
                        None => note,
                    })
                }
                _ => {}
            }
        }
        let value = encode(&moved)?;
        let _writing = self.writing();
        let moving = self.inner.outbox.transaction(|outbox| {
            outbox.remove(entry.key())?;
            outbox.insert(moved.key(), value.as_slice())?;
            Ok::<_, sled::transaction::ConflictableTransactionError<StoreError>>(())
        });
        self.wrote(moving.map_err(StoreError::from))?;
        Ok(moved)
    }

    /// Writes `entry` over its stored form.
    fn rewrite(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        let value = encode(entry)?;
        self.wrote(self.inner.outbox.insert(entry.key(), value).map_err(StoreError::from))?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, GatewayId, OutboundBody, ReplyKind};

    use super::*;
    use crate::store::{PendingOutbound, TurnCommit};

    fn conversation() -> ConversationKey {
        ConversationKey {
            gateway: GatewayId::new("telegram").unwrap(),
            chat: ChatId::new("42").unwrap(),
        }
    }

    fn committed(store: &Store) -> OutboxEntry {
        let reply = PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: None,
            body: OutboundBody::Text {
                text: "long".into(),
                kind: ReplyKind::Answer,
            },
        };
        let commit = TurnCommit {
            replies: vec![reply],
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation(), commit).unwrap().remove(0)
    }

    #[test]
    fn parts_sent_are_kept_and_read_back() {
        let (_dir, store) = crate::store::tests_support::open_temp();
        let entry = committed(&store);
        let id = MessageId::new("501").unwrap();
        let after_one = store.outbox_part_sent(&entry, 0, Some(&id)).unwrap();
        assert_eq!(
            (after_one.parts_sent, after_one.part_ids.clone()),
            (1, vec![id.clone()])
        );
        // A failed attempt afterwards keeps the progress.
        store.outbox_failed(&after_one).unwrap();
        let stored = store.outbox_for(&conversation()).unwrap().remove(0);
        assert_eq!((stored.parts_sent, stored.part_ids, stored.attempts), (1, vec![id], 1));
        // Told of the same part again: nothing changes.
        let again = store.outbox_part_sent(&after_one, 0, None).unwrap();
        assert_eq!(again.parts_sent, 1);
    }

    fn chat(gateway: &str, chat: &str) -> ConversationKey {
        ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap())
    }

    fn text_of(entry: &OutboxEntry) -> &str {
        match &entry.outbound.body {
            OutboundBody::Text { text, .. } => text,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_following_reply_moves_whole_in_one_step_and_says_once_where_it_was_meant_to_go() {
        let (dir, store) = crate::store::tests_support::open_temp();
        let reminder = |text: &str| PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: Some(MessageId::new("7").unwrap()),
            body: OutboundBody::Text {
                text: text.into(),
                kind: ReplyKind::Notice,
            },
        };
        let commit = TurnCommit {
            replies: vec![reminder("Tea is ready")],
            follows: Some(crate::store::Following {
                person: 3,
                to: conversation(),
            }),
            ..TurnCommit::default()
        };
        let entry = store.commit_turn(&conversation(), commit).unwrap().remove(0);
        assert_eq!(entry.follows, Some(3));
        let signal = chat("signal", "u-1");
        let moved = store.move_outbox_entry(&entry, &signal, "Telegram").unwrap();
        assert_eq!(moved.outbound.id, entry.outbound.id, "the same reply, not a second one");
        drop(store);
        let store = crate::store::tests::reopen(&dir.path().join("store"));
        assert!(store.outbox_for(&conversation()).unwrap().is_empty());
        let waiting = store.outbox_for(&signal).unwrap();
        assert_eq!(waiting.len(), 1);
        let waiting = &waiting[0];
        assert_eq!(waiting.outbound.conversation, signal);
        assert_eq!(
            waiting.outbound.in_reply_to, None,
            "the message it answered is on Telegram"
        );
        assert_eq!(waiting.tried, [conversation().gateway]);
        assert_eq!(
            text_of(waiting),
            "(Telegram could not deliver this, so it comes here.)\n\nTea is ready"
        );
        let web = chat("web", "owner");
        let again = store.move_outbox_entry(waiting, &web, "Signal").unwrap();
        assert_eq!(text_of(&again), text_of(waiting), "said once");
        assert_eq!(again.tried.len(), 2);
        assert_eq!(store.outbox_conversations().unwrap(), [web]);
    }

    #[test]
    fn a_reply_that_follows_goes_where_the_person_chose_and_a_prompt_stays() {
        let (_dir, store) = crate::store::tests_support::open_temp();
        let signal = chat("signal", "u-1");
        let text = PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: None,
            body: OutboundBody::Text {
                text: "Tea".into(),
                kind: ReplyKind::Notice,
            },
        };
        let prompt = PendingOutbound {
            body: OutboundBody::ApprovalPrompt {
                token: passepartout_gateway::ApprovalToken::new("ABCDEFGH").unwrap(),
                action: "run".into(),
                text: "may I?".into(),
            },
            ..text.clone()
        };
        let commit = TurnCommit {
            replies: vec![text, prompt],
            follows: Some(crate::store::Following {
                person: 3,
                to: signal.clone(),
            }),
            ..TurnCommit::default()
        };
        let entries = store.commit_turn(&conversation(), commit).unwrap();
        assert_eq!(entries[0].outbound.conversation, signal);
        assert_eq!(entries[0].follows, Some(3));
        assert_eq!(
            entries[1].outbound.conversation,
            conversation(),
            "a prompt is answered where it was asked"
        );
        assert_eq!(entries[1].follows, None);
        assert_eq!(store.outbox_for(&signal).unwrap().len(), 1);
        assert_eq!(store.outbox_for(&conversation()).unwrap().len(), 1);
    }
}
