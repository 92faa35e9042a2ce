//! Group commit of turns: workers of different conversations that commit at
//! the same time share one transaction and one flush. sled writes its log
//! twice per transaction, so under load this is the difference between a
//! few hundred and a few thousand turns per second.
//!
//! Leader/follower: each caller queues its prepared commit and waits for the
//! leader lock; whoever holds it takes everything queued, applies it in one
//! transaction, flushes, and answers every caller in the group.

use std::sync::{Arc, Mutex};

use passepartout_gateway::ConversationKey;
use tokio::sync::oneshot;

use super::Store;
use super::error::StoreError;
use super::outbox::OutboxEntry;
use super::turn::{Prepared, TurnCommit, finish};

type Answer = oneshot::Sender<Result<Vec<OutboxEntry>, StoreError>>;

#[derive(Default)]
pub(super) struct CommitQueue {
    queued: Mutex<Vec<(Prepared, Answer)>>,
    leader: tokio::sync::Mutex<()>,
}

impl Store {
    /// [`Store::commit_turn`], made durable before it returns, grouped with
    /// concurrent commits of other conversations.
    pub async fn commit_turn_durably(
        &self,
        conversation: &ConversationKey,
        turn: TurnCommit,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let prepared = self.wrote(self.prepare(conversation, turn))?;
        let (answer, mut result) = oneshot::channel();
        let queue = &self.inner.commits;
        lock(&queue.queued).push((prepared, answer));
        // A leader already at work may take ours along: its answer then comes
        // first, with no need to wait for the lock.
        let leader = tokio::select! {
            biased;
            answer = &mut result => return answer.map_err(|_| self.abandoned())?,
            leader = queue.leader.lock() => leader,
        };
        let group = std::mem::take(&mut *lock(&queue.queued));
        if !group.is_empty() {
            self.commit_group(group).await;
        }
        drop(leader);
        result.await.map_err(|_| self.abandoned())?
    }

    /// The leader went away (its task cancelled or panicking) after taking
    /// the group: its commits may be applied but not flushed, so nothing may
    /// be shown as durable any more.
    fn abandoned(&self) -> StoreError {
        self.poison(&StoreError::Task("a grouped commit was abandoned halfway".into()));
        StoreError::Poisoned
    }

    async fn commit_group(&self, group: Vec<(Prepared, Answer)>) {
        let (prepared, answers): (Vec<_>, Vec<_>) = group.into_iter().unzip();
        let (prepared, applied) = match self
            .gated(move |store| {
                let applied = store.apply_ungated(&prepared);
                (prepared, applied)
            })
            .await
        {
            Ok(done) => done,
            Err(error) => {
                // The group was taken and may or may not have been applied:
                // nothing can be shown as durable any more.
                self.poison(&error);
                for answer in answers {
                    let _ = answer.send(Err(StoreError::Poisoned));
                }
                return;
            }
        };
        let outcome = match applied {
            Ok(applied) => self.durable().await.map(|()| applied),
            Err(error) => Err(error),
        };
        match outcome {
            Ok(applied) => {
                for ((commit, applied), answer) in prepared.into_iter().zip(applied).zip(answers) {
                    let _ = answer.send(finish(commit, applied));
                }
            }
            Err(error) => {
                tracing::error!(%error, turns = answers.len(), "grouped turn commit failed");
                let error = Arc::new(error);
                for answer in answers {
                    let _ = answer.send(Err(StoreError::Group(error.clone())));
                }
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{OutboundBody, ReplyKind};

    use crate::store::tests::{conversation, inbound, open_temp};
    use crate::store::{Accepted, PendingOutbound, StoreError, TurnCommit};

    fn reply_to(seq: u64) -> TurnCommit {
        TurnCommit {
            journal_seq: Some(seq),
            replies: vec![PendingOutbound {
                drafts: Vec::new(),
                in_reply_to: None,
                body: OutboundBody::Text {
                    text: format!("re {seq}"),
                    kind: ReplyKind::Answer,
                },
            }],
            ..TurnCommit::default()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_commits_of_many_conversations_all_land() {
        let (_dir, store) = open_temp();
        let mut tasks = Vec::new();
        for n in 0..32 {
            let chat = format!("c{n}");
            let Accepted::New(seq) = store.journal_accept(&inbound(&chat, "m", "x"), 0).unwrap() else {
                panic!()
            };
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                store.commit_turn_durably(&conversation(&chat), reply_to(seq)).await
            }));
        }
        for task in tasks {
            assert_eq!(task.await.unwrap().unwrap().len(), 1);
        }
        assert_eq!(store.pending_count(), 0);
        assert_eq!(store.outbox_len(), 32);
    }

    #[tokio::test]
    async fn a_commit_already_made_fails_alone() {
        let (_dir, store) = open_temp();
        let Accepted::New(seq) = store.journal_accept(&inbound("c", "m", "x"), 0).unwrap() else {
            panic!()
        };
        store
            .commit_turn_durably(&conversation("c"), reply_to(seq))
            .await
            .unwrap();
        let again = store.commit_turn_durably(&conversation("c"), reply_to(seq)).await;
        assert!(matches!(again, Err(StoreError::AlreadyProcessed { .. })), "{again:?}");
        assert_eq!(store.outbox_len(), 1);
    }
}
