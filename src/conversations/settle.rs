//! Settling approvals in their conversation's worker: one turn per decided
//! approval the conversation has not been told about, oldest first. A turn
//! that fails still settles it, with an apology, so an outcome is told once
//! and an approved action is never offered a second run.

use std::sync::Arc;

use passepartout_gateway::{ConversationKey, OutboundBody, ReplyKind};

use super::Conversations;
use super::delivery;
use super::history::RecentHistory;
use super::worker::{commit_of, error_id, guarded, with_typing};
use crate::approvals::Approval;
use crate::store::{ApprovalWrite, PendingOutbound, TurnCommit};

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
            delivery::deliver(cx, key).await;
        }
    }
}

async fn settle_one(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory, approval: &Approval) {
    let token = approval.token.as_str();
    let outcome = match recent.load(&cx.store, key) {
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
            with_typing(cx, key, guarded(cx, key, settle)).await
        }
        Err(error) => Err(format!("I could not read this conversation's history: {error}")),
    };
    let (mut commit, record, followups) = match outcome {
        Ok(output) => commit_of(cx, recent, None, Some(&approval.message_id), output),
        Err(failure) => {
            let id = error_id();
            tracing::error!(conversation = %key, token, error_id = %id, %failure, "settling an approval failed");
            let text = format!("Something went wrong while finishing approval {token} (error id {id}): {failure}");
            (told_failure(approval, text), Default::default(), Default::default())
        }
    };
    // Decided where it was asked, the person is here to read the outcome;
    // decided elsewhere (another chat, the terminal, the timer), it follows them.
    let decided_here = approval
        .decision
        .as_ref()
        .and_then(|decision| decision.message.as_ref())
        .is_some_and(|(conversation, _)| conversation == key);
    if !decided_here {
        commit.follows = super::follow::following(cx, key);
    }
    // In a bridged group, what the approved (or denied) work gives stays
    // where it was asked, as the prompt and its answer do: it names the
    // command and what it printed.
    let committed = cx.store.commit_turn_durably(key, commit).await;
    if let Ok(committed) = &committed {
        delivery::deliver_elsewhere(cx, key, committed);
    }
    match &committed {
        Ok(_) => recent.committed(record),
        Err(error) => {
            // Owed still: settled at the next start (an approved run that
            // finished is not run again; its output was kept).
            recent.invalidate();
            tracing::error!(conversation = %key, token, %error, "cannot commit an approval's outcome");
        }
    }
    followups.run(cx, key, committed.is_ok());
}

/// Settles `approval` with only `text` for the person.
fn told_failure(approval: &Approval, text: String) -> TurnCommit {
    TurnCommit {
        replies: vec![PendingOutbound {
            drafts: Vec::new(),
            in_reply_to: Some(approval.message_id.clone()),
            body: OutboundBody::Text {
                text,
                kind: ReplyKind::Failure,
            },
        }],
        approvals: vec![ApprovalWrite::Settle {
            token: approval.token.clone(),
            run: None,
        }],
        ..TurnCommit::default()
    }
}
