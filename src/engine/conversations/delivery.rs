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
//! dropped. A reply that follows a linked person goes on to their next
//! private chat instead (see `follow`). A reply split into parts is retried from the first part not
//! delivered: each part sent is recorded before the next is attempted
//! (see `progress`), and an entry is cleared durably before the next is
//! sent, so a crash repeats at most the one message whose confirmation it
//! interrupted.

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::retry::{BackoffPolicy, Jitter};
use passepartout_gateway::{ConversationKey, Deliver, GatewayError, MessageId, OutboundBody, Resume};

use super::progress::PartRecorder;
use super::relay::Sending;
use super::{Conversations, Counted};
use crate::store::OutboxEntry;

/// Longest wait between two delivery attempts.
const MAX_RETRY_DELAY: Duration = Duration::from_secs(300);

/// Delivers what waits in `key`'s outbox, oldest first, holding its
/// delivery lock.
pub async fn deliver(cx: &Arc<Conversations>, key: &ConversationKey) {
    let _alone = cx.delivery_locks().lock(key).await;
    let Some(entries) = waiting(cx, key) else {
        return;
    };
    let Some(gateway) = cx.deliver_half(&key.gateway) else {
        without_gateway(cx, key, &entries).await;
        return;
    };
    for entry in entries {
        if cx.store.is_poisoned() {
            return;
        }
        // What went out before, in this pass or an earlier one, is known
        // durably before the next goes: a crash can repeat only the message
        // in flight.
        if let Some(ticket) = cx.take_cleared(key)
            && let Err(error) = cx.store.durable_through(ticket).await
        {
            tracing::error!(conversation = %key, %error, "cannot make the delivered replies durable");
            return;
        }
        match send(cx, key, gateway.as_ref(), entry).await {
            Sent::Done => {}
            Sent::Waits => return,
            Sent::RetryIn(delay) => {
                schedule(cx, key, delay);
                return;
            }
        }
    }
}

/// What waits in `key`'s outbox; none when nothing does, or it may not
/// be shown.
fn waiting(cx: &Arc<Conversations>, key: &ConversationKey) -> Option<Vec<OutboxEntry>> {
    if cx.store.is_poisoned() {
        // What is in the outbox may not be on disk: showing it could promise
        // an answer that a restart takes back.
        return None;
    }
    match cx.store.outbox_for(key) {
        Ok(entries) if entries.is_empty() => None,
        Ok(entries) => Some(entries),
        Err(error) => {
            tracing::error!(conversation = %key, %error, "cannot read outbox");
            None
        }
    }
}

/// With `key`'s gateway not running, what follows a person goes on to
/// their next chat; the rest waits.
async fn without_gateway(cx: &Arc<Conversations>, key: &ConversationKey, entries: &[OutboxEntry]) {
    let mut waiting = 0;
    for entry in entries {
        if !super::follow::go_on(cx, key, entry).await {
            waiting += 1;
        }
    }
    if waiting > 0 {
        tracing::warn!(conversation = %key, waiting, "gateway not running; replies wait in the outbox");
    }
}

/// What became of an entry the pass tried to send.
enum Sent {
    /// Delivered, dropped, or gone on elsewhere: the pass goes on.
    Done,
    /// The chat cannot take it now, and will say when it can.
    Waits,
    /// To be tried again after this long.
    RetryIn(Duration),
}

/// Sends `entry` through `gateway`, from its first part not sent, and
/// clears it once delivered.
async fn send(cx: &Arc<Conversations>, key: &ConversationKey, gateway: &dyn Deliver, entry: OutboxEntry) -> Sent {
    let mapped = match super::relay::as_sent(cx, key, &entry) {
        Sending::AsIs => None,
        Sending::Mapped(outbound) => Some(*outbound),
        Sending::Nothing => {
            tracing::debug!(conversation = %key, id = %entry.outbound.id, "an edit or deletion of a copy never made here; dropped");
            if let Err(error) = cx.store.outbox_delivered(&entry) {
                tracing::error!(conversation = %key, %error, "cannot clear a relay with nothing to do");
            }
            cx.note_cleared(key);
            return Sent::Done;
        }
    };
    let recorder = PartRecorder::new(&cx.store, entry.clone());
    let resume = Resume {
        first_part: entry.parts_sent,
        progress: &recorder,
    };
    let result = gateway
        .deliver_from(mapped.as_ref().unwrap_or(&entry.outbound), resume)
        .await;
    // With the parts this attempt sent, so a retry starts after them.
    let entry = recorder.into_entry();
    if entry.relay.is_some() {
        cx.relay_outcome(key, result.as_ref().err().map(ToString::to_string));
    }
    match result {
        Err(error) if entry.follows.is_some() && super::follow::gives_up(&error, entry.attempts) => {
            if super::follow::go_on(cx, key, &entry).await {
                tracing::info!(conversation = %key, %error, "the gateway cannot deliver a reply; it went on");
                return Sent::Done;
            }
            failed(cx, key, &entry, error).await
        }
        Ok(delivered) => {
            let mut message_ids = entry.part_ids.clone();
            message_ids.extend(delivered.message_ids);
            delivered_to(cx, key, &entry, &message_ids).await;
            Sent::Done
        }
        Err(error) => failed(cx, key, &entry, error).await,
    }
}

/// `entry` reached `key` as `message_ids`: cleared, and remembered where
/// replies to it are mapped.
async fn delivered_to(cx: &Arc<Conversations>, key: &ConversationKey, entry: &OutboxEntry, message_ids: &[MessageId]) {
    cx.count(Counted::Delivered);
    super::relay::sent(cx, key, entry, message_ids);
    if let OutboundBody::ApprovalPrompt { token, .. } = &entry.outbound.body
        && let Err(error) = cx.store.index_prompt(key, token, message_ids)
    {
        // The token answers still work; only replies to the prompt do not.
        tracing::error!(conversation = %key, %error, "cannot remember where a prompt went");
    }
    if let Err(error) = cx.store.outbox_delivered(entry) {
        tracing::error!(conversation = %key, %error, "cannot clear delivered reply");
    }
    cx.note_cleared(key);
    forget_copy(&entry.outbound.body).await;
}

/// What follows the gateway's `error` for `entry`: a rejection for good
/// drops it; the rest wait or are retried.
async fn failed(cx: &Arc<Conversations>, key: &ConversationKey, entry: &OutboxEntry, error: GatewayError) -> Sent {
    match error {
        GatewayError::NotConnected => {
            tracing::debug!(conversation = %key, "no client connected; reply waits");
            Sent::Waits
        }
        error if error.is_permanent() => {
            tracing::error!(conversation = %key, id = %entry.outbound.id, %error, "reply rejected for good; dropped");
            if let Err(error) = cx.store.outbox_delivered(entry) {
                tracing::error!(conversation = %key, %error, "cannot clear rejected reply");
            }
            cx.note_cleared(key);
            forget_copy(&entry.outbound.body).await;
            Sent::Done
        }
        GatewayError::Closed => Sent::Waits,
        GatewayError::RateLimited { retry_after } => Sent::RetryIn(retry_after),
        error => {
            let attempts = cx.store.outbox_failed(entry).unwrap_or(u32::MAX);
            tracing::warn!(conversation = %key, attempts, %error, "delivery failed; will retry");
            Sent::RetryIn(backoff(attempts))
        }
    }
}

/// Starts, each in a task of its own, the delivery of what a commit in
/// `key` put in other chats' outboxes (a bridge's copies, what follows a
/// linked person): `key`'s own is its worker's to deliver.
pub fn deliver_elsewhere(cx: &Arc<Conversations>, key: &ConversationKey, committed: &[OutboxEntry]) {
    let mut started: Vec<&ConversationKey> = Vec::new();
    for entry in committed {
        let to = &entry.outbound.conversation;
        if to != key && !started.contains(&to) {
            cx.deliver_waiting(to);
            started.push(to);
        }
    }
}

/// Removes the copy a file was sent from, once it is done with: delivered
/// or dropped (see `OutboundFile::temporary`).
async fn forget_copy(body: &OutboundBody) {
    let OutboundBody::File(file) = body else {
        return;
    };
    if !file.temporary {
        return;
    }
    let copy = std::path::Path::new(&file.path);
    if let Err(error) = tokio::fs::remove_file(copy).await {
        tracing::warn!(path = %copy.display(), %error, "cannot remove a file copied for sending");
    }
    // Each copy has a folder of its own; it is empty now.
    if let Some(folder) = copy.parent() {
        let _ = tokio::fs::remove_dir(folder).await;
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
    cx.lifecycle.spawn(async move {
        tokio::select! {
            _ = cx_ref.lifecycle.draining().cancelled() => {}
            _ = tokio::time::sleep(delay) => {
                cx_ref.disarm_retry(&key);
                cx_ref.deliver_waiting(&key);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use passepartout_gateway::{ChatId, Deliver, Delivered, GatewayId, MessageId, Outbound, ReplyKind};

    use super::*;
    use crate::config::PipelineConfig;
    use crate::foundation::lifecycle::Lifecycle;
    use crate::store::{PendingOutbound, Store, TurnCommit};

    /// A gateway that takes every message and notes, as each is sent, the
    /// last write ticket the store has made durable.
    struct Noting {
        store: Store,
        flushed_at_send: Mutex<Vec<u64>>,
    }

    #[async_trait]
    impl Deliver for Noting {
        async fn deliver(&self, _message: &Outbound) -> Result<Delivered, GatewayError> {
            let mut noted = self.flushed_at_send.lock().unwrap();
            noted.push(self.store.flushed_through());
            let id = MessageId::new(format!("p{}", noted.len())).unwrap();
            Ok(Delivered { message_ids: vec![id] })
        }
    }

    fn reply(text: &str) -> TurnCommit {
        TurnCommit {
            replies: vec![PendingOutbound {
                drafts: Vec::new(),
                in_reply_to: None,
                body: OutboundBody::Text {
                    text: text.into(),
                    kind: ReplyKind::Answer,
                },
            }],
            ..TurnCommit::default()
        }
    }

    /// A reply cleared at the end of one delivery pass is durable before
    /// the next pass sends anything: a crash after that send cannot bring
    /// the first reply back to be sent again.
    #[tokio::test]
    async fn a_reply_cleared_in_one_pass_is_durable_before_the_next_pass_sends() {
        let (_dir, store) = crate::store::tests_support::open_temp();
        let key = ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("c").unwrap());
        let gateway = Arc::new(Noting {
            store: store.clone(),
            flushed_at_send: Mutex::default(),
        });
        let outlets = super::super::Outlets {
            deliver: [(key.gateway.clone(), gateway.clone() as Arc<dyn Deliver>)].into(),
            ..Default::default()
        };
        let cx =
            super::super::testing::with_outlets(store.clone(), PipelineConfig::default(), Lifecycle::new(), outlets);

        store.commit_turn(&key, reply("first")).unwrap();
        deliver(&cx, &key).await;
        assert!(store.outbox_for(&key).unwrap().is_empty(), "the first went out");
        // Every write so far, the first's clearing among them.
        let cleared = store.write_ticket();

        store.commit_turn(&key, reply("second")).unwrap();
        deliver(&cx, &key).await;
        let noted = gateway.flushed_at_send.lock().unwrap().clone();
        assert_eq!(noted.len(), 2, "{noted:?}");
        assert!(
            noted[1] >= cleared,
            "the second was sent before the first's clearing was durable: {noted:?}, cleared at {cleared}"
        );
    }

    #[test]
    fn backoff_grows_and_is_capped() {
        assert!(backoff(0) < Duration::from_secs(2));
        assert!(backoff(3) >= Duration::from_secs(8));
        assert!(backoff(30) <= MAX_RETRY_DELAY);
    }
}
