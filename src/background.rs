//! The daemon's background tasks: gateway supervision, recovery at start,
//! the approvals' expiry timer and store maintenance. (Periodic backups are
//! the heartbeat's: see [`crate::loops::heartbeat`].)

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::retry::{Backoff, BackoffPolicy, Jitter, sleep_or_shutdown};
use passepartout_gateway::{GatewayId, Intake, Listen};
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::conversations::{Conversations, Job};
use crate::media::{MediaPruning, MediaStore};
use crate::store::Store;

/// How often maintenance (the dedupe sweep) runs.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(3600);

/// Longest wait before restarting a failed gateway, before its jitter.
const MAX_RESTART_DELAY: Duration = Duration::from_secs(64);

/// Runs a gateway's intake loop, restarting it with jittered exponential
/// backoff (a second, doubled per failure, and up to half a second more)
/// when it fails, until `stop` is cancelled.
pub async fn supervise(id: GatewayId, gateway: Arc<dyn Listen>, intake: Intake, stop: CancellationToken) {
    let policy = BackoffPolicy::new(Duration::from_secs(1), MAX_RESTART_DELAY);
    let mut backoff = Backoff::with_policy(policy.with_jitter(Jitter::AddBeyond(Duration::from_millis(500))));
    loop {
        match gateway.listen(intake.clone(), stop.clone()).await {
            Ok(()) => return,
            Err(error) => {
                let delay = backoff.next_delay();
                tracing::error!(gateway = %id, %error, retry_in_ms = delay.as_millis() as u64, "gateway failed; restarting");
                if sleep_or_shutdown(delay, &stop).await {
                    return;
                }
            }
        }
    }
}

/// Queues one job per conversation with journaled-but-unanswered messages
/// (the worker runs them all, oldest first) and a delivery for every
/// conversation with undelivered replies. Never waits: every queue is new.
pub fn recover(conversations: &Arc<Conversations>) {
    let cx = conversations;
    let pending = match cx.store.pending_conversations() {
        Ok(pending) => pending,
        Err(error) => {
            tracing::error!(%error, "cannot list pending messages");
            Vec::new()
        }
    };
    let outbox = cx.store.outbox_conversations().unwrap_or_else(|error| {
        tracing::error!(%error, "cannot list the outbox");
        Vec::new()
    });
    if !pending.is_empty() || !outbox.is_empty() {
        tracing::info!(
            pending = pending.len(),
            conversations_with_replies = outbox.len(),
            "recovering"
        );
    }
    for (key, newest) in pending {
        match cx.try_reserve(&key) {
            Ok(permit) => {
                permit.send(Job::Turn(newest));
            }
            Err(_) => tracing::error!(conversation = %key, "cannot queue recovered messages"),
        }
    }
    for key in outbox {
        cx.nudge(&key);
    }
    // Approvals decided before the restart whose outcome was not yet told
    // (an approved action not yet run runs now, once).
    match cx.approvals.recover() {
        Ok(owed) => {
            for key in owed {
                cx.nudge(&key);
            }
        }
        Err(error) => tracing::error!(%error, "cannot read approvals to settle"),
    }
}

/// Times out approvals nobody answered (also those that expired while the
/// daemon was down), and wakes their conversations to tell them.
pub async fn approval_expiry(conversations: Arc<Conversations>) {
    let approvals = conversations.approvals.clone();
    let stop = conversations.draining.clone();
    crate::approvals::expiry::run(approvals, move |key| conversations.nudge(&key), stop).await;
}

/// Forgets platform message ids older than `dedupe_window`, hourly, so the
/// dedupe index stays as large as the window and no larger; likewise
/// approvals decided and told longer than `keep_decided` ago, by `clock`,
/// and the photos in the media store older than `media.keep_days`.
/// Stops when `stop` is cancelled.
pub async fn maintenance(
    store: Store,
    clock: Clock,
    stop: CancellationToken,
    dedupe_window: Duration,
    keep_decided: Duration,
    media: MediaPruning,
) {
    // Not at start: a start should be quick, and nothing is old yet.
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + MAINTENANCE_EVERY, MAINTENANCE_EVERY);
    loop {
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let cutoff = clock.now_ms().saturating_sub(dedupe_window.as_millis() as u64);
        let pruning = store.clone();
        match tokio::task::spawn_blocking(move || pruning.prune_dedupe(cutoff)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(pruned)) => tracing::info!(pruned, "old message ids forgotten"),
            Ok(Err(error)) => tracing::error!(%error, "dedupe sweep failed"),
            Err(error) => tracing::error!(%error, "dedupe sweep task failed"),
        }
        let cutoff = clock.now_ms().saturating_sub(keep_decided.as_millis() as u64);
        let pruning = store.clone();
        match tokio::task::spawn_blocking(move || pruning.prune_approvals(cutoff)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(pruned)) => tracing::info!(pruned, "old decided approvals forgotten"),
            Ok(Err(error)) => tracing::error!(%error, "approvals sweep failed"),
            Err(error) => tracing::error!(%error, "approvals sweep task failed"),
        }
        if let Some(keep) = media.keep {
            let now = std::time::UNIX_EPOCH + Duration::from_millis(clock.now_ms());
            crate::media::prune(MediaStore::new(media.dir.clone()), keep, now).await;
        }
    }
}
