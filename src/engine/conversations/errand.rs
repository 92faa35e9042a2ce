//! Work from above the conversations that runs in a conversation's worker,
//! so that it keeps the conversation's order and history like any turn: a
//! loop's iteration, for one. The component that queues an [`Errand`]
//! decides what it does; the worker hands it an [`InWorker`], through which
//! it runs a turn with the conversation's history, and which commits and
//! delivers what it produced. The errand never holds the worker's context.

use std::sync::Arc;

use async_trait::async_trait;
use passepartout_gateway::ConversationKey;

use super::Conversations;
use super::ending::{Answering, Ending, Extras, Said};
use super::failure::{TurnFailed, guarded};
use super::history::RecentHistory;
use crate::engine::pipeline::{BackgroundTurn, TurnOutput};
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

    /// Runs `turn` through the pipeline with the conversation's recent
    /// history and the memory of the turn's sender, under the turn timeout,
    /// catching panics. Nothing is committed: that is [`InWorker::commit`].
    pub async fn run_background(&mut self, turn: BackgroundTurn) -> Result<TurnOutput, TurnFailed> {
        let (cx, key) = (self.cx, self.key);
        let history = self.recent.load(&cx.store, key).map_err(TurnFailed::History)?;
        let memory = cx.memory_of(&key.gateway, &turn.origin.sender, &[], key);
        guarded(cx, key, cx.pipeline().run_background(turn, history, memory)).await
    }

    /// Commits `output` as a turn that answers no message, with
    /// `loop_record` in the same transaction, then delivers it. Nobody is
    /// waiting for it: in a linked person's private chat, what it says
    /// follows them (see `follow`).
    pub async fn commit(&mut self, output: TurnOutput, loop_record: Option<LoopRecordWrite>) -> Result<(), StoreError> {
        let ending = Ending {
            answering: Answering::Nothing,
            said: Said::Output(Box::new(output)),
            extras: Extras {
                follows: true,
                loop_record,
                ..Extras::default()
            },
        };
        ending.finish(self.cx, self.key, self.recent).await
    }
}
