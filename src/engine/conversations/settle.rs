//! Settling approvals in their conversation's worker: one turn per decided
//! approval the conversation has not been told about, oldest first. A turn
//! that fails still settles it, with an apology, so an outcome is told once
//! and an approved action is never offered a second run.

use std::sync::Arc;

use passepartout_gateway::ConversationKey;

use super::Conversations;
use super::ending::{Answering, Ending, Extras, Said};
use super::failure::{TurnFailed, guarded};
use super::history::RecentHistory;
use super::typing::with_typing;
use crate::safety::approvals::Approval;

/// Tells the conversation the outcome of each approval decided since it
/// was last told, if any was.
pub async fn settle_approvals(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory) {
    let approvals = &cx.approvals;
    loop {
        let owed = match approvals.take_unsettled(key) {
            Ok(owed) if owed.is_empty() => return,
            Ok(owed) => owed,
            Err(error) => {
                // Owed still: settled at the next start.
                tracing::error!(conversation = %key, %error, "cannot read approvals to settle");
                return;
            }
        };
        for approval in owed {
            if cx.store.is_poisoned() || cx.lifecycle.is_draining() {
                return;
            }
            settle_one(cx, key, recent, &approval).await;
        }
    }
}

async fn settle_one(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory, approval: &Approval) {
    let said = match recent.load(&cx.store, key) {
        Ok(history) => {
            let memory = cx.memory_of(
                &approval.conversation.gateway,
                &approval.requester,
                &[],
                &approval.conversation,
            );
            // On the heap, as a turn's pipeline is (see `worker.rs`).
            let pipeline = cx.pipeline();
            let settle = Box::pin(pipeline.settle(approval, history, memory));
            match with_typing(cx, key, guarded(cx, key, settle)).await {
                Ok(output) => Said::Output(Box::new(output)),
                Err(failure) => Said::Failed(failure),
            }
        }
        Err(error) => Said::Failed(TurnFailed::History(error)),
    };
    // Decided where it was asked, the person is here to read the outcome;
    // decided elsewhere (another chat, the terminal, the timer), it follows them.
    let decided_here = approval
        .decision
        .as_ref()
        .and_then(|decision| decision.message.as_ref())
        .is_some_and(|(conversation, _)| conversation == key);
    // In a bridged group, what the approved (or denied) work gives stays
    // where it was asked, as the prompt and its answer do: it names the
    // command and what it printed.
    let ending = Ending {
        answering: Answering::Approval(approval),
        said,
        extras: Extras {
            follows: !decided_here,
            ..Extras::default()
        },
    };
    if let Err(error) = ending.finish(cx, key, recent).await {
        // Owed still: settled at the next start (an approved run that
        // finished is not run again; its output was kept).
        tracing::error!(conversation = %key, token = approval.token.as_str(), %error, "cannot commit an approval's outcome");
    }
}
