//! The daemon's side of the loop runtime: [`DaemonLoops`] implements
//! [`Iterate`] — a built-in handler (the [`heartbeat`](crate::heartbeat),
//! which also triggers the loops that wait for it) runs right here; a
//! reminder or a task runs in its output conversation's worker, through the
//! pipeline and the outbox — and [`start`] builds the [`Registry`] the core
//! owns, spawns the heartbeat and resumes the stored and configured loops.

use std::sync::{Arc, Weak};
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::ConversationKey;
use tokio::sync::oneshot;

use crate::config::Config;
use crate::conversations::{Job, LoopDone, LoopFailed, LoopJob, LoopWork, NextRun};
use crate::core::Core;
use crate::heartbeat::{BackupPlan, HEARTBEAT, Heartbeat};
use crate::loops::iterate::{Iterate, IterateError, Iteration, Report};
use crate::loops::registry::{Registry, SpawnError};
use crate::loops::sleep::SleepBounds;
use crate::loops::spec::{BadName, Body, LoopName, LoopSpec, Start};
use crate::pipeline::LoopPrompt;
use crate::schedules::{BookError, Configured, Schedules};
use crate::tools::next_sleep::LoopTurn;

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
    #[error("there is no built-in handler \"{handler}\"")]
    UnknownHandler { handler: String },
    #[error("loop \"{name}\" has no output conversation")]
    NoOutput { name: LoopName },
    #[error("conversation {conversation} is busy; the loop tries again later")]
    Busy { conversation: ConversationKey },
    #[error("the conversation's worker stopped before the iteration ended")]
    WorkerGone,
    #[error(transparent)]
    Turn(#[from] LoopFailed),
    #[error(transparent)]
    Heartbeat(#[from] crate::heartbeat::HeartbeatError),
    #[error("the daemon is gone")]
    DaemonGone,
}

/// Runs the daemon's loop iterations.
pub struct DaemonLoops {
    /// Weak: the core owns the registry, which owns this.
    core: Weak<Core>,
    heartbeat: Heartbeat,
    schedules: Arc<Schedules>,
}

impl DaemonLoops {
    pub fn new(core: Weak<Core>, heartbeat: Heartbeat, schedules: Arc<Schedules>) -> Self {
        Self {
            core,
            heartbeat,
            schedules,
        }
    }

    /// How many heartbeats have run.
    pub fn heartbeats(&self) -> u64 {
        self.heartbeat.beats()
    }

    async fn run(&self, iteration: &Iteration) -> Result<Report, DaemonIterateError> {
        let core = self.core.upgrade().ok_or(DaemonIterateError::DaemonGone)?;
        let spec = &iteration.spec;
        let work = match &spec.body {
            Body::Handler { name } => {
                return match Handler::parse(name) {
                    Some(Handler::Heartbeat) => self.beat(&core).await,
                    None => Err(DaemonIterateError::UnknownHandler { handler: name.clone() }),
                };
            }
            Body::Message { text } => LoopWork::Say {
                name: spec.name.clone(),
                text: text.clone(),
            },
            Body::Task { prompt } => LoopWork::Task(LoopPrompt {
                name: spec.name.clone(),
                iteration: core.pipeline.approvals().clock().now_ms(),
                conversation: output(spec)?.clone(),
                prompt: prompt.clone(),
                supervisor: iteration.supervisor().cloned(),
                turn: LoopTurn::new(spec.name.clone(), spec.sleep, spec.schedule.is_some()),
            }),
        };
        let next_run = spec.schedule.is_some().then(|| NextRun {
            book: self.schedules.clone(),
            name: spec.name.clone(),
            at_ms: iteration.next_run_ms,
        });
        let (done, report) = oneshot::channel();
        let job = LoopJob {
            work,
            cancel: iteration.cancel.clone(),
            next_run,
            done,
        };
        let done = in_conversation(&core, output(spec)?, job, report).await?;
        Ok(Report {
            tokens_in: done.cost.tokens_in,
            tokens_out: done.cost.tokens_out,
            model: done.cost.model,
            next_sleep: done.next_sleep,
        })
    }

    /// A heartbeat: the housekeeping, and the loops that wait for it
    /// (triggered even when the housekeeping failed).
    async fn beat(&self, core: &Arc<Core>) -> Result<Report, DaemonIterateError> {
        let beat = self.heartbeat.beat(|key| core.router.nudge(core, &key)).await;
        if let Some(registry) = core.loops() {
            for name in self.schedules.heartbeat_triggered() {
                if let Err(error) = registry.trigger(name.as_str()) {
                    tracing::debug!(%name, %error, "heartbeat trigger not taken");
                }
            }
        }
        let beat = beat?;
        tracing::debug!(expired = beat.expired, backup = beat.backup.is_some(), "heartbeat");
        Ok(Report::default())
    }
}

fn output(spec: &LoopSpec) -> Result<&ConversationKey, DaemonIterateError> {
    spec.output.as_ref().ok_or_else(|| DaemonIterateError::NoOutput {
        name: spec.name.clone(),
    })
}

/// Hands `job` to the worker of `conversation` and waits for its `report`.
async fn in_conversation(
    core: &Arc<Core>,
    conversation: &ConversationKey,
    job: LoopJob,
    report: oneshot::Receiver<Result<LoopDone, LoopFailed>>,
) -> Result<LoopDone, DaemonIterateError> {
    let permit = core
        .router
        .try_reserve(core, conversation)
        .map_err(|_| DaemonIterateError::Busy {
            conversation: conversation.clone(),
        })?;
    permit.send(Job::Loop(Box::new(job)));
    Ok(report.await.map_err(|_| DaemonIterateError::WorkerGone)??)
}

#[async_trait]
impl Iterate for DaemonLoops {
    async fn iterate(&self, iteration: Iteration) -> Result<Report, IterateError> {
        // A scheduled loop's next run is stored by the worker, with its commit.
        tokio::select! {
            _ = iteration.cancel.cancelled() => Err(IterateError::Cancelled),
            report = self.run(&iteration) => report.map_err(IterateError::failed),
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
    Zone(#[from] crate::clock::schedule::ScheduleError),
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
    let iterate = Arc::new(DaemonLoops::new(Arc::downgrade(core), heartbeat, schedules.clone()));
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
        .map(|entry| Configured::from_entry(entry, &zone, now_ms).map_err(LoopsStartError::Entry))
        .collect()
}

#[cfg(test)]
#[path = "daemon_loops_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "daemon_loops_pipeline_tests.rs"]
mod pipeline_tests;
