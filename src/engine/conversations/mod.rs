//! Conversation workers: one task per conversation, so turns run in order
//! within a conversation and concurrently across conversations.
//!
//! The [`Router`] owns the registry. Each worker has a bounded queue; the
//! intake reserves a slot *before* journaling, so a full queue is answered
//! "busy" instead of growing without bound. An idle worker retires itself,
//! atomically with respect to new reservations (see [`Router::retire`]).
//! The workers share one [`Conversations`] context: what they work with,
//! kept to themselves; the intake, the loops, the status and the reload use
//! its verbs (reserve a place, wake, deliver, stop a turn, count). The
//! workers and deliveries are spawned on the daemon's
//! [`Lifecycle`](crate::foundation::lifecycle::Lifecycle), whose drain stops them.

mod chat_control;
mod context;
mod delivery;
mod delivery_lock;
mod drafting;
mod ending;
mod errand;
mod failure;
mod follow;
mod handoff;
mod history;
mod progress;
#[cfg(test)]
mod reachable_tests;
mod relay;
mod remind;
mod seed;
mod settle;
mod stats;
mod stop;
mod turn_commit;
mod typing;
mod worker;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use passepartout_gateway::ConversationKey;
use tokio::sync::mpsc;

pub use context::{BridgeStatus, ChatBacklog, Conversations, Outlets, Views};
pub use errand::{Errand, InWorker};
pub use failure::TurnFailed;
pub use stats::{Counted, Counts};

/// Work for a conversation's worker.
#[derive(Debug)]
pub enum Job {
    /// Run the turn for this journal entry.
    Turn(u64),
    /// Nothing of its own: after it, as after every job, the worker settles
    /// the approvals whose outcome the conversation is owed.
    Wake,
    /// Run work from above the conversations (a loop's iteration) here.
    Errand(Box<dyn Errand>),
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
struct Router {
    capacity: usize,
    registry: Mutex<Registry>,
}

impl Router {
    fn new(capacity: usize) -> Self {
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
    fn try_reserve(&self, cx: &Arc<Conversations>, key: &ConversationKey) -> Result<mpsc::OwnedPermit<Job>, Busy> {
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
        cx.lifecycle
            .spawn(worker::run(cx.clone(), key.clone(), generation, receiver));
        Ok(permit)
    }

    /// Queues a wake-up for `key`'s worker unless its queue is full (a full
    /// queue means jobs are coming, and the worker settles after each).
    fn wake(&self, cx: &Arc<Conversations>, key: &ConversationKey) {
        if let Ok(permit) = self.try_reserve(cx, key) {
            permit.send(Job::Wake);
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
    fn queue_depths(&self) -> Vec<(ConversationKey, usize)> {
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

/// A bare context for tests: no gateways, no model, no tools.
#[cfg(test)]
pub(crate) mod testing {
    use std::sync::Arc;

    use super::{Conversations, Outlets};
    use crate::config::{Config, PipelineConfig, StoreConfig};
    use crate::engine::pipeline::Pipeline;
    use crate::engine::pipeline::cascade::Cascade;
    use crate::foundation::clock::Clock;
    use crate::foundation::lifecycle::Lifecycle;
    use crate::safety::approvals::{Approvals, Policy};
    use crate::safety::skills::Skills;
    use crate::safety::tools::ToolBox;
    use crate::store::Store;

    /// Conversations on a store in `dir`, with `settings`.
    pub(crate) fn bare(dir: &std::path::Path, settings: PipelineConfig) -> Arc<Conversations> {
        let store = Store::open(&dir.join("store"), &StoreConfig::default()).unwrap();
        on_store(store, settings, Lifecycle::new())
    }

    /// 2026-11-22 12:00:00 UTC.
    const NOON: u64 = 1_795_867_200_000;

    /// Conversations on `store`, with `settings`, on a clock that follows
    /// tokio's (these tests run under paused time), their tasks tracked by
    /// `lifecycle`.
    pub(crate) fn on_store(store: Store, settings: PipelineConfig, lifecycle: Lifecycle) -> Arc<Conversations> {
        with_outlets(store, settings, lifecycle, Outlets::default())
    }

    /// The same, delivering through `outlets`.
    pub(crate) fn with_outlets(
        store: Store,
        settings: PipelineConfig,
        lifecycle: Lifecycle,
        outlets: Outlets,
    ) -> Arc<Conversations> {
        let config = Config {
            pipeline: settings.clone(),
            ..Config::default()
        };
        let clock = Clock::at(NOON);
        let approvals = Arc::new(Approvals::new(
            store.clone(),
            Policy::default(),
            clock,
            &config.approvals,
        ));
        let pipeline = Pipeline::new(
            &config,
            Arc::new(Cascade::new(Vec::new(), std::time::Duration::from_secs(1))),
            ToolBox::default(),
            Skills::new(Vec::new()),
            approvals.clone(),
            clock,
        );
        Conversations::new(store, pipeline, approvals, outlets, settings, clock, lifecycle)
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use passepartout_gateway::{ChatId, GatewayId};

    use super::*;
    use crate::config::PipelineConfig;

    fn conversations(dir: &std::path::Path, capacity: usize) -> Arc<Conversations> {
        let settings = PipelineConfig {
            queue_capacity: capacity,
            idle_worker_s: 10,
            ..PipelineConfig::default()
        };
        testing::bare(dir, settings)
    }

    fn key(chat: &str) -> ConversationKey {
        ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new(chat).unwrap())
    }

    #[tokio::test(start_paused = true)]
    async fn an_idle_worker_is_reaped_and_restarted_on_demand() {
        let dir = tempfile::tempdir().unwrap();
        let cx = conversations(dir.path(), 4);
        cx.nudge(&key("a"));
        cx.nudge(&key("b"));
        assert_eq!(cx.queue_depths().len(), 2);
        // Virtual time: the workers' idle timers (10 s) fire before this one.
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert!(cx.queue_depths().is_empty(), "idle workers were reaped");
        cx.nudge(&key("a"));
        assert_eq!(cx.queue_depths().len(), 1, "a new worker starts on demand");
    }

    #[tokio::test(start_paused = true)]
    async fn a_worker_with_a_reserved_slot_is_not_reaped() {
        let dir = tempfile::tempdir().unwrap();
        let cx = conversations(dir.path(), 4);
        let permit = cx.try_reserve(&key("a")).unwrap();
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert_eq!(
            cx.queue_depths().len(),
            1,
            "an outstanding reservation keeps the worker"
        );
        permit.send(Job::Wake);
        tokio::time::sleep(Duration::from_secs(30)).await;
        assert!(cx.queue_depths().is_empty());
    }

    #[tokio::test]
    async fn a_full_queue_is_busy_not_unbounded() {
        let dir = tempfile::tempdir().unwrap();
        let cx = conversations(dir.path(), 2);
        let held: Vec<_> = (0..2).map(|_| cx.try_reserve(&key("a")).unwrap()).collect();
        assert_eq!(cx.try_reserve(&key("a")).unwrap_err(), Busy);
        assert!(
            cx.try_reserve(&key("b")).is_ok(),
            "other conversations are not affected"
        );
        drop(held);
    }
}
