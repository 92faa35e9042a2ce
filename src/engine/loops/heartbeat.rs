//! The heartbeat: the built-in loop handler that keeps the daemon's
//! housekeeping going. Each beat times out approvals past their deadline (a
//! safety net beside the approvals' own expiry timer, which a lost wake-up
//! could delay), writes the periodic store backup once it is due, and counts
//! itself. When the next backup is due is kept in the store
//! ([`crate::store::BackupTimes`]), so a restart does not push it back. The loop runtime
//! ([`crate::engine::loops`]) decides when it beats; [`crate::engine::loops::daemon`] calls it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use passepartout_gateway::ConversationKey;

use crate::foundation::clock::Clock;
use crate::safety::approvals::Approvals;
use crate::store::{BackupInfo, KeptBeside, Store, StoreError};

/// The name of the heartbeat's loop and of its handler, which the config
/// keeps from its loops.
pub const HEARTBEAT: &str = crate::config::HEARTBEAT_LOOP;

/// Where and how often the periodic backup is written, and what it copies
/// besides the store.
#[derive(Clone)]
pub struct BackupPlan {
    pub dir: PathBuf,
    /// Backups kept; older ones are deleted.
    pub keep: usize,
    /// The time between two backups.
    pub every: Duration,
    /// The folders kept beside the store (a gateway's keys), copied next
    /// to each backup.
    pub beside: Vec<Arc<dyn KeptBeside>>,
}

impl BackupPlan {
    /// The plan `[store]` sets (none when `backup_every_s` is 0), copying
    /// `beside` next to each backup.
    pub fn configured(config: &crate::config::Config, beside: Vec<Arc<dyn KeptBeside>>) -> Option<Self> {
        (config.store.backup_every_s > 0).then(|| Self {
            dir: config.backup_dir(),
            keep: config.store.backups_kept,
            every: Duration::from_secs(config.store.backup_every_s),
            beside,
        })
    }
}

/// Why a beat did not do all it should have.
#[derive(Debug, thiserror::Error)]
pub enum HeartbeatError {
    #[error("approvals expiry sweep failed: {0}")]
    Expiry(#[source] StoreError),
    #[error("backup failed: {0}")]
    Backup(#[source] StoreError),
    #[error("backup task failed: {0}")]
    BackupTask(#[source] tokio::task::JoinError),
}

/// What one beat did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Beat {
    /// Approvals it timed out.
    pub expired: usize,
    /// The backup it wrote, if one was due.
    pub backup: Option<BackupInfo>,
}

/// The heartbeat handler's state: what it works on, how often it has
/// beaten. When the next backup is due is in the store.
pub struct Heartbeat {
    approvals: Arc<Approvals>,
    store: Store,
    /// Names the backups and says when they are due.
    clock: Clock,
    backups: Option<BackupPlan>,
    /// When the heartbeat was made, by `clock`.
    started_ms: u64,
    beats: AtomicU64,
}

/// Whether a backup is due at `now_ms`; if so, plans the next one a period
/// later, so that a failing backup is retried after `every`, not at every
/// beat. With no plan stored yet (the first run ever), the first backup is
/// due `every` after `started_ms`, the heartbeat's start: as before, not at
/// once. After that, a restart keeps the stored plan.
fn take_due(store: &Store, every: Duration, started_ms: u64, now_ms: u64) -> Result<bool, StoreError> {
    let every = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
    let due = match store.backup_times()?.next_ms {
        Some(due) => due,
        None => {
            let first = started_ms.saturating_add(every);
            store.plan_backup(first)?;
            first
        }
    };
    if now_ms < due {
        return Ok(false);
    }
    store.plan_backup(now_ms.saturating_add(every))?;
    Ok(true)
}

impl Heartbeat {
    /// A heartbeat sweeping `approvals` and backing `store` up as `backups`
    /// says (never, if `None`), naming the backups by `clock`.
    pub fn new(approvals: Arc<Approvals>, store: Store, clock: Clock, backups: Option<BackupPlan>) -> Self {
        Self {
            approvals,
            store,
            clock,
            backups,
            started_ms: clock.now_ms(),
            beats: AtomicU64::new(0),
        }
    }

    /// How many beats have run, failed ones included.
    pub fn beats(&self) -> u64 {
        self.beats.load(Ordering::Relaxed)
    }

    /// One beat; `expired` is called with the conversation of each approval
    /// that timed out, to tell it. A failing sweep does not keep the backup
    /// from being written; the first error is returned.
    pub async fn beat(&self, expired: impl Fn(ConversationKey)) -> Result<Beat, HeartbeatError> {
        self.beats.fetch_add(1, Ordering::Relaxed);
        let mut beat = Beat::default();
        let sweep = match self.approvals.expire_due() {
            Ok((done, _next)) => {
                beat.expired = done.len();
                for conversation in done {
                    expired(conversation);
                }
                Ok(())
            }
            Err(error) => Err(HeartbeatError::Expiry(error)),
        };
        let backup = match &self.backups {
            Some(plan) => match take_due(&self.store, plan.every, self.started_ms, self.clock.now_ms()) {
                Ok(true) => self.backup(plan).await.map(Some),
                Ok(false) => Ok(None),
                Err(error) => Err(HeartbeatError::Backup(error)),
            },
            None => Ok(None),
        };
        sweep?;
        beat.backup = backup?;
        Ok(beat)
    }

    async fn backup(&self, plan: &BackupPlan) -> Result<BackupInfo, HeartbeatError> {
        let (store, dir, keep, clock) = (self.store.clone(), plan.dir.clone(), plan.keep, self.clock);
        let beside = plan.beside.clone();
        let written = clock.now_ms();
        let info = tokio::task::spawn_blocking(move || store.backup_with(&dir, keep, &clock, &beside))
            .await
            .map_err(HeartbeatError::BackupTask)?
            .map_err(HeartbeatError::Backup)?;
        self.store.backup_written(written).map_err(HeartbeatError::Backup)?;
        tracing::info!(path = %info.path.display(), bytes = info.bytes, entries = info.entries, "backup written");
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::config::Config;
    use crate::store::tests_support::open_temp;

    /// 2026-11-22 12:00:00 UTC.
    const NOON: u64 = 1_795_867_200_000;

    /// A heartbeat whose time follows tokio's, as these tests advance it.
    fn heartbeat(store: &Store, backups: Option<BackupPlan>) -> Heartbeat {
        heartbeat_on(store, Clock::at(NOON), backups)
    }

    /// A heartbeat reading `clock`: one clock for a daemon's successive runs.
    fn heartbeat_on(store: &Store, clock: Clock, backups: Option<BackupPlan>) -> Heartbeat {
        let config = Config::default();
        let approvals = Arc::new(Approvals::new(
            store.clone(),
            crate::gateways::policy(&config),
            clock,
            &config.approvals,
        ));
        Heartbeat::new(approvals, store.clone(), clock, backups)
    }

    fn backups_in(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir).map(|entries| entries.count()).unwrap_or(0)
    }

    /// Backups every `every` into `dir`, five kept.
    fn keep_five(dir: &Path, every: Duration) -> BackupPlan {
        BackupPlan {
            dir: dir.to_path_buf(),
            keep: 5,
            every,
            beside: Vec::new(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_backup_is_written_once_every_period_has_passed() {
        let (dir, store) = open_temp();
        let backup_dir = dir.path().join("backups");
        let every = Duration::from_secs(600);
        let plan = keep_five(&backup_dir, every);
        let heartbeat = heartbeat(&store, Some(plan));
        let beat = heartbeat.beat(|_| {}).await.unwrap();
        assert_eq!(beat.backup, None, "not at start");
        tokio::time::advance(every - Duration::from_secs(1)).await;
        assert_eq!(
            heartbeat.beat(|_| {}).await.unwrap().backup,
            None,
            "not before it is due"
        );
        assert_eq!(backups_in(&backup_dir), 0);
        tokio::time::advance(Duration::from_secs(1)).await;
        let written = heartbeat.beat(|_| {}).await.unwrap().backup.expect("due now");
        assert!(written.path.starts_with(&backup_dir));
        assert_eq!(backups_in(&backup_dir), 1);
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(
            heartbeat.beat(|_| {}).await.unwrap().backup,
            None,
            "the period starts again"
        );
        assert_eq!(heartbeat.beats(), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn a_failed_backup_is_reported_and_retried_a_period_later() {
        let (dir, store) = open_temp();
        // A file where the backup directory should be: the backup fails.
        let blocked = dir.path().join("blocked");
        std::fs::write(&blocked, b"not a directory").unwrap();
        let every = Duration::from_secs(60);
        let plan = keep_five(&blocked, every);
        let heartbeat = heartbeat(&store, Some(plan));
        tokio::time::advance(every).await;
        let error = heartbeat.beat(|_| {}).await.unwrap_err();
        assert!(matches!(error, HeartbeatError::Backup(_)), "{error}");
        assert!(heartbeat.beat(|_| {}).await.is_ok(), "not retried at the next beat");
        tokio::time::advance(every).await;
        assert!(matches!(heartbeat.beat(|_| {}).await, Err(HeartbeatError::Backup(_))));
    }

    #[tokio::test(start_paused = true)]
    async fn restarts_more_often_than_the_period_do_not_push_the_backup_back() {
        let (dir, store) = open_temp();
        let backup_dir = dir.path().join("backups");
        let every = Duration::from_secs(3600);
        let plan = keep_five(&backup_dir, every);
        let clock = Clock::at(NOON);
        for _run in 0..3 {
            let heartbeat = heartbeat_on(&store, clock, Some(plan.clone()));
            assert_eq!(heartbeat.beat(|_| {}).await.unwrap().backup, None);
            tokio::time::advance(every / 3).await;
        }
        // Three runs of a third of the period each: the backup is due at the
        // next start's first beat.
        let heartbeat = heartbeat_on(&store, clock, Some(plan.clone()));
        assert!(
            heartbeat.beat(|_| {}).await.unwrap().backup.is_some(),
            "due at the first beat"
        );
        assert_eq!(backups_in(&backup_dir), 1);
        let times = store.backup_times().unwrap();
        assert_eq!(times.last_ms, Some(NOON + 3 * (every / 3).as_millis() as u64));
        assert_eq!(times.next_ms, Some(times.last_ms.unwrap() + every.as_millis() as u64));
    }

    #[tokio::test(start_paused = true)]
    async fn a_backup_that_fell_due_while_the_daemon_was_down_runs_at_the_first_beat() {
        let (dir, store) = open_temp();
        let backup_dir = dir.path().join("backups");
        let every = Duration::from_secs(600);
        let plan = keep_five(&backup_dir, every);
        let clock = Clock::at(NOON);
        let first = heartbeat_on(&store, clock, Some(plan.clone()));
        assert_eq!(first.beat(|_| {}).await.unwrap().backup, None);
        drop(first);
        tokio::time::advance(every * 5).await;
        let restarted = heartbeat_on(&store, clock, Some(plan));
        assert!(restarted.beat(|_| {}).await.unwrap().backup.is_some());
        assert_eq!(
            restarted.beat(|_| {}).await.unwrap().backup,
            None,
            "once, not five times"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_plan_nothing_is_backed_up() {
        let (_dir, store) = open_temp();
        let heartbeat = heartbeat(&store, None);
        tokio::time::advance(Duration::from_secs(365 * 24 * 3600)).await;
        assert_eq!(heartbeat.beat(|_| {}).await.unwrap(), Beat::default());
        assert_eq!(heartbeat.beats(), 1);
    }
}
