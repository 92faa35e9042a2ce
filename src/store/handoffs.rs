//! Hand-offs waiting to be carried over: a linked person asked (`/handoff
//! signal`, or `/continue` on the other side) for a conversation to go on
//! in another of their private conversations. One record per conversation
//! that is to receive, in the `handoffs` tree, naming where it comes from.
//!
//! Only a conversation's own worker writes its history, so the turn that
//! asks writes the record with its commit, and the receiving worker carries
//! the turns over and removes the record in one commit of its own: a crash
//! between the two leaves the record, which the next start carries over.

use passepartout_gateway::{ConversationKey, UserId};
use serde::{Deserialize, Serialize};

use sled::transaction::{ConflictableTransactionError, TransactionalTree};

use super::approvals::{decode, encode};
use super::error::StoreError;
use super::{Store, keys};

/// A conversation to be carried over into another.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Handoff {
    /// The conversation whose summary and recent turns go over.
    pub from: ConversationKey,
    /// The person's account in the receiving conversation: the carried
    /// turns are theirs there.
    pub by: UserId,
    pub at_ms: u64,
}

/// What a turn does to the hand-offs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HandoffWrite {
    /// `to` is to receive `handoff` (a newer one replaces an older).
    Ask { to: ConversationKey, handoff: Handoff },
    /// The hand-off into `to` asked at `at_ms` was carried over; one asked
    /// since stays, to be carried over in its turn.
    Done { to: ConversationKey, at_ms: u64 },
}

impl HandoffWrite {
    /// Applies the write inside a turn's transaction.
    pub(super) fn apply_in(&self, tree: &TransactionalTree) -> Result<(), ConflictableTransactionError<StoreError>> {
        match self {
            HandoffWrite::Ask { to, handoff } => {
                let value = encode("handoffs", handoff).map_err(ConflictableTransactionError::Abort)?;
                tree.insert(keys::conversation_prefix(to), value)?;
            }
            HandoffWrite::Done { to, at_ms } => {
                let key = keys::conversation_prefix(to);
                let carried = match tree.get(&key)? {
                    Some(value) => decode::<Handoff>("handoffs", &value)
                        .map(|waiting| waiting.at_ms == *at_ms)
                        .unwrap_or(true),
                    None => false,
                };
                if carried {
                    tree.remove(key)?;
                }
            }
        }
        Ok(())
    }
}

impl Store {
    /// The hand-off waiting to be carried into `conversation`, if any.
    pub fn handoff_to(&self, conversation: &ConversationKey) -> Result<Option<Handoff>, StoreError> {
        match self.inner.handoffs.get(keys::conversation_prefix(conversation))? {
            Some(value) => decode("handoffs", &value).map(Some),
            None => Ok(None),
        }
    }

    /// Every conversation a hand-off waits for, for the start to wake.
    pub fn handoff_targets(&self) -> Result<Vec<ConversationKey>, StoreError> {
        let mut targets = Vec::new();
        for key in self.inner.handoffs.iter().keys() {
            match keys::conversation_of(&key?) {
                Some(conversation) => targets.push(conversation),
                None => tracing::warn!("a hand-off under an unreadable key is left alone"),
            }
        }
        Ok(targets)
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, GatewayId};

    use super::*;
    use crate::store::TurnCommit;
    use crate::store::tests::{conversation, open_temp, reopen};

    fn telegram() -> ConversationKey {
        conversation("42")
    }

    fn signal() -> ConversationKey {
        ConversationKey::new(GatewayId::new("signal").unwrap(), ChatId::new("+4915").unwrap())
    }

    fn ask() -> HandoffWrite {
        HandoffWrite::Ask {
            to: signal(),
            handoff: Handoff {
                from: telegram(),
                by: UserId::new("+4915").unwrap(),
                at_ms: 7,
            },
        }
    }

    #[test]
    fn a_hand_off_asked_in_a_commit_outlives_a_restart_and_is_removed_when_done() {
        let (dir, store) = open_temp();
        let asked = TurnCommit {
            handoff: Some(ask()),
            ..TurnCommit::default()
        };
        store.commit_turn(&telegram(), asked).unwrap();
        drop(store);
        let store = reopen(&dir.path().join("store"));
        assert_eq!(store.handoff_targets().unwrap(), vec![signal()]);
        let waiting = store.handoff_to(&signal()).unwrap().unwrap();
        assert_eq!(waiting.from, telegram());
        assert_eq!(store.handoff_to(&telegram()).unwrap(), None);
        let older = TurnCommit {
            handoff: Some(HandoffWrite::Done { to: signal(), at_ms: 6 }),
            ..TurnCommit::default()
        };
        store.commit_turn(&signal(), older).unwrap();
        assert!(
            store.handoff_to(&signal()).unwrap().is_some(),
            "a newer one than was carried stays"
        );
        let done = TurnCommit {
            handoff: Some(HandoffWrite::Done { to: signal(), at_ms: 7 }),
            ..TurnCommit::default()
        };
        store.commit_turn(&signal(), done).unwrap();
        assert_eq!(store.handoff_to(&signal()).unwrap(), None);
        assert!(store.handoff_targets().unwrap().is_empty());
    }
}
