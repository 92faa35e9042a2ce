//! Delivery of a conversation's outbox through its gateway, in order.
//!
//! Two kinds of caller deliver: the conversation's worker, right after each
//! commit, and a task started at once when the gateway reports the chat
//! reachable, a retry falls due or the conversation is woken
//! ([`Conversations::deliver_waiting`]) — never a job queued behind the worker's
//! running turn, so a committed reply does not wait for another turn. Each
//! holds the conversation's delivery lock for the whole pass, so an entry is
//! never sent by two tasks at once and replies leave in the order committed.
//!
//! What a gateway cannot take now stays in the outbox: a chat with no client
//! waits for the gateway to report it reachable; rate limits and transient
//! failures are retried after a delay; a permanent rejection is logged and
//! dropped.

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::retry::{BackoffPolicy, Jitter};
use passepartout_gateway::{ConversationKey, GatewayError, OutboundBody};

use super::{Conversations, Stats};

/// Longest wait between two delivery attempts.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(300);

/// Delivers what waits in `key`'s outbox, oldest first, holding its
/// delivery lock.
pub async fn deliver(cx: &Arc<Conversations>, key: &ConversationKey) {
    let _alone = cx.delivery_locks().lock(key).await;
    if cx.store.is_poisoned() {
        // What is in the outbox may not be on disk: showing it could promise
        // an answer that a restart takes back.
        return;
    }
    let entries = match cx.store.outbox_for(key) {
        Ok(entries) if entries.is_empty() => return,
        Ok(entries) => entries,
        Err(error) => {
            tracing::error!(conversation = %key, %error, "cannot read outbox");
            return;
        }
    };
    let Some(gateway) = cx.deliver.get(&key.gateway) else {
        tracing::warn!(conversation = %key, waiting = entries.len(), "gateway not running; replies wait in the outbox");
        return;
    };
    for entry in entries {
        if cx.store.is_poisoned() {
            return;
        }
        let result = gateway.deliver(&entry.outbound).await;
        let retry_in = match result {
            Ok(delivered) => {
                Stats::bump(&cx.stats.delivered);
                if let OutboundBody::ApprovalPrompt { token, .. } = &entry.outbound.body
                    && let Err(error) = cx.store.index_prompt(key, token, &delivered.message_ids)
                {
                    // The token answers still work; only replies to the prompt do not.
                    tracing::error!(conversation = %key, %error, "cannot remember where a prompt went");
                }
                if let Err(error) = cx.store.outbox_delivered(&entry) {
                    tracing::error!(conversation = %key, %error, "cannot clear delivered reply");
                }
                continue;
            }
            Err(GatewayError::NotConnected) => {
                tracing::debug!(conversation = %key, "no client connected; reply waits");
                return;
            }
            Err(GatewayError::Rejected { reason }) => {
                tracing::error!(conversation = %key, id = %entry.outbound.id, %reason, "reply rejected for good; dropped");
                if let Err(error) = cx.store.outbox_delivered(&entry) {
                    tracing::error!(conversation = %key, %error, "cannot clear rejected reply");
                }
                continue;
            }
            Err(GatewayError::Closed) => return,
            Err(GatewayError::RateLimited { retry_after }) => retry_after,
            Err(error) => {
                let attempts = cx.store.outbox_failed(&entry).unwrap_or(u32::MAX);
                tracing::warn!(conversation = %key, attempts, %error, "delivery failed; will retry");
                backoff(attempts)
            }
        };
        schedule(cx, key, retry_in);
        return;
    }
}

/// The wait after `attempts` failed deliveries: a second doubled per
/// attempt, up to a second more at random, capped.
fn backoff(attempts: u32) -> Duration {
    BackoffPolicy::new(Duration::from_secs(1), MAX_RETRY_DELAY)
        .with_jitter(Jitter::Add(Duration::from_secs(1)))
        .random_delay(attempts)
}

/// Arms one retry timer for `key`; while one is armed, further failures add
/// none, so a long outage cannot pile up timers.
fn schedule(cx: &Arc<Conversations>, key: &ConversationKey, delay: Duration) {
    if !cx.arm_retry(key) {
        return;
    }
    let cx_ref = cx.clone();
    let key = key.clone();
    cx.tracker.spawn(async move {
        tokio::select! {
            _ = cx_ref.draining.cancelled() => {}
            _ = tokio::time::sleep(delay) => {
                cx_ref.disarm_retry(&key);
                cx_ref.deliver_waiting(&key);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(0) < Duration::from_secs(2));
        assert!(backoff(3) >= Duration::from_secs(8));
        assert!(backoff(30) <= MAX_RETRY_DELAY);
    }
}
