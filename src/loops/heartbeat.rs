//! The heartbeat: the built-in loop handler that keeps the daemon's
//! housekeeping going. Each beat times out approvals past their deadline (a
//! safety net beside the approvals' own expiry timer, which a lost wake-up
//! could delay), writes the periodic store backup once `backup_every_s` has
//! passed since the last one, and counts itself. The loop runtime
//! ([`crate::loops`]) decides when it beats; [`crate::loops::daemon`] calls it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use passepartout_gateway::ConversationKey;
use tokio::time::Instant;

use crate::approvals::Approvals;
use crate::clock::Clock;
use crate::store::{BackupInfo, Store, StoreError};

/// The name of the heartbeat's loop and of its handler, which the config
/// keeps from its loops.
pub const HEARTBEAT: &str = crate::config::HEARTBEAT_LOOP;

/// Where and how often the periodic backup is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BackupPlan {
    pub dir: PathBuf,
    /// Backups kept; older ones are deleted.
    pub keep: usize,
    /// The time between two backups.
    pub every: Duration,
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

/// The heartbeat handler's state: what it works on, when it last backed
/// up, how often it has beaten.
pub struct Heartbeat {
    approvals: Arc<Approvals>,
    store: Store,
    /// Names the backups.
    clock: Clock,
    backups: Option<Backups>,
    beats: AtomicU64,
}

/// The backup plan and when the last backup was attempted.
struct Backups {
    plan: BackupPlan,
    /// Starts at the heartbeat's creation: as before, the first backup is
    /// written `every` after the daemon starts, not at once.
    last: Mutex<Instant>,
}

impl Backups {
    /// Whether a backup is due at `now`; if so, marks it attempted, so that
    /// a failing backup is retried after `every`, not at every beat.
    fn take_due(&self, now: Instant) -> bool {
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        if now.saturating_duration_since(*last) < self.plan.every {
            return false;
        }
        *last = now;
        true
    }
}

impl Heartbeat {
    /// A heartbeat sweeping `approvals` and backing `store` up as `backups`
    /// says (never, if `None`), naming the backups by `clock`.
    pub fn new(approvals: Arc<Approvals>, store: Store, clock: Clock, backups: Option<BackupPlan>) -> Self {
        Self {
            approvals,
            store,
            clock,
            backups: backups.map(|plan| Backups {
                plan,
                last: Mutex::new(Instant::now()),
            }),
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
            Some(backups) if backups.take_due(Instant::now()) => self.backup(&backups.plan).await.map(Some),
            _ => Ok(None),
        };
        sweep?;
        beat.backup = backup?;
        Ok(beat)
    }

    async fn backup(&self, plan: &BackupPlan) -> Result<BackupInfo, HeartbeatError> {
        let (store, dir, keep, clock) = (self.store.clone(), plan.dir.clone(), plan.keep, self.clock);
        let info = tokio::task::spawn_blocking(move || store.backup(&dir, keep, &clock))
            .await
            .map_err(HeartbeatError::BackupTask)?
            .map_err(HeartbeatError::Backup)?;
        tracing::info!(path = %info.path.display(), bytes = info.bytes, entries = info.entries, "backup written");
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::store::tests_support::open_temp;

    /// 2026-11-22 12:00:00 UTC.
    const NOON: u64 = 1_795_867_200_000;

    /// A heartbeat whose time follows tokio's, as these tests advance it.
    fn heartbeat(store: &Store, backups: Option<BackupPlan>) -> Heartbeat {
        let config = Config::default();
        let clock = Clock::at(NOON);
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

    #[tokio::test(start_paused = true)]
    async fn a_backup_is_written_once_every_period_has_passed() {
        let (dir, store) = open_temp();
        let backup_dir = dir.path().join("backups");
        let every = Duration::from_secs(600);
        let plan = BackupPlan {
            dir: backup_dir.clone(),
            keep: 5,
            every,
        };
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
        let plan = BackupPlan {
            dir: blocked.clone(),
            keep: 5,
            every,
        };
        let heartbeat = heartbeat(&store, Some(plan));
        tokio::time::advance(every).await;
        let error = heartbeat.beat(|_| {}).await.unwrap_err();
        assert!(matches!(error, HeartbeatError::Backup(_)), "{error}");
        assert!(heartbeat.beat(|_| {}).await.is_ok(), "not retried at the next beat");
        tokio::time::advance(every).await;
        assert!(matches!(heartbeat.beat(|_| {}).await, Err(HeartbeatError::Backup(_))));
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
