//! Work from above the conversations that runs in a conversation's worker,
//! so that it keeps the conversation's order and history like any turn: a
//! loop's iteration, for one. The component that queues an [`Errand`]
//! decides what it does; the worker hands it an [`InWorker`] with the
//! conversation's history, and commits and delivers what it produced.

use std::sync::Arc;

use async_trait::async_trait;
use passepartout_gateway::ConversationKey;

use super::Conversations;
use super::delivery;
use super::history::RecentHistory;
use super::worker::commit_of;
use crate::pipeline::{TurnOutput, TurnRecord};
use crate::store::{LoopRecordWrite, StoreError};

/// Work run by a conversation's worker, in the conversation's order.
#[async_trait]
pub trait Errand: Send + std::fmt::Debug {
    async fn run(self: Box<Self>, worker: &mut InWorker<'_>);
}

/// What an errand may do in its conversation's worker.
pub struct InWorker<'a> {
    pub(super) cx: &'a Arc<Conversations>,
    pub(super) key: &'a ConversationKey,
    pub(super) recent: &'a mut RecentHistory,
}

impl<'a> InWorker<'a> {
    /// The conversation the worker runs.
    pub fn conversation(&self) -> &'a ConversationKey {
        self.key
    }

    /// What the worker works with.
    pub fn context(&self) -> &'a Arc<Conversations> {
        self.cx
    }

    /// The conversation's recent turns, oldest first.
    pub fn history(&mut self) -> Result<&[TurnRecord], StoreError> {
        self.recent.load(&self.cx.store, self.key)
    }

    /// Commits `output` as a turn that answers no message, with
    /// `loop_record` in the same transaction, then delivers it.
    pub async fn commit(&mut self, output: TurnOutput, loop_record: Option<LoopRecordWrite>) -> Result<(), StoreError> {
        let (mut commit, record, followups) = commit_of(self.cx, None, None, output);
        commit.loop_record = loop_record;
        let committed = self.cx.store.commit_turn_durably(self.key, commit).await;
        followups.run(self.cx, committed.is_ok());
        match committed {
            Ok(_) => self.recent.committed(false, record),
            Err(error) => {
                self.recent.invalidate();
                return Err(error);
            }
        }
        delivery::deliver(self.cx, self.key).await;
        Ok(())
    }
}
