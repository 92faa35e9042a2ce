//! The daemon's side of the loop runtime: [`DaemonLoops`] implements
//! [`Iterate`] — a built-in handler (the [`heartbeat`](crate::engine::loops::heartbeat),
//! which also triggers the loops that wait for it) runs right here; a
//! reminder or a task runs in its output conversation's worker, through the
//! pipeline and the outbox, as a [`LoopJob`] errand. [`Loops`] builds the
//! [`Registry`] over them; its `start` spawns the heartbeat and resumes the
//! stored and configured loops. The iterations get what they use: the
//! conversations, the clock, the heartbeat and the book of stored loops.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::ConversationKey;
use tokio::sync::oneshot;

use crate::config::Config;
use crate::engine::conversations::{Conversations, Job};
use crate::engine::loops::heartbeat::{HEARTBEAT, Heartbeat};
use crate::engine::loops::iterate::{Iterate, IterateError, Iteration, Report};
use crate::engine::loops::job::{LoopDone, LoopFailed, LoopJob, LoopWork, NextRun};
use crate::engine::loops::next_sleep::LoopTurn;
use crate::engine::loops::prompt::LoopPrompt;
use crate::engine::loops::registry::{Drained, Registry, SpawnError};
use crate::engine::loops::schedules::{BookError, Configured, NextTime, Reconfigured, Schedules};
use crate::engine::loops::sleep::SleepBounds;
use crate::engine::loops::spec::{BadName, Body, LoopName, LoopSpec, Start};
use crate::engine::loops::status::LoopStatus;
use crate::foundation::clock::Clock;
use crate::foundation::lifecycle::Lifecycle;

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
    Heartbeat(#[from] crate::engine::loops::heartbeat::HeartbeatError),
    #[error("the daemon is gone")]
    DaemonGone,
}

/// Runs the daemon's loop iterations, with what they use: the conversations
/// that run reminders and tasks, the daemon's lifecycle (no iteration starts
/// once it drains), the clock that numbers iterations, the heartbeat, and
/// the book that keeps scheduled loops' next runs.
pub struct DaemonLoops {
    conversations: Arc<Conversations>,
    lifecycle: Lifecycle,
    clock: Clock,
    heartbeat: Heartbeat,
    schedules: Arc<Schedules>,
}

impl DaemonLoops {
    pub fn new(
        conversations: Arc<Conversations>,
        lifecycle: Lifecycle,
        clock: Clock,
        heartbeat: Heartbeat,
        schedules: Arc<Schedules>,
    ) -> Self {
        Self {
            conversations,
            lifecycle,
            clock,
            heartbeat,
            schedules,
        }
    }

    /// How many heartbeats have run.
    pub fn heartbeats(&self) -> u64 {
        self.heartbeat.beats()
    }

    async fn run(&self, iteration: &Iteration) -> Result<Report, DaemonIterateError> {
        if self.lifecycle.is_draining() {
            return Err(DaemonIterateError::DaemonGone);
        }
        let spec = &iteration.spec;
        let work = match &spec.body {
            Body::Handler { name } => {
                return match Handler::parse(name) {
                    Some(Handler::Heartbeat) => self.beat().await,
                    None => Err(DaemonIterateError::UnknownHandler { handler: name.clone() }),
                };
            }
            Body::Message { text } => LoopWork::Say {
                name: spec.name.clone(),
                text: text.clone(),
            },
            Body::Task { prompt } => LoopWork::Task(LoopPrompt {
                name: spec.name.clone(),
                iteration: self.clock.now_ms(),
                conversation: output(spec)?.clone(),
                prompt: prompt.clone(),
                supervisor: iteration.supervisor().cloned(),
                turn: LoopTurn::new(spec.name.clone(), spec.sleep, spec.schedule.is_some()),
            }),
        };
        let next_run = spec.schedule.clone().map(|schedule| NextRun {
            book: self.schedules.clone(),
            name: spec.name.clone(),
            schedule,
            at_ms: iteration.next_run_ms,
        });
        let (done, report) = oneshot::channel();
        let job = LoopJob {
            work,
            cancel: iteration.cancel.clone(),
            next_run,
            done,
        };
        let done = in_conversation(&self.conversations, output(spec)?, job, report).await?;
        Ok(Report {
            tokens_in: done.cost.tokens_in,
            tokens_out: done.cost.tokens_out,
            model: done.cost.model,
            next_sleep: done.next_sleep,
        })
    }

    /// A heartbeat: the housekeeping, and the loops that wait for it
    /// (triggered even when the housekeeping failed).
    async fn beat(&self) -> Result<Report, DaemonIterateError> {
        let beat = self.heartbeat.beat(|key| self.conversations.nudge(&key)).await;
        if let Some(registry) = self.schedules.registry() {
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
    conversations: &Arc<Conversations>,
    conversation: &ConversationKey,
    job: LoopJob,
    report: oneshot::Receiver<Result<LoopDone, LoopFailed>>,
) -> Result<LoopDone, DaemonIterateError> {
    let permit = conversations
        .try_reserve(conversation)
        .map_err(|_| DaemonIterateError::Busy {
            conversation: conversation.clone(),
        })?;
    permit.send(Job::Errand(Box::new(job)));
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
    Zone(#[from] crate::foundation::clock::schedule::ScheduleError),
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

/// The daemon's loops: the registry, the iterations it runs, and the book
/// of loops that outlive a restart.
pub struct Loops {
    registry: Arc<Registry>,
    iterate: Arc<DaemonLoops>,
    schedules: Arc<Schedules>,
    clock: Clock,
}

impl Loops {
    /// Builds the loop registry and its iterations, none running yet, the
    /// `heartbeat` among them; the loops stop when `lifecycle` drains.
    pub fn new(
        conversations: &Arc<Conversations>,
        heartbeat: Heartbeat,
        lifecycle: &Lifecycle,
        clock: Clock,
        config: &Config,
        schedules: Arc<Schedules>,
    ) -> Arc<Self> {
        let iterate = Arc::new(DaemonLoops::new(
            conversations.clone(),
            lifecycle.clone(),
            clock,
            heartbeat,
            schedules.clone(),
        ));
        let registry = Arc::new(Registry::new(
            iterate.clone(),
            config.loops.max,
            clock,
            lifecycle.draining(),
        ));
        schedules.install(&registry);
        Arc::new(Self {
            registry,
            iterate,
            schedules,
            clock,
        })
    }

    /// Starts the heartbeat (unless `loops.heartbeat_s` is 0) and resumes
    /// the configured and stored loops.
    pub async fn start(&self, config: &Config) -> Result<(), LoopsStartError> {
        if config.loops.heartbeat_s > 0 {
            self.registry
                .spawn(heartbeat_spec(Duration::from_secs(config.loops.heartbeat_s))?)?;
        }
        let resumed = self.schedules.resume(configured(config, self.clock)?).await?;
        tracing::info!(
            started = resumed.started,
            missed = resumed.missed,
            failed = resumed.failed,
            "loops resumed"
        );
        Ok(())
    }

    /// The config's `[[loops.entries]]` as the loops they define, every
    /// problem named (to check a reloaded configuration before it applies).
    pub fn configured(&self, config: &Config) -> Result<Vec<Configured>, LoopsStartError> {
        configured(config, self.clock)
    }

    /// Runs `configured` as the configured loops from now on: new ones
    /// start, removed ones stop, changed ones start again, those in `same`
    /// are left alone.
    pub async fn reconfigure(
        &self,
        configured: Vec<Configured>,
        same: &std::collections::BTreeSet<String>,
    ) -> Result<Reconfigured, BookError> {
        self.schedules.reconfigure(configured, same).await
    }

    /// The loops made in a chat, by name, with the conversation each
    /// speaks in (a configured loop may not take their names).
    pub fn made_in_chat(&self) -> Result<Vec<(LoopName, Option<ConversationKey>)>, BookError> {
        self.schedules.made_in_chat()
    }

    /// The registry the loops run in.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Stops loop `name` (`passepartout loops stop NAME`) until it is
    /// started again: a stored loop is forgotten too, so unless started
    /// again it does not come back at the next start.
    pub async fn stop(&self, name: &str) -> Result<(), BookError> {
        self.schedules.remove(name).await
    }

    /// Starts loop `name` again, stopped on request (`passepartout loops
    /// start NAME`), from its next time on; see [`Schedules::start_again`].
    pub async fn start_again(&self, name: &str) -> Result<NextTime, BookError> {
        self.schedules.start_again(name).await
    }

    /// Runs loop `name` now (`passepartout loops run NAME`): a sleeping
    /// loop wakes early, a loop waiting for a trigger runs.
    pub fn trigger(&self, name: &str) -> Result<(), BookError> {
        Ok(self.registry.trigger(name)?)
    }

    /// Every loop's status, by name.
    pub fn statuses(&self) -> Vec<LoopStatus> {
        self.registry.list()
    }

    /// How many loops run.
    pub fn running_count(&self) -> usize {
        self.registry.running_count()
    }

    /// How many heartbeats have run.
    pub fn heartbeats(&self) -> u64 {
        self.iterate.heartbeats()
    }

    /// Stops every loop, aborting those still running after `grace`.
    pub async fn shutdown(&self, grace: Duration) -> Drained {
        self.registry.shutdown(grace).await
    }
}

/// The config's `[[loops.entries]]`, as loops.
fn configured(config: &Config, clock: Clock) -> Result<Vec<Configured>, LoopsStartError> {
    let zone = config.loops.zone()?;
    let now_ms = clock.now_ms();
    config
        .loops
        .entries
        .iter()
        .map(|entry| Configured::from_entry(entry, &zone, now_ms).map_err(LoopsStartError::Entry))
        .collect()
}

#[cfg(test)]
#[path = "daemon_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "daemon_pipeline_tests.rs"]
mod pipeline_tests;
