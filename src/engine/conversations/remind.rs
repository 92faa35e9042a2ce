//! Reminding a conversation of an approval that still waits, shortly before
//! it times out: its prompt goes out once more (buttons and all), committed
//! together with the record that it went, so it goes once, across restarts.
//! Settling the approval later edits this prompt as it does the first.

use std::sync::Arc;

use passepartout_gateway::{ConversationKey, OutboundBody};

use super::Conversations;
use super::delivery;
use crate::store::{ApprovalWrite, PendingOutbound, TurnCommit};

/// Sends the reminders `key` is owed, if any.
pub async fn remind_of_approvals(cx: &Arc<Conversations>, key: &ConversationKey) {
    let due = match cx.approvals.take_reminders(key) {
        Ok(due) if due.is_empty() => return,
        Ok(due) => due,
        Err(error) => {
            // Armed again at the next start, since none was recorded as sent.
            tracing::error!(conversation = %key, %error, "cannot read approvals to remind of");
            return;
        }
    };
    for approval in due {
        let token = approval.token.clone();
        let commit = TurnCommit {
            replies: vec![PendingOutbound {
                drafts: Vec::new(),
                in_reply_to: Some(approval.message_id.clone()),
                body: OutboundBody::ApprovalPrompt {
                    token: token.clone(),
                    action: approval.action(),
                    text: cx.approvals.reminder_text(&approval),
                },
            }],
            approvals: vec![ApprovalWrite::Reminded { token: token.clone() }],
            ..TurnCommit::default()
        };
        match cx.store.commit_turn_durably(key, commit).await {
            Ok(_) => tracing::info!(conversation = %key, token = token.as_str(), "approval reminder sent"),
            Err(error) => {
                tracing::error!(conversation = %key, token = token.as_str(), %error, "cannot send an approval reminder");
            }
        }
    }
    delivery::deliver(cx, key).await;
}
