//! Tokens used, per provider and UTC day: one record per conversation per
//! day and one for all conversations per day, in the `usage` tree. A turn
//! adds to its day's two records, so the tree grows by days, not by calls.
//!
//! Keys: a conversation's day is its conversation prefix and the day number
//! (days since 1970-01-01, big-endian); the total's day is a zero byte and
//! the day number (no gateway id starts with a control character). Either
//! way a key ends in its day, which is what pruning goes by.

use std::collections::BTreeMap;

use passepartout_gateway::ConversationKey;
use serde::{Deserialize, Serialize};
use sled::transaction::ConflictableTransactionError;

use super::error::StoreError;
use super::{Store, keys};

/// Tokens in and out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    #[serde(rename = "in")]
    pub tokens_in: u64,
    #[serde(rename = "out")]
    pub tokens_out: u64,
}

impl Tokens {
    fn add(&mut self, other: Tokens) {
        self.tokens_in = self.tokens_in.saturating_add(other.tokens_in);
        self.tokens_out = self.tokens_out.saturating_add(other.tokens_out);
    }
}

/// Tokens by provider name.
pub type ByProvider = BTreeMap<String, Tokens>;

/// Adds `more` to `sum`, provider by provider.
pub fn add_usage(sum: &mut ByProvider, more: &ByProvider) {
    for (provider, tokens) in more {
        sum.entry(provider.clone()).or_default().add(*tokens);
    }
}

const TOTAL: u8 = 0;

fn conversation_day(conversation: &ConversationKey, day: u64) -> Vec<u8> {
    keys::sequenced(conversation, &[day])
}

fn total_day(day: u64) -> Vec<u8> {
    let mut key = vec![TOTAL];
    key.extend_from_slice(&day.to_be_bytes());
    key
}

fn decode(bytes: &[u8]) -> Result<ByProvider, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        tree: "usage",
        reason: e.to_string(),
    })
}

impl Store {
    /// Adds `used` to `conversation`'s record for `day` and to the total's.
    pub fn add_usage(&self, conversation: &ConversationKey, day: u64, used: &ByProvider) -> Result<(), StoreError> {
        if used.values().all(|t| *t == Tokens::default()) {
            return Ok(());
        }
        let keys = [conversation_day(conversation, day), total_day(day)];
        let result = self.inner.usage.transaction(|tree| {
            for key in &keys {
                let mut sum = match tree.get(key)? {
                    Some(bytes) => decode(&bytes).map_err(ConflictableTransactionError::Abort)?,
                    None => ByProvider::new(),
                };
                add_usage(&mut sum, used);
                let bytes = serde_json::to_vec(&sum).map_err(|e| {
                    ConflictableTransactionError::Abort(StoreError::Corrupt {
                        tree: "usage",
                        reason: e.to_string(),
                    })
                })?;
                tree.insert(key.as_slice(), bytes)?;
            }
            Ok(())
        });
        self.wrote(result.map_err(StoreError::from))
    }

    /// The usage of `conversation` (all conversations when `None`) on the
    /// days `from..=to`, summed.
    pub fn usage(&self, conversation: Option<&ConversationKey>, from: u64, to: u64) -> Result<ByProvider, StoreError> {
        let (start, end) = match conversation {
            Some(conversation) => (conversation_day(conversation, from), conversation_day(conversation, to)),
            None => (total_day(from), total_day(to)),
        };
        let mut sum = ByProvider::new();
        for item in self.inner.usage.range(start..=end) {
            let (_, value) = item?;
            add_usage(&mut sum, &decode(&value)?);
        }
        Ok(sum)
    }

    /// The total of each day `from..=to` that has any, oldest first.
    pub fn usage_by_day(&self, from: u64, to: u64) -> Result<Vec<(u64, ByProvider)>, StoreError> {
        let mut days = Vec::new();
        for item in self.inner.usage.range(total_day(from)..=total_day(to)) {
            let (key, value) = item?;
            if let Some(day) = key.get(1..).and_then(keys::decode_u64) {
                days.push((day, decode(&value)?));
            }
        }
        Ok(days)
    }

    /// The usage of each conversation on the days `from..=to`, summed, for
    /// the conversations that have any.
    pub fn usage_by_conversation(
        &self,
        from: u64,
        to: u64,
    ) -> Result<BTreeMap<ConversationKey, ByProvider>, StoreError> {
        let mut sums: BTreeMap<ConversationKey, ByProvider> = BTreeMap::new();
        for item in self.inner.usage.iter() {
            let (key, value) = item?;
            if key.first() == Some(&TOTAL) {
                continue;
            }
            let day = key.len().checked_sub(8).and_then(|at| keys::decode_u64(&key[at..]));
            let (Some(day), Some(conversation)) = (day, keys::conversation_of(&key)) else {
                continue;
            };
            if (from..=to).contains(&day) {
                add_usage(sums.entry(conversation).or_default(), &decode(&value)?);
            }
        }
        Ok(sums)
    }

    /// Deletes the records of the days before `first_day` (totals and
    /// conversations alike). Returns how many went.
    pub fn prune_usage(&self, first_day: u64) -> Result<usize, StoreError> {
        let _writing = self.writing();
        let mut pruned = 0;
        for item in self.inner.usage.iter() {
            let (key, _) = item?;
            let day = key.len().checked_sub(8).and_then(|at| keys::decode_u64(&key[at..]));
            if day.is_some_and(|day| day < first_day) {
                self.wrote(self.inner.usage.remove(key).map_err(StoreError::from))?;
                pruned += 1;
            }
        }
        Ok(pruned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{conversation, open_temp};

    fn used(provider: &str, tokens_in: u64, tokens_out: u64) -> ByProvider {
        ByProvider::from([(provider.to_owned(), Tokens { tokens_in, tokens_out })])
    }

    #[test]
    fn days_and_conversations_sum_separately() {
        let (_dir, store) = open_temp();
        store.add_usage(&conversation("a"), 10, &used("p", 5, 1)).unwrap();
        store.add_usage(&conversation("a"), 10, &used("p", 5, 1)).unwrap();
        store.add_usage(&conversation("a"), 11, &used("q", 1, 1)).unwrap();
        store.add_usage(&conversation("b"), 11, &used("p", 100, 100)).unwrap();
        assert_eq!(store.usage(Some(&conversation("a")), 10, 10).unwrap(), used("p", 10, 2));
        let both_days = store.usage(Some(&conversation("a")), 10, 11).unwrap();
        assert_eq!(both_days.len(), 2);
        assert_eq!(
            store.usage(None, 11, 11).unwrap()["p"],
            Tokens {
                tokens_in: 100,
                tokens_out: 100
            }
        );
        assert_eq!(store.usage(None, 0, 20).unwrap()["p"].tokens_in, 110);
        assert_eq!(
            store.usage(Some(&conversation("ab")), 0, 20).unwrap(),
            ByProvider::new()
        );
        assert_eq!(
            store.inner.usage.len(),
            5,
            "one record per conversation-day and per day"
        );
    }

    #[test]
    fn days_and_conversations_are_listed_within_the_range() {
        let (_dir, store) = open_temp();
        store.add_usage(&conversation("a"), 9, &used("p", 1, 1)).unwrap();
        store.add_usage(&conversation("a"), 10, &used("p", 2, 1)).unwrap();
        store.add_usage(&conversation("b"), 12, &used("q", 3, 1)).unwrap();
        let days = store.usage_by_day(10, 12).unwrap();
        assert_eq!(days, [(10, used("p", 2, 1)), (12, used("q", 3, 1))]);
        let conversations = store.usage_by_conversation(10, 12).unwrap();
        assert_eq!(conversations.len(), 2);
        assert_eq!(conversations[&conversation("a")], used("p", 2, 1), "day 9 is outside");
        assert_eq!(conversations[&conversation("b")], used("q", 3, 1));
    }

    #[test]
    fn pruning_deletes_the_days_before_the_first_kept_in_every_conversation() {
        let (_dir, store) = open_temp();
        for day in [9, 10, 11] {
            store.add_usage(&conversation("a"), day, &used("p", day, 1)).unwrap();
        }
        store.add_usage(&conversation("b"), 9, &used("p", 1, 1)).unwrap();
        assert_eq!(store.prune_usage(10).unwrap(), 3, "a's, b's and the total's day 9");
        assert_eq!(store.usage(Some(&conversation("a")), 0, 20).unwrap(), used("p", 21, 2));
        assert_eq!(store.usage(Some(&conversation("b")), 0, 20).unwrap(), ByProvider::new());
        assert_eq!(store.usage(None, 0, 20).unwrap(), used("p", 21, 2));
        assert_eq!(store.prune_usage(10).unwrap(), 0, "nothing twice");
    }
}
