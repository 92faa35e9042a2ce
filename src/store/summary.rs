//! A conversation's running summary: what the model made of the turns that
//! no longer fit its context, and the id of the last history turn it covers.
//! One record per conversation, in the `summaries` tree. It is written only
//! in a turn's commit (see [`super::TurnCommit::summary`]), so the summary
//! and the turn that made it land together; `/forget` deletes it with the
//! history.

use passepartout_gateway::ConversationKey;
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::{Store, keys};

/// One conversation's running summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// The summary's text.
    pub text: String,
    /// The id of the newest history turn folded into it: the turns at or
    /// below it are told by the summary, the later ones are not.
    pub through: u64,
}

/// What a turn does to its conversation's summary.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SummaryWrite {
    /// The summary is now this one.
    Set(Summary),
    /// There is no summary any more (`/new`).
    Clear,
}

impl SummaryWrite {
    /// The key and the value to write (`None`: delete).
    pub(super) fn encode(&self, conversation: &ConversationKey) -> Result<(Vec<u8>, Option<Vec<u8>>), StoreError> {
        let key = keys::conversation_prefix(conversation);
        match self {
            SummaryWrite::Clear => Ok((key, None)),
            SummaryWrite::Set(summary) => {
                let value = serde_json::to_vec(summary).map_err(|e| StoreError::Corrupt {
                    tree: "summaries",
                    reason: e.to_string(),
                })?;
                Ok((key, Some(value)))
            }
        }
    }
}

impl Store {
    /// The running summary of `conversation`, if it has one.
    pub fn summary(&self, conversation: &ConversationKey) -> Result<Option<Summary>, StoreError> {
        match self.inner.summaries.get(keys::conversation_prefix(conversation))? {
            None => Ok(None),
            Some(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| StoreError::Corrupt {
                    tree: "summaries",
                    reason: e.to_string(),
                }),
        }
    }

    /// A fresh id to keep a history record under ([`super::TurnCommit::history_id`]):
    /// above every record kept so far, below every one kept later.
    pub fn history_id(&self) -> Result<u64, StoreError> {
        self.next_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::TurnCommit;
    use crate::store::tests::{conversation, open_temp, reopen};

    fn set(text: &str, through: u64) -> TurnCommit {
        TurnCommit {
            summary: Some(SummaryWrite::Set(Summary {
                text: text.into(),
                through,
            })),
            ..TurnCommit::default()
        }
    }

    #[tokio::test]
    async fn a_summary_is_written_with_its_turn_and_survives_reopening() {
        let (dir, store) = open_temp();
        let path = store.path().to_path_buf();
        let id = store.history_id().unwrap();
        let turn = TurnCommit {
            history_id: Some(id),
            history_record: Some(b"1".to_vec()),
            ..set("locker code 4711", id)
        };
        store.commit_turn(&conversation("a"), turn).unwrap();
        assert_eq!(store.summary(&conversation("b")).unwrap(), None);
        store.durable().await.unwrap();
        drop(store);
        let store = reopen(&path);
        let kept = store.summary(&conversation("a")).unwrap().unwrap();
        assert_eq!((kept.text.as_str(), kept.through), ("locker code 4711", id));
        assert_eq!(
            store.recent_kept_after::<u32>(&conversation("a"), 5, None).unwrap(),
            [(id, 1)],
            "the record is kept under the id given"
        );
        drop(dir);
    }

    #[test]
    fn clearing_and_forgetting_delete_only_that_conversations_summary() {
        let (_dir, store) = open_temp();
        for chat in ["a", "b", "c"] {
            store.commit_turn(&conversation(chat), set(chat, 1)).unwrap();
        }
        let clear = TurnCommit {
            summary: Some(SummaryWrite::Clear),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("a"), clear).unwrap();
        let forget = TurnCommit {
            forget_history: true,
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("b"), forget).unwrap();
        assert_eq!(store.summary(&conversation("a")).unwrap(), None);
        assert_eq!(store.summary(&conversation("b")).unwrap(), None);
        assert_eq!(store.summary(&conversation("c")).unwrap().unwrap().text, "c");
    }
}
