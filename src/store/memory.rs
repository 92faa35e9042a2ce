//! The `memory` tree: facts the assistant was asked to remember, scoped per
//! person (`gateway 0x00 user 0x00`, then the fact's id, big-endian, so a
//! scope's facts read oldest first). Facts are written only by a turn's
//! commit, in the same transaction as its replies, so a turn that fails
//! remembers nothing.

use passepartout_gateway::{GatewayId, UserId};
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::{Store, keys};

/// One remembered fact.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fact {
    /// Unique across the store; what `forget_fact` names.
    pub id: u64,
    pub text: String,
    /// When it was remembered, in milliseconds since the Unix epoch.
    pub created_ms: u64,
}

/// Whose facts: a person on a gateway.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MemoryScope(Vec<u8>);

impl MemoryScope {
    pub fn new(gateway: &GatewayId, user: &UserId) -> Self {
        let mut prefix = Vec::with_capacity(gateway.as_str().len() + user.as_str().len() + 2);
        prefix.extend_from_slice(gateway.as_str().as_bytes());
        prefix.push(0);
        prefix.extend_from_slice(user.as_str().as_bytes());
        prefix.push(0);
        Self(prefix)
    }

    fn key(&self, id: u64) -> Vec<u8> {
        let mut key = self.0.clone();
        key.extend_from_slice(&keys::seq(id));
        key
    }
}

/// A change to the memory tree, made by a turn's commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryWrite {
    Remember { scope: MemoryScope, fact: Fact },
    Forget { scope: MemoryScope, id: u64 },
}

impl MemoryWrite {
    /// The key and, for `Remember`, the value.
    pub(super) fn encode(&self) -> Result<(Vec<u8>, Option<Vec<u8>>), StoreError> {
        match self {
            Self::Remember { scope, fact } => {
                let value = serde_json::to_vec(fact).map_err(|e| StoreError::Corrupt {
                    tree: "memory",
                    reason: e.to_string(),
                })?;
                Ok((scope.key(fact.id), Some(value)))
            }
            Self::Forget { scope, id } => Ok((scope.key(*id), None)),
        }
    }
}

impl Store {
    /// Every fact in `scope`, oldest first.
    pub fn facts(&self, scope: &MemoryScope) -> Result<Vec<Fact>, StoreError> {
        self.inner
            .memory
            .scan_prefix(&scope.0)
            .values()
            .map(|value| {
                let value = value?;
                serde_json::from_slice(&value).map_err(|e| StoreError::Corrupt {
                    tree: "memory",
                    reason: e.to_string(),
                })
            })
            .collect()
    }

    /// A fresh id for a fact.
    pub fn fact_id(&self) -> Result<u64, StoreError> {
        self.next_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TurnCommit;
    use crate::store::tests::{conversation, open_temp};

    fn scope(user: &str) -> MemoryScope {
        MemoryScope::new(&GatewayId::new("socket").unwrap(), &UserId::new(user).unwrap())
    }

    fn fact(id: u64, text: &str) -> Fact {
        Fact {
            id,
            text: text.into(),
            created_ms: 0,
        }
    }

    #[test]
    fn facts_are_kept_per_person_and_forgotten_by_id() {
        let (_dir, store) = open_temp();
        let remember = |user: &str, id, text: &str| MemoryWrite::Remember {
            scope: scope(user),
            fact: fact(id, text),
        };
        let turn = TurnCommit {
            memory: vec![
                remember("ann", 1, "likes tea"),
                remember("ann", 2, "has a cat"),
                remember("annie", 3, "x"),
            ],
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), turn).unwrap();
        assert_eq!(
            store.facts(&scope("ann")).unwrap(),
            [fact(1, "likes tea"), fact(2, "has a cat")]
        );
        let forget = TurnCommit {
            memory: vec![MemoryWrite::Forget {
                scope: scope("ann"),
                id: 1,
            }],
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), forget).unwrap();
        assert_eq!(store.facts(&scope("ann")).unwrap(), [fact(2, "has a cat")]);
        assert_eq!(store.facts(&scope("annie")).unwrap(), [fact(3, "x")]);
    }
}
