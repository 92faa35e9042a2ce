//! The daemon's background tasks: gateway supervision, recovery at start,
//! the approvals' expiry timer and store maintenance, which also deletes
//! history, audit events and token usage records past their retention. (Periodic backups are
//! the heartbeat's: see [`crate::engine::loops::heartbeat`].)

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::retry::{Backoff, BackoffPolicy, Jitter, sleep_or_shutdown};
use passepartout_gateway::{GatewayId, Intake, Listen};
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::engine::conversations::{Conversations, Job};
use crate::engine::pipeline::usage_report::day_of;
use crate::foundation::clock::Clock;
use crate::gateways::restarts::Restarts;
use crate::model::media::{MediaPruning, MediaStore};
use crate::safety::approvals::Approvals;
use crate::store::Store;

/// How often maintenance (the dedupe sweep, retention) runs.
const MAINTENANCE_EVERY: Duration = Duration::from_secs(3600);

/// Longest wait before restarting a failed gateway, before its jitter.
const MAX_RESTART_DELAY: Duration = Duration::from_secs(64);

/// Runs a gateway's intake loop, restarting it with jittered exponential
/// backoff (a second, doubled per failure, and up to half a second more)
/// when it fails, until `stop` is cancelled; each restart is counted in
/// `restarts`.
pub async fn supervise(
    id: GatewayId,
    gateway: Arc<dyn Listen>,
    intake: Intake,
    restarts: Arc<Restarts>,
    stop: CancellationToken,
) {
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
                restarts.count(&id);
            }
        }
    }
}

/// Queues one job per conversation with journaled-but-unanswered messages
/// (the worker runs them all, oldest first) and a delivery for every
/// conversation with undelivered replies, as `store` has them; and wakes
/// the conversations owed the outcome of `approvals` decided before, and
/// those a hand-off waits for.
/// Never waits: every queue is new.
pub fn recover(conversations: &Arc<Conversations>, store: &Store, approvals: &Approvals) {
    let cx = conversations;
    let pending = match store.pending_conversations() {
        Ok(pending) => pending,
        Err(error) => {
            tracing::error!(%error, "cannot list pending messages");
            Vec::new()
        }
    };
    let outbox = store.outbox_conversations().unwrap_or_else(|error| {
        tracing::error!(%error, "cannot list the outbox");
        Vec::new()
    });
    // What a crash left of drafts whose turns had committed; a draft of a
    // turn still pending stays, for the turn to take over when it runs again.
    match store.sweep_drafts() {
        Ok(0) => {}
        Ok(swept) => tracing::debug!(swept, "records of handed-over drafts removed"),
        Err(error) => tracing::warn!(%error, "cannot sweep the records of drafts"),
    }
    match store.sweep_stops() {
        Ok(0) => {}
        Ok(swept) => tracing::debug!(swept, "marks of committed stopped turns removed"),
        Err(error) => tracing::warn!(%error, "cannot sweep the marks of stopped turns"),
    }
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
    match approvals.recover() {
        Ok(owed) => {
            for key in owed {
                cx.nudge(&key);
            }
        }
        Err(error) => tracing::error!(%error, "cannot read approvals to settle"),
    }
    // Hand-offs asked for and not yet carried over.
    match store.handoff_targets() {
        Ok(targets) => {
            for key in targets {
                cx.nudge(&key);
            }
        }
        Err(error) => tracing::error!(%error, "cannot read the hand-offs waiting"),
    }
}

/// Times out `approvals` nobody answered (also those that expired while
/// the daemon was down), and wakes their `conversations` to tell them,
/// until `stop` is cancelled.
pub async fn approval_expiry(approvals: Arc<Approvals>, conversations: Arc<Conversations>, stop: CancellationToken) {
    crate::safety::approvals::expiry::run(approvals, move |key| conversations.nudge(&key), stop).await;
}

/// How long the store keeps conversation history, the audit trail and the
/// daily token usage records; `None` keeps them for good.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Retention {
    pub history: Option<Duration>,
    pub audit: Option<Duration>,
    pub usage: Option<Duration>,
}

impl Retention {
    /// `memory.history_keep_days`, `audit.keep_days` and
    /// `memory.usage_keep_days` (0: for good).
    pub fn of(config: &Config) -> Self {
        let days = |n: u64| (n > 0).then(|| Duration::from_secs(n.saturating_mul(24 * 3600)));
        Self {
            history: days(config.memory.history_keep_days),
            audit: days(config.audit.keep_days),
            usage: days(config.memory.usage_keep_days),
        }
    }
}

/// What one round of retention deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    /// History turns.
    pub turns: usize,
    /// Audit events.
    pub events: usize,
    /// Daily usage records (a conversation's day, or the total's).
    pub usage_days: usize,
}

/// A history record's time: when the worker kept the turn
/// (`pipeline::TurnRecord::at_ms`); none for turns kept before it was.
fn kept_at(record: &[u8]) -> Option<u64> {
    #[derive(serde::Deserialize)]
    struct Dated {
        #[serde(default)]
        at_ms: Option<u64>,
    }
    serde_json::from_slice::<Dated>(record).ok()?.at_ms
}

/// Deletes history turns, audit events and usage records older than
/// `retention` says, by `clock`. Returns how many of each went.
pub async fn prune_retained(store: &Store, clock: &Clock, retention: Retention) -> Pruned {
    let now = clock.now_ms();
    let cutoff = |keep: Duration| now.saturating_sub(keep.as_millis() as u64);
    let mut pruned = Pruned::default();
    if let Some(keep) = retention.history {
        let (pruning, cutoff) = (store.clone(), cutoff(keep));
        match tokio::task::spawn_blocking(move || pruning.prune_history(cutoff, kept_at)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(turns)) => {
                tracing::info!(turns, "old history deleted");
                pruned.turns = turns;
            }
            Ok(Err(error)) => tracing::error!(%error, "history sweep failed"),
            Err(error) => tracing::error!(%error, "history sweep task failed"),
        }
    }
    if let Some(keep) = retention.audit {
        let (pruning, cutoff) = (store.clone(), cutoff(keep));
        match tokio::task::spawn_blocking(move || pruning.prune_audit(cutoff)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(events)) => {
                tracing::info!(events, "old audit events deleted");
                pruned.events = events;
            }
            Ok(Err(error)) => tracing::error!(%error, "audit sweep failed"),
            Err(error) => tracing::error!(%error, "audit sweep task failed"),
        }
    }
    if let Some(keep) = retention.usage {
        // A day's record goes once the whole day is past the cutoff.
        let (pruning, first_day) = (store.clone(), day_of(cutoff(keep)));
        match tokio::task::spawn_blocking(move || pruning.prune_usage(first_day)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(days)) => {
                tracing::info!(days, "old usage records deleted");
                pruned.usage_days = days;
            }
            Ok(Err(error)) => tracing::error!(%error, "usage sweep failed"),
            Err(error) => tracing::error!(%error, "usage sweep task failed"),
        }
    }
    pruned
}

/// Forgets platform message ids older than `dedupe_window`, hourly, so the
/// dedupe index stays as large as the window and no larger; likewise
/// approvals decided and told longer than `keep_decided` ago, by `clock`,
/// standing rules past their end,
/// history, audit events and usage records past their `retention`, and the photos in the
/// media store older than `media.keep_days`.
/// Stops when `stop` is cancelled.
pub async fn maintenance(
    store: Store,
    clock: Clock,
    stop: CancellationToken,
    dedupe_window: Duration,
    keep_decided: Duration,
    retention: Retention,
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
        let (now, pruning) = (clock.now_ms(), store.clone());
        match tokio::task::spawn_blocking(move || pruning.prune_standing_rules(now)).await {
            Ok(Ok(0)) => {}
            Ok(Ok(pruned)) => tracing::info!(pruned, "expired standing rules forgotten"),
            Ok(Err(error)) => tracing::error!(%error, "standing rules sweep failed"),
            Err(error) => tracing::error!(%error, "standing rules sweep task failed"),
        }
        prune_retained(&store, &clock, retention).await;
        if let Some(keep) = media.keep {
            let now = std::time::UNIX_EPOCH + Duration::from_millis(clock.now_ms());
            crate::model::media::prune(MediaStore::new(media.dir.clone()), keep, now).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::pipeline::TurnRecord;
    use crate::model::llm::ChatMessage;
    use crate::store::tests_support::{conversation, open_temp};
    use crate::store::{AuditEvent, Audited, ByProvider, Tokens, TurnCommit};
    use passepartout_gateway::UserId;

    const DAY_MS: u64 = 24 * 3600 * 1000;
    /// 2026-11-22 12:00 UTC.
    const NOW_MS: u64 = 1_795_348_800_000;

    fn keep_turn(store: &Store, text: &str, at_ms: Option<u64>) {
        let record = TurnRecord {
            messages: vec![ChatMessage::user(text)],
            at_ms,
            by: None,
        };
        let audit = at_ms.map(|at_ms| AuditEvent {
            at_ms,
            conversation: conversation("c"),
            what: Audited::ToolRan {
                tool: "current_time".into(),
                action: text.into(),
                requester: UserId::new("ann").unwrap(),
                is_error: false,
                approval: None,
                rule: None,
                confined: None,
            },
        });
        let turn = TurnCommit {
            history_record: Some(serde_json::to_vec(&record).unwrap()),
            audit: audit.into_iter().collect(),
            ..TurnCommit::default()
        };
        store.commit_turn(&conversation("c"), turn).unwrap();
    }

    fn history(store: &Store) -> Vec<String> {
        let turns: Vec<TurnRecord> = store.recent_turns(&conversation("c"), usize::MAX).unwrap();
        turns.into_iter().map(|t| t.messages[0].content.clone()).collect()
    }

    #[test]
    fn retention_comes_from_the_config_and_zero_keeps_for_good() {
        let mut config = Config::default();
        assert_eq!(
            Retention::of(&config),
            Retention {
                history: Some(Duration::from_secs(365 * 24 * 3600)),
                audit: Some(Duration::from_secs(180 * 24 * 3600)),
                usage: Some(Duration::from_secs(400 * 24 * 3600)),
            }
        );
        config.memory.history_keep_days = 0;
        config.memory.usage_keep_days = 0;
        config.audit.keep_days = 0;
        assert_eq!(Retention::of(&config), Retention::default());
    }

    // Paused time: the clock reads NOW_MS and moves only when told.
    #[tokio::test(start_paused = true)]
    async fn history_and_audit_past_their_days_are_deleted_by_the_clock() {
        let (_dir, store) = open_temp();
        keep_turn(&store, "forty days ago", Some(NOW_MS - 40 * DAY_MS));
        keep_turn(&store, "undated", None);
        keep_turn(&store, "ten days ago", Some(NOW_MS - 10 * DAY_MS));
        let retention = Retention {
            history: Some(Duration::from_secs(30 * 24 * 3600)),
            audit: Some(Duration::from_secs(5 * 24 * 3600)),
            usage: None,
        };
        let clock = Clock::at(NOW_MS);
        assert_eq!(prune_retained(&store, &clock, retention).await, pruned(1, 2, 0));
        assert_eq!(history(&store), ["undated", "ten days ago"]);
        assert!(store.audit_events(10).unwrap().is_empty());
        // Twenty-one days on, the ten-day-old turn is past thirty days too.
        tokio::time::advance(Duration::from_secs(21 * 24 * 3600)).await;
        assert_eq!(prune_retained(&store, &clock, retention).await, pruned(1, 0, 0));
        assert_eq!(history(&store), ["undated"], "an undated turn is never guessed old");
        assert_eq!(
            prune_retained(&store, &clock, Retention::default()).await,
            Pruned::default()
        );
    }

    fn pruned(turns: usize, events: usize, usage_days: usize) -> Pruned {
        Pruned {
            turns,
            events,
            usage_days,
        }
    }

    // Paused time: the clock reads NOW_MS and moves only when told.
    #[tokio::test(start_paused = true)]
    async fn usage_records_past_their_days_are_deleted_by_the_clock_whole_days_at_a_time() {
        let (_dir, store) = open_temp();
        let today = day_of(NOW_MS);
        let used = |tokens_in| {
            ByProvider::from([(
                "p".to_owned(),
                Tokens {
                    tokens_in,
                    tokens_out: 0,
                },
            )])
        };
        for days_ago in [401, 400, 399, 0] {
            store
                .add_usage(&conversation("c"), today - days_ago, &used(days_ago + 1))
                .unwrap();
        }
        let retention = Retention {
            usage: Some(Duration::from_secs(400 * 24 * 3600)),
            ..Retention::default()
        };
        let clock = Clock::at(NOW_MS);
        // Noon now: the cutoff falls at noon 400 days ago, inside that day, which stays whole.
        assert_eq!(prune_retained(&store, &clock, retention).await, pruned(0, 0, 1));
        let kept = |from| store.usage(None, from, today).unwrap()["p"].tokens_in;
        assert_eq!(kept(0), 401 + 400 + 1);
        // Half a day on, the cutoff passes midnight: that day goes too.
        tokio::time::advance(Duration::from_secs(12 * 3600)).await;
        assert_eq!(prune_retained(&store, &clock, retention).await, pruned(0, 0, 1));
        assert_eq!(kept(0), 400 + 1);
        assert_eq!(
            store.usage(Some(&conversation("c")), 0, today).unwrap()["p"].tokens_in,
            400 + 1,
            "the conversation's own records went"
        );
    }
}
