//! The daemon's side of the loop runtime: [`DaemonLoops`] implements
//! [`Iterate`] by running built-in handlers (the [`heartbeat`](crate::heartbeat)),
//! and [`start`] builds the [`Registry`] the core owns and spawns the
//! heartbeat loop. Task loops (a prompt run through the pipeline) are not
//! wired yet: their iterations fail, saying so, rather than pretend.

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;

use crate::config::Config;
use crate::core::Core;
use crate::heartbeat::{BackupPlan, HEARTBEAT, Heartbeat};
use crate::loops::iterate::{Iterate, IterateError, Iteration, Report};
use crate::loops::registry::{Registry, SpawnError};
use crate::loops::sleep::SleepBounds;
use crate::loops::spec::{BadName, Body, LoopName, LoopSpec, Start};
use crate::schedules::{BookError, Configured, Schedules};

/// A built-in handler, by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handler {
    Heartbeat,
}

impl Handler {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            HEARTBEAT => Some(Handler::Heartbeat),
            _ => None,
        }
    }
}

/// Why the daemon could not run an iteration.
#[derive(Debug, thiserror::Error)]
pub enum DaemonIterateError {
    #[error("task loops are not wired to the pipeline yet; loop \"{name}\" cannot run its prompt")]
    TaskNotWired { name: LoopName },
    #[error("there is no built-in handler \"{handler}\"")]
    UnknownHandler { handler: String },
    #[error("the daemon is gone")]
    DaemonGone,
}

/// Runs the daemon's loop iterations.
pub struct DaemonLoops {
    /// Weak: the core owns the registry, which owns this.
    core: Weak<Core>,
    heartbeat: Heartbeat,
}

impl DaemonLoops {
    pub fn new(core: Weak<Core>, heartbeat: Heartbeat) -> Self {
        Self { core, heartbeat }
    }

    /// How many heartbeats have run.
    pub fn heartbeats(&self) -> u64 {
        self.heartbeat.beats()
    }

    async fn run(&self, handler: Handler) -> Result<Report, IterateError> {
        match handler {
            Handler::Heartbeat => {
                let core = self
                    .core
                    .upgrade()
                    .ok_or_else(|| IterateError::failed(DaemonIterateError::DaemonGone))?;
                let beat = self
                    .heartbeat
                    .beat(|key| core.router.nudge(&core, &key))
                    .await
                    .map_err(IterateError::failed)?;
                tracing::debug!(expired = beat.expired, backup = beat.backup.is_some(), "heartbeat");
                Ok(Report::default())
            }
        }
    }
}

#[async_trait]
impl Iterate for DaemonLoops {
    async fn iterate(&self, iteration: Iteration) -> Result<Report, IterateError> {
        let handler = match &iteration.spec.body {
            Body::Task { .. } | Body::Message { .. } => {
                let name = iteration.spec.name.clone();
                return Err(IterateError::failed(DaemonIterateError::TaskNotWired { name }));
            }
            Body::Handler { name } => Handler::parse(name)
                .ok_or_else(|| IterateError::failed(DaemonIterateError::UnknownHandler { handler: name.clone() }))?,
        };
        tokio::select! {
            _ = iteration.cancel.cancelled() => Err(IterateError::Cancelled),
            report = self.run(handler) => report,
        }
    }
}

/// Why the loops could not be started.
#[derive(Debug, thiserror::Error)]
pub enum LoopsStartError {
    #[error(transparent)]
    Name(#[from] BadName),
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error(transparent)]
    Book(#[from] BookError),
    #[error("loops.time_zone: {0}")]
    Zone(#[from] crate::loops::schedule::ScheduleError),
    #[error("[[loops.entries]]: {0}")]
    Entry(String),
}

/// The heartbeat's loop: every `every`, without jitter, first at start.
pub fn heartbeat_spec(every: Duration) -> Result<LoopSpec, BadName> {
    let mut spec = LoopSpec::handler(LoopName::new(HEARTBEAT)?, HEARTBEAT);
    spec.sleep = SleepBounds {
        min: every,
        max: every,
        default: every,
    };
    spec.jitter = 0.0;
    spec.start = Start::Immediately;
    Ok(spec)
}

/// Builds the core's loop registry, starts the heartbeat (unless
/// `loops.heartbeat_s` is 0), and resumes the configured and stored loops
/// kept by `schedules`.
pub async fn start(core: &Arc<Core>, config: &Config, schedules: Arc<Schedules>) -> Result<(), LoopsStartError> {
    let backups = (config.store.backup_every_s > 0).then(|| BackupPlan {
        dir: config.backup_dir(),
        keep: config.store.backups_kept,
        every: Duration::from_secs(config.store.backup_every_s),
    });
    let approvals = core.pipeline.approvals().clone();
    let heartbeat = Heartbeat::new(approvals, core.store.clone(), backups);
    let iterate = Arc::new(DaemonLoops::new(Arc::downgrade(core), heartbeat));
    let clock = *core.pipeline.approvals().clock();
    let registry = Arc::new(Registry::new(iterate.clone(), config.loops.max, clock, &core.draining));
    core.install_loops(registry.clone(), iterate, schedules.clone());
    if config.loops.heartbeat_s > 0 {
        registry.spawn(heartbeat_spec(Duration::from_secs(config.loops.heartbeat_s))?)?;
    }
    let resumed = schedules.resume(configured(config)?).await?;
    tracing::info!(
        started = resumed.started,
        missed = resumed.missed,
        failed = resumed.failed,
        "loops resumed"
    );
    Ok(())
}

/// The config's `[[loops.entries]]`, as loops.
fn configured(config: &Config) -> Result<Vec<Configured>, LoopsStartError> {
    let zone = config.loops.zone()?;
    let now_ms = crate::intake::now_ms();
    config
        .loops
        .entries
        .iter()
        .map(|entry| entry.configured(&zone, now_ms).map_err(LoopsStartError::Entry))
        .collect()
}

#[cfg(test)]
mod tests {
    use tokio_util::sync::CancellationToken;

    use super::*;
    use crate::approvals::{Approvals, Policy};
    use crate::clock::Clock;
    use crate::store::tests_support::open_temp;

    fn daemon_loops(store: &crate::store::Store) -> DaemonLoops {
        let config = Config::default();
        let policy = Policy::from_config(&config);
        let approvals = Arc::new(Approvals::new(store.clone(), policy, Clock::start(), &config));
        DaemonLoops::new(Weak::new(), Heartbeat::new(approvals, store.clone(), None))
    }

    fn iteration(spec: LoopSpec) -> Iteration {
        Iteration {
            spec: Arc::new(spec),
            attempt: 1,
            supervised: false,
            triggered: false,
            next_run_ms: None,
            cancel: CancellationToken::new(),
        }
    }

    async fn error_of(spec: LoopSpec) -> String {
        let (_dir, store) = open_temp();
        match daemon_loops(&store).iterate(iteration(spec)).await {
            Err(IterateError::Failed(error)) => error.to_string(),
            other => panic!("expected a failure, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn task_loops_fail_saying_they_are_not_wired() {
        let spec = LoopSpec::task(LoopName::new("inbox").unwrap(), "check the mail");
        let error = error_of(spec).await;
        assert!(error.contains("not wired to the pipeline"), "{error}");
        assert!(error.contains("\"inbox\""), "{error}");
    }

    #[tokio::test]
    async fn unknown_handlers_and_a_gone_daemon_fail() {
        let spec = LoopSpec::handler(LoopName::new("x").unwrap(), "frobnicate");
        assert!(error_of(spec).await.contains("no built-in handler \"frobnicate\""));
        let spec = heartbeat_spec(Duration::from_secs(1)).unwrap();
        assert!(error_of(spec).await.contains("the daemon is gone"));
    }

    #[test]
    fn the_heartbeat_spec_is_valid_and_unjittered() {
        let spec = heartbeat_spec(Duration::from_secs(60)).unwrap();
        assert_eq!(spec.validate(), Ok(()));
        assert_eq!(spec.jitter, 0.0);
        assert_eq!(spec.sleep.min, spec.sleep.max);
        assert_eq!(spec.body, Body::Handler { name: HEARTBEAT.into() });
        assert_eq!(Handler::parse(HEARTBEAT), Some(Handler::Heartbeat));
    }
}
