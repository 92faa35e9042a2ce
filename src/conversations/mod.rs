//! Conversation workers: one task per conversation, so turns run in order
//! within a conversation and concurrently across conversations.
//!
//! The [`Router`] owns the registry. Each worker has a bounded queue; the
//! intake reserves a slot *before* journaling, so a full queue is answered
//! "busy" instead of growing without bound. An idle worker retires itself,
//! atomically with respect to new reservations (see [`Router::retire`]).

mod delivery;
mod history;
mod loop_job;
mod settle;
mod worker;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use passepartout_gateway::ConversationKey;
use tokio::sync::mpsc;

use crate::core::Core;

pub use loop_job::{LoopDone, LoopFailed, LoopJob, LoopWork, NextRun};

/// Work for a conversation's worker.
#[derive(Debug)]
pub enum Job {
    /// Run the turn for this journal entry.
    Turn(u64),
    /// Try to deliver what waits in the outbox.
    Deliver,
    /// Run a loop's iteration in this conversation.
    Loop(Box<LoopJob>),
}

/// The conversation's queue is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Busy;

struct Slot {
    generation: u64,
    sender: mpsc::Sender<Job>,
}

#[derive(Default)]
struct Registry {
    workers: HashMap<ConversationKey, Slot>,
    generation: u64,
}

/// The registry of conversation workers.
pub struct Router {
    capacity: usize,
    registry: Mutex<Registry>,
}

impl Router {
    pub fn new(capacity: usize) -> Self {
        Self {
            capacity,
            registry: Mutex::new(Registry::default()),
        }
    }

    fn registry(&self) -> std::sync::MutexGuard<'_, Registry> {
        // A worker that panicked while holding the lock left the map intact.
        self.registry.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Reserves a place in `key`'s queue, starting a worker if there is none,
    /// or reports the queue full. The reservation happens under the registry
    /// lock, like [`Router::retire`]'s check-and-close, so a worker can never
    /// retire with a reservation outstanding — which would let a second worker
    /// run the same conversation.
    pub fn try_reserve(&self, core: &Arc<Core>, key: &ConversationKey) -> Result<mpsc::OwnedPermit<Job>, Busy> {
        let mut registry = self.registry();
        if let Some(slot) = registry.workers.get(key) {
            match slot.sender.clone().try_reserve_owned() {
                Ok(permit) => return Ok(permit),
                Err(mpsc::error::TrySendError::Full(_)) => return Err(Busy),
                Err(mpsc::error::TrySendError::Closed(_)) => {} // retired: start another
            }
        }
        registry.generation += 1;
        let generation = registry.generation;
        let (sender, receiver) = mpsc::channel(self.capacity);
        let permit = sender.clone().try_reserve_owned().map_err(|_| Busy)?;
        registry.workers.insert(key.clone(), Slot { generation, sender });
        drop(registry);
        core.tracker
            .spawn(worker::run(core.clone(), key.clone(), generation, receiver));
        Ok(permit)
    }

    /// Queues a delivery attempt for `key` unless its queue is full (a full
    /// queue means turns are coming, and each delivers after committing).
    pub fn nudge(&self, core: &Arc<Core>, key: &ConversationKey) {
        if let Ok(permit) = self.try_reserve(core, key) {
            permit.send(Job::Deliver);
        }
    }

    /// Called by an idle worker: if nothing is queued or reserved for it,
    /// removes it from the registry and closes its queue, atomically with
    /// respect to [`Router::try_reserve`]. Returns whether it may stop.
    fn retire(&self, key: &ConversationKey, generation: u64, receiver: &mut mpsc::Receiver<Job>) -> bool {
        let mut registry = self.registry();
        let ours = registry
            .workers
            .get(key)
            .is_some_and(|slot| slot.generation == generation);
        // A reserved-but-unsent permit shows as lost capacity, not as a queued job.
        let idle = receiver.is_empty() && receiver.capacity() == self.capacity;
        if !idle {
            return false;
        }
        if ours {
            registry.workers.remove(key);
        }
        receiver.close();
        true
    }

    /// Queue depth per live conversation worker.
    pub fn queue_depths(&self) -> Vec<(ConversationKey, usize)> {
        let registry = self.registry();
        let mut depths: Vec<_> = registry
            .workers
            .iter()
            .map(|(key, slot)| (key.clone(), self.capacity - slot.sender.capacity()))
            .collect();
        depths.sort();
        depths
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::Duration;

    use passepartout_gateway::{ChatId, GatewayId};

    use super::*;
    use crate::config::{Config, PipelineConfig, StoreConfig};
    use crate::pipeline::Pipeline;
    use crate::pipeline::cascade::Cascade;
    use crate::skills::Skills;
    use crate::store::Store;
    use crate::tools::ToolBox;

    fn core(dir: &std::path::Path, capacity: usize) -> Arc<Core> {
        let settings = PipelineConfig {
            queue_capacity: capacity,
            idle_worker_s: 10,
            ..PipelineConfig::default()
        };
        let store = Store::open(&dir.join("store"), &StoreConfig::default()).unwrap();
        let config = Config {
            pipeline: settings.clone(),
            ..Config::default()
        };
        let approvals = Arc::new(crate::approvals::Approvals::new(
            store.clone(),
            crate::approvals::Policy::default(),
            crate::clock::Clock::start(),
            &config,
        ));
        let pipeline = Pipeline::new(
            &config,
            Arc::new(Cascade::new(Vec::new(), std::time::Duration::from_secs(1))),
            ToolBox::default(),
            Skills::new(Vec::new()),
            approvals,
        );
        Core::new(store, pipeline, settings, HashMap::new(), Default::default())
    }

    fn key(chat: &str) -> ConversationKey {
        ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new(chat).unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_worker_is_reaped_and_restarted_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let core = core(dir.path(), 4);
        core.router.nudge(&core, &key("a"));
        core.router.nudge(&core, &key("b"));
        assert_eq!(core.router.queue_depths().len(), 2);
        // Virtual time: the workers' idle timers (10 s) fire before this one.
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert!(core.router.queue_depths().is_empty(), "idle workers were reaped");
        core.router.nudge(&core, &key("a"));
        assert_eq!(core.router.queue_depths().len(), 1, "a new worker starts on demand");
    }

    #[tokio::test(start_paused = true)]
    async fn a_worker_with_a_reserved_slot_is_not_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let core = core(dir.path(), 4);
        let permit = core.router.try_reserve(&core, &key("a")).unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(
            core.router.queue_depths().len(),
            1,
            "an outstanding reservation keeps the worker"
        );
        permit.send(Job::Deliver);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(core.router.queue_depths().is_empty());
    }

    #[tokio::test]
    async fn a_full_queue_is_busy_not_unbounded() {
        let dir = tempfile::tempdir().unwrap();
        let core = core(dir.path(), 2);
        let held: Vec<_> = (0..2)
            .map(|_| core.router.try_reserve(&core, &key("a")).unwrap())
            .collect();
        assert_eq!(core.router.try_reserve(&core, &key("a")).unwrap_err(), Busy);
        assert!(
            core.router.try_reserve(&core, &key("b")).is_ok(),
            "other conversations are not affected"
        );
        drop(held);
    }
}
