//! The registry of running loops: it starts them (within a limit), stops,
//! triggers and reports on them by name, and stops them all at shutdown
//! under a deadline. Each loop runs as its own task (see `run.rs`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::task::{AbortHandle, JoinHandle};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::iterate::Iterate;
use super::random::{Random, Seeded};
use super::run::Run;
use super::spec::{InvalidSpec, LoopName, LoopSpec};
use super::status::{LoopStatus, State, StopReason};
use crate::foundation::clock::Clock;

/// Why a loop was not started.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SpawnError {
    #[error("cannot start loop \"{name}\": {running} loops run already (loops.max)")]
    Full { name: LoopName, running: usize },
    #[error("cannot start loop \"{name}\": a loop of that name runs already")]
    Duplicate { name: LoopName },
    #[error("cannot start loop \"{name}\": the daemon is shutting down")]
    ShuttingDown { name: LoopName },
    #[error("cannot start loop \"{name}\": not called from within the tokio runtime")]
    NoRuntime { name: LoopName },
    #[error("cannot start {0}")]
    Invalid(#[from] InvalidSpec),
}

/// Why a loop could not be stopped or triggered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoopError {
    #[error("there is no loop \"{name}\"")]
    Unknown { name: String },
    #[error("loop \"{name}\" is not running")]
    NotRunning { name: String },
    #[error("loop \"{name}\" is already running")]
    AlreadyRunning { name: String },
    #[error("loop \"{name}\" cannot be started again ({}); only a loop stopped on request can", .reason.as_str())]
    Ended { name: String, reason: StopReason },
}

/// What [`Registry::shutdown`] found.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Drained {
    /// Loops that stopped before the deadline.
    pub stopped: usize,
    /// Loops still running at the deadline, aborted.
    pub aborted: usize,
}

/// The daemon's loops.
pub struct Registry {
    iterate: Arc<dyn Iterate>,
    max_loops: usize,
    clock: Clock,
    /// Seeds every loop's randomness, for reproducible tests.
    seed: Option<u64>,
    /// The parent of every loop's token; cancelled at shutdown.
    shutdown: CancellationToken,
    tracker: TaskTracker,
    loops: Mutex<BTreeMap<LoopName, Entry>>,
}

/// A loop, running or stopped (a stopped loop stays listed until a loop of
/// its name starts again).
struct Entry {
    /// Its definition, as it started: what starting it again runs.
    spec: Arc<LoopSpec>,
    status: Arc<watch::Sender<LoopStatus>>,
    triggers: mpsc::Sender<()>,
    stop: CancellationToken,
    abort: AbortHandle,
    /// Taken by [`Registry::shutdown`] to wait for the task.
    task: Option<JoinHandle<()>>,
}

impl Entry {
    /// Until its status says it stopped and while its task lives. A loop
    /// whose status says Stopped has left its run, though its task may still
    /// be returning (and an iteration it cancelled may still be finishing
    /// its turn in the conversation, as at any stop: its commit stores no
    /// next run into a newer loop of the name, see
    /// [`Schedules::next_run_write`](super::schedules::Schedules::next_run_write)),
    /// so one of its name may start at once.
    fn running(&self) -> bool {
        !self.abort.is_finished() && self.status.borrow().state != State::Stopped
    }
}

impl Registry {
    /// A registry running at most `max_loops` loops at once, each iteration
    /// run by `iterate`. Its loops stop when `parent` is cancelled, though
    /// [`Registry::shutdown`] is the way to stop them under a deadline.
    pub fn new(iterate: Arc<dyn Iterate>, max_loops: usize, clock: Clock, parent: &CancellationToken) -> Self {
        Self {
            iterate,
            max_loops,
            clock,
            seed: None,
            shutdown: parent.child_token(),
            tracker: TaskTracker::new(),
            loops: Mutex::default(),
        }
    }

    /// The same registry, with every loop's randomness seeded from `seed`
    /// and its name instead of the operating system.
    pub fn seeded(self, seed: u64) -> Self {
        Self {
            seed: Some(seed),
            ..self
        }
    }

    /// Starts a loop.
    pub fn spawn(&self, spec: LoopSpec) -> Result<(), SpawnError> {
        let random = match self.seed {
            Some(seed) => Seeded::for_name(seed, spec.name.as_str()),
            None => Seeded::from_os(),
        };
        self.spawn_with(spec, Box::new(random))
    }

    /// Starts a loop whose jitter and supervisor dice come from `random`.
    pub fn spawn_with(&self, spec: LoopSpec, random: Box<dyn Random>) -> Result<(), SpawnError> {
        spec.validate()?;
        let name = spec.name.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return Err(SpawnError::NoRuntime { name });
        };
        let mut loops = self.lock();
        if self.shutdown.is_cancelled() {
            return Err(SpawnError::ShuttingDown { name });
        }
        if loops.get(&name).is_some_and(Entry::running) {
            return Err(SpawnError::Duplicate { name });
        }
        let running = loops.values().filter(|entry| entry.running()).count();
        if running >= self.max_loops {
            return Err(SpawnError::Full { name, running });
        }
        let spec = Arc::new(spec);
        let status = Arc::new(watch::Sender::new(LoopStatus::pending(&spec)));
        // One slot: triggers while one is pending add nothing.
        let (triggers, receiver) = mpsc::channel(1);
        let stop = self.shutdown.child_token();
        let run_spec = spec.clone();
        let run = Run {
            spec,
            iterate: self.iterate.clone(),
            status: status.clone(),
            triggers: receiver,
            stop: stop.clone(),
            shutdown: self.shutdown.clone(),
            random,
            clock: self.clock,
        };
        let task = self.tracker.spawn_on(run.run(), &runtime);
        tracing::info!(name = %name, "loop started");
        let entry = Entry {
            spec: run_spec,
            status,
            triggers,
            stop,
            abort: task.abort_handle(),
            task: Some(task),
        };
        loops.insert(name, entry);
        Ok(())
    }

    /// Asks a loop to stop: it stops sleeping or waiting at once, and its
    /// iteration, if one runs, is cancelled (see [`super::iterate::Iterate`]).
    pub fn stop(&self, name: &str) -> Result<(), LoopError> {
        let loops = self.lock();
        let entry = self.running(&loops, name)?;
        entry.stop.cancel();
        Ok(())
    }

    /// Wakes a loop: a loop waiting for a trigger runs an iteration, a
    /// sleeping one runs early, and one in an iteration does what its
    /// retrigger mode says (a timer loop ignores it).
    pub fn trigger(&self, name: &str) -> Result<(), LoopError> {
        let loops = self.lock();
        let entry = self.running(&loops, name)?;
        match entry.triggers.try_send(()) {
            // Full: a trigger is pending already, and this one adds nothing.
            Ok(()) | Err(mpsc::error::TrySendError::Full(())) => Ok(()),
            Err(mpsc::error::TrySendError::Closed(())) => Err(LoopError::NotRunning { name: name.into() }),
        }
    }

    /// The status of every loop, by name.
    pub fn list(&self) -> Vec<LoopStatus> {
        self.lock()
            .values()
            .map(|entry| entry.status.borrow().clone())
            .collect()
    }

    /// The status of one loop.
    pub fn status(&self, name: &str) -> Option<LoopStatus> {
        self.lock().get(name).map(|entry| entry.status.borrow().clone())
    }

    /// The definition of loop `name` as it last started, if it is stopped
    /// and may start again: stopped on request, not by its own end.
    pub fn stopped_spec(&self, name: &str) -> Result<Arc<LoopSpec>, LoopError> {
        let loops = self.lock();
        let Some(entry) = loops.get(name) else {
            return Err(LoopError::Unknown { name: name.into() });
        };
        if entry.running() {
            return Err(LoopError::AlreadyRunning { name: name.into() });
        }
        match entry.status.borrow().stop_reason {
            // None: its task ended without saying why (it panicked).
            Some(StopReason::Requested) | None => Ok(entry.spec.clone()),
            Some(reason) => Err(LoopError::Ended {
                name: name.into(),
                reason,
            }),
        }
    }

    /// A receiver that sees every change of a loop's status.
    pub fn watch(&self, name: &str) -> Option<watch::Receiver<LoopStatus>> {
        self.lock().get(name).map(|entry| entry.status.subscribe())
    }

    /// How many loops run.
    pub fn running_count(&self) -> usize {
        self.lock().values().filter(|entry| entry.running()).count()
    }

    /// Stops every loop and refuses new ones; waits up to `grace` for them
    /// to end, then aborts the rest.
    pub async fn shutdown(&self, grace: Duration) -> Drained {
        self.shutdown.cancel();
        self.tracker.close();
        let deadline = Instant::now().checked_add(grace);
        let tasks: Vec<_> = self
            .lock()
            .iter_mut()
            .filter(|(_, entry)| entry.running())
            .filter_map(|(name, entry)| Some((name.clone(), entry.task.take()?, entry.status.clone())))
            .collect();
        let mut drained = Drained::default();
        for (name, mut task, status) in tasks {
            let ended = match deadline {
                Some(deadline) => tokio::time::timeout_at(deadline, &mut task).await.is_ok(),
                None => {
                    let _ = (&mut task).await;
                    true
                }
            };
            if ended {
                drained.stopped += 1;
                continue;
            }
            task.abort();
            // An aborted task ends at its next await; after that, nothing
            // else writes its status.
            let _ = task.await;
            status.send_modify(|s| {
                s.state = State::Stopped;
                s.stop_reason = Some(StopReason::Aborted);
                s.next_wake_ms = None;
            });
            tracing::warn!(name = %name, "loop aborted at the shutdown deadline");
            drained.aborted += 1;
        }
        self.tracker.wait().await;
        drained
    }

    fn running<'a>(&self, loops: &'a BTreeMap<LoopName, Entry>, name: &str) -> Result<&'a Entry, LoopError> {
        match loops.get(name) {
            None => Err(LoopError::Unknown { name: name.into() }),
            Some(entry) if !entry.running() => Err(LoopError::NotRunning { name: name.into() }),
            Some(entry) => Ok(entry),
        }
    }

    fn lock(&self) -> MutexGuard<'_, BTreeMap<LoopName, Entry>> {
        // A panic while the lock was held left the map intact: every change
        // to it is a single insert.
        self.loops.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
#[path = "registry_tests.rs"]
mod tests;
