//! The expiry timer: one task that sleeps until the earliest deadline of a
//! pending approval. At its timeout it records the timeout and tells
//! whoever settles it; at its reminder (`approvals.remind_before_s` before)
//! it tells the conversation's worker, which sends the prompt once more.
//! The deadlines live in the store, so the timer is re-armed at start, and
//! an approval that expired while the daemon was down times out at once.

use std::sync::Arc;

use passepartout_gateway::ConversationKey;
use tokio_util::sync::CancellationToken;

use super::desk::timed_out;
use super::{Approvals, Due, Owed, Status};
use crate::store::{Decided, StoreError};

/// Longest sleep between two looks at the deadlines.
const RESCAN_MS: u64 = 60_000;

/// Runs until `stop`; `expired` is called with the conversation of each
/// approval that timed out or is to be reminded of.
pub async fn run(approvals: Arc<Approvals>, expired: impl Fn(ConversationKey), stop: CancellationToken) {
    loop {
        let next = match approvals.expire_due() {
            Ok((done, next)) => {
                for conversation in done {
                    expired(conversation);
                }
                next
            }
            Err(error) => {
                tracing::error!(%error, "cannot check approvals for expiry; retrying in a minute");
                Some(approvals.clock.now_ms() + 60_000)
            }
        };
        // Woken by each creation too; the cap is a backstop that makes a
        // missed wake-up cost a minute, not the deadline.
        let backstop = approvals.clock.now_ms() + RESCAN_MS;
        let wake = tokio::time::sleep_until(approvals.clock.instant_at(next.map_or(backstop, |ms| ms.min(backstop))));
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = approvals.created.notified() => {}
            _ = wake => {}
        }
    }
}

impl Approvals {
    /// Times out every pending approval past its deadline, and marks those
    /// due a reminder. Returns the conversations owed an outcome or a
    /// reminder, and the next deadline.
    pub fn expire_due(&self) -> Result<(Vec<ConversationKey>, Option<u64>), StoreError> {
        let now = self.clock.now_ms();
        let (due, mut next) = self.ledger.due(now);
        let mut done = Vec::new();
        let mut failed = None;
        for (what, token) in due {
            if what == Due::Reminder {
                // Read again when it is sent: only a pending one is reminded of.
                match self.store.approval(&token) {
                    Ok(Some(approval)) if approval.is_pending() && !approval.reminded => {
                        self.ledger.owe_reminder(approval.conversation.clone(), token);
                        done.push(approval.conversation);
                    }
                    Ok(_) => {}
                    Err(error) => {
                        tracing::error!(token = token.as_str(), %error, "cannot read an approval to remind of");
                    }
                }
                continue;
            }
            let decided = match self.store.approval(&token) {
                Ok(Some(approval)) if approval.status == Status::Pending => self.record(&token, timed_out(now)),
                // Decided meanwhile (or pruned): nothing to time out.
                Ok(_) => continue,
                Err(error) => Err(error),
            };
            match decided {
                Ok(Decided::Won(expired)) => {
                    tracing::info!(token = expired.token.as_str(), conversation = %expired.conversation, "approval timed out");
                    self.mark_unsettled(Owed {
                        conversation: expired.conversation.clone(),
                        token: expired.token,
                    });
                    done.push(expired.conversation);
                }
                Ok(Decided::Already(_)) => {}
                Err(error) => {
                    // The others still time out; this one is tried at the next look.
                    tracing::error!(token = token.as_str(), %error, "cannot record a timeout");
                    let retry = now + RESCAN_MS;
                    self.ledger.add_deadline(retry, Due::Expiry, token);
                    next = Some(next.map_or(retry, |n| n.min(retry)));
                    failed.get_or_insert(error);
                }
            }
        }
        done.sort();
        done.dedup();
        match failed {
            Some(error) if done.is_empty() => Err(error),
            _ => Ok((done, next)),
        }
    }
}
