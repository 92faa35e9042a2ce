//! Tokens used, per provider and UTC day: one record per conversation per
//! day, in the `usage` tree. A turn adds to its conversation's record for
//! the day in the turn's own commit ([`super::TurnCommit::usage`]), so the
//! tree grows by days, not by calls. The totals over all conversations are
//! summed when read: a record every conversation rewrote with each turn
//! would make the conversations wait on one another.
//!
//! Keys: a conversation's day is its conversation prefix and the day number
//! (days since 1970-01-01, big-endian), so a key ends in its day, which is
//! what pruning goes by. Stores written before the totals were summed hold
//! a total per day too, under a zero byte and the day number (no gateway id
//! starts with a control character): those are left out when reading, as
//! the conversations' records hold the same tokens, and pruned by day.

use std::collections::BTreeMap;

use passepartout_gateway::ConversationKey;
use serde::{Deserialize, Serialize};
use sled::transaction::{ConflictableTransactionError, TransactionalTree};

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

/// What a turn used on one UTC day, added to its conversation's record of
/// that day when the turn commits.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UsageAdd {
    /// Days since 1970-01-01.
    pub day: u64,
    pub used: ByProvider,
}

impl UsageAdd {
    /// Whether it adds nothing.
    pub fn is_empty(&self) -> bool {
        self.used.values().all(|t| *t == Tokens::default())
    }

    /// The key of the record it adds to, in `conversation`.
    pub(super) fn key(&self, conversation: &ConversationKey) -> Vec<u8> {
        conversation_day(conversation, self.day)
    }

    /// Adds it to the record under `key`, inside a transaction. A record
    /// that cannot be read is left as it is (and the turn's tokens go
    /// uncounted): an estimate never stops a turn from committing.
    pub(super) fn apply_in(
        &self,
        tree: &TransactionalTree,
        key: &[u8],
    ) -> Result<(), ConflictableTransactionError<StoreError>> {
        let mut sum = match tree.get(key)? {
            Some(bytes) => match decode(&bytes) {
                Ok(sum) => sum,
                Err(error) => {
                    tracing::warn!(%error, "a usage record cannot be read; this turn's tokens are not added");
                    return Ok(());
                }
            },
            None => ByProvider::new(),
        };
        add_usage(&mut sum, &self.used);
        let bytes = serde_json::to_vec(&sum).map_err(|e| {
            ConflictableTransactionError::Abort(StoreError::Corrupt {
                tree: "usage",
                reason: e.to_string(),
            })
        })?;
        tree.insert(key, bytes)?;
        Ok(())
    }
}

/// The first byte of the totals' keys in stores written before the totals
/// were summed when read.
const TOTAL: u8 = 0;

fn conversation_day(conversation: &ConversationKey, day: u64) -> Vec<u8> {
    keys::sequenced(conversation, &[day])
}

/// The day a conversation's record is of, from its key; `None` for the
/// old totals and for keys of no known form.
fn day_of_key(key: &[u8]) -> Option<u64> {
    if key.first() == Some(&TOTAL) {
        return None;
    }
    key.len().checked_sub(8).and_then(|at| keys::decode_u64(&key[at..]))
}

fn decode(bytes: &[u8]) -> Result<ByProvider, StoreError> {
    serde_json::from_slice(bytes).map_err(|e| StoreError::Corrupt {
        tree: "usage",
        reason: e.to_string(),
    })
}

impl Store {
    /// Adds `used` to `conversation`'s record for `day`, on its own: for
    /// the tokens of a turn whose commit failed (a turn's tokens otherwise
    /// go in with its commit).
    pub fn add_usage(&self, conversation: &ConversationKey, day: u64, used: &ByProvider) -> Result<(), StoreError> {
        let add = UsageAdd {
            day,
            used: used.clone(),
        };
        if add.is_empty() {
            return Ok(());
        }
        let key = add.key(conversation);
        let result = self.inner.usage.transaction(|tree| add.apply_in(tree, &key));
        self.wrote(result.map_err(StoreError::from))
    }

    /// The usage of `conversation` (all conversations when `None`) on the
    /// days `from..=to`, summed.
    pub fn usage(&self, conversation: Option<&ConversationKey>, from: u64, to: u64) -> Result<ByProvider, StoreError> {
        let mut sum = ByProvider::new();
        match conversation {
            Some(conversation) => {
                let range = conversation_day(conversation, from)..=conversation_day(conversation, to);
                for item in self.inner.usage.range(range) {
                    let (_, value) = item?;
                    add_usage(&mut sum, &decode(&value)?);
                }
            }
            None => {
                for item in self.inner.usage.iter() {
                    let (key, value) = item?;
                    if day_of_key(&key).is_some_and(|day| (from..=to).contains(&day)) {
                        add_usage(&mut sum, &decode(&value)?);
                    }
                }
            }
        }
        Ok(sum)
    }

    /// The total of each day `from..=to` that has any, oldest first.
    pub fn usage_by_day(&self, from: u64, to: u64) -> Result<Vec<(u64, ByProvider)>, StoreError> {
        let mut days: BTreeMap<u64, ByProvider> = BTreeMap::new();
        for item in self.inner.usage.iter() {
            let (key, value) = item?;
            if let Some(day) = day_of_key(&key).filter(|day| (from..=to).contains(day)) {
                add_usage(days.entry(day).or_default(), &decode(&value)?);
            }
        }
        Ok(days.into_iter().collect())
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
            let (Some(day), Some(conversation)) = (day_of_key(&key), keys::conversation_of(&key)) else {
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
            3,
            "one record per conversation-day, none shared"
        );
    }

    #[test]
    fn totals_kept_by_older_stores_are_not_counted_twice_and_are_pruned() {
        let (_dir, store) = open_temp();
        store.add_usage(&conversation("a"), 10, &used("p", 5, 1)).unwrap();
        // The total an older store kept beside it.
        let mut total = vec![TOTAL];
        total.extend_from_slice(&10u64.to_be_bytes());
        store
            .inner
            .usage
            .insert(total, serde_json::to_vec(&used("p", 5, 1)).unwrap())
            .unwrap();
        assert_eq!(store.usage(None, 0, 20).unwrap(), used("p", 5, 1));
        assert_eq!(store.usage_by_day(0, 20).unwrap(), [(10, used("p", 5, 1))]);
        assert_eq!(store.usage_by_conversation(0, 20).unwrap().len(), 1);
        assert_eq!(
            store.prune_usage(11).unwrap(),
            2,
            "the conversation's day and the old total"
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
        assert_eq!(store.prune_usage(10).unwrap(), 2, "a's and b's day 9");
        assert_eq!(store.usage(Some(&conversation("a")), 0, 20).unwrap(), used("p", 21, 2));
        assert_eq!(store.usage(Some(&conversation("b")), 0, 20).unwrap(), ByProvider::new());
        assert_eq!(store.usage(None, 0, 20).unwrap(), used("p", 21, 2));
        assert_eq!(store.prune_usage(10).unwrap(), 0, "nothing twice");
    }
}
