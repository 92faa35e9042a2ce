//! What the desk keeps in memory beside the store: which approvals each
//! conversation is owed the outcome of, or a reminder of (for its worker),
//! and the deadlines of pending ones, when they time out and when they are
//! reminded of (for the expiry timer). Both are rebuilt from the store
//! at start ([`Approvals::recover`](super::Approvals::recover)), so losing
//! them loses nothing; they spare the hot paths a scan of every approval.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard};

use passepartout_gateway::{ApprovalToken, ConversationKey};

/// A decided approval whose conversation has not been told the outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owed {
    pub conversation: ConversationKey,
    pub token: ApprovalToken,
}

/// What comes due at a deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Due {
    /// The approval times out.
    Expiry,
    /// Its conversation is reminded that it waits.
    Reminder,
}

#[derive(Default)]
pub(super) struct Ledger {
    owed: Mutex<BTreeMap<ConversationKey, BTreeSet<ApprovalToken>>>,
    reminders: Mutex<BTreeMap<ConversationKey, BTreeSet<ApprovalToken>>>,
    deadlines: Mutex<BTreeSet<(u64, Due, ApprovalToken)>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

impl Ledger {
    pub fn owe(&self, owed: Owed) {
        lock(&self.owed)
            .entry(owed.conversation)
            .or_default()
            .insert(owed.token);
    }

    /// The approvals `conversation` is owed, now in the caller's hands.
    pub fn take(&self, conversation: &ConversationKey) -> Vec<ApprovalToken> {
        lock(&self.owed)
            .remove(conversation)
            .map(|tokens| tokens.into_iter().collect())
            .unwrap_or_default()
    }

    /// `conversation` is owed a reminder of the approval `token`.
    pub fn owe_reminder(&self, conversation: ConversationKey, token: ApprovalToken) {
        lock(&self.reminders).entry(conversation).or_default().insert(token);
    }

    /// The reminders `conversation` is owed, now in the caller's hands.
    pub fn take_reminders(&self, conversation: &ConversationKey) -> Vec<ApprovalToken> {
        lock(&self.reminders)
            .remove(conversation)
            .map(|tokens| tokens.into_iter().collect())
            .unwrap_or_default()
    }

    pub fn add_deadline(&self, at_ms: u64, due: Due, token: ApprovalToken) {
        lock(&self.deadlines).insert((at_ms, due, token));
    }

    /// Takes out the deadlines at or before `now_ms`; returns them, the
    /// earliest first, and the next one.
    pub fn due(&self, now_ms: u64) -> (Vec<(Due, ApprovalToken)>, Option<u64>) {
        let mut deadlines = lock(&self.deadlines);
        let mut due = Vec::new();
        while let Some((at, ..)) = deadlines.first()
            && *at <= now_ms
        {
            let (_, what, token) = deadlines.pop_first().expect("just seen");
            due.push((what, token));
        }
        (due, deadlines.first().map(|(at, ..)| *at))
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, GatewayId};

    use super::*;

    fn token(t: &str) -> ApprovalToken {
        ApprovalToken::new(t).unwrap()
    }

    #[test]
    fn owed_approvals_are_taken_once_per_conversation() {
        let ledger = Ledger::default();
        let chat = |c: &str| ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new(c).unwrap());
        for (c, t) in [("a", "AAAAAA"), ("a", "BBBBBB"), ("a", "AAAAAA"), ("b", "CCCCCC")] {
            ledger.owe(Owed {
                conversation: chat(c),
                token: token(t),
            });
        }
        assert_eq!(ledger.take(&chat("a")), [token("AAAAAA"), token("BBBBBB")]);
        assert!(ledger.take(&chat("a")).is_empty());
        assert_eq!(ledger.take(&chat("b")), [token("CCCCCC")]);
    }

    #[test]
    fn deadlines_come_due_in_order() {
        let ledger = Ledger::default();
        ledger.add_deadline(30, Due::Expiry, token("CCCCCC"));
        ledger.add_deadline(10, Due::Expiry, token("AAAAAA"));
        ledger.add_deadline(20, Due::Expiry, token("BBBBBB"));
        ledger.add_deadline(15, Due::Reminder, token("BBBBBB"));
        assert_eq!(ledger.due(5), (vec![], Some(10)));
        assert_eq!(
            ledger.due(20),
            (
                vec![
                    (Due::Expiry, token("AAAAAA")),
                    (Due::Reminder, token("BBBBBB")),
                    (Due::Expiry, token("BBBBBB"))
                ],
                Some(30)
            )
        );
        assert_eq!(ledger.due(99), (vec![(Due::Expiry, token("CCCCCC"))], None));
    }

    #[test]
    fn reminders_are_taken_once_per_conversation() {
        let ledger = Ledger::default();
        let chat = ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("a").unwrap());
        ledger.owe_reminder(chat.clone(), token("AAAAAA"));
        ledger.owe_reminder(chat.clone(), token("AAAAAA"));
        assert_eq!(ledger.take_reminders(&chat), [token("AAAAAA")]);
        assert!(ledger.take_reminders(&chat).is_empty());
    }
}
