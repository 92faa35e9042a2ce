//! The daemon's shared state, one `Arc<Core>` handed to every task: the store,
//! the pipeline, the gateways' delivery halves, the conversation router, the
//! background loops and the counters behind `status`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use passepartout_gateway::{ConversationKey, Deliver, GatewayId, Health, Inbound, Listen};
use serde_json::json;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::access::Access;
use crate::config::PipelineConfig;
use crate::conversations::Router;
use crate::daemon_loops::DaemonLoops;
use crate::loops::registry::Registry;
use crate::loops::status::{LoopStatus, State};
use crate::pipeline::Pipeline;
use crate::schedules::{BookError, Schedules};
use crate::store::Store;

/// A gateway as the core sees it: how to deliver, and how it is doing.
#[derive(Clone)]
pub struct GatewayHandle {
    pub deliver: Arc<dyn Deliver>,
    pub listen: Arc<dyn Listen>,
}

/// Counters shown by `status`.
#[derive(Default)]
pub struct Stats {
    pub accepted: AtomicU64,
    pub duplicates: AtomicU64,
    pub busy: AtomicU64,
    pub refused: AtomicU64,
    pub turns: AtomicU64,
    pub turn_failures: AtomicU64,
    pub delivered: AtomicU64,
}

impl Stats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

/// The loop registry, the iterations it runs, and the book of stored loops.
struct Loops {
    registry: Arc<Registry>,
    iterate: Arc<DaemonLoops>,
    schedules: Arc<Schedules>,
}

pub struct Core {
    pub store: Store,
    pub pipeline: Pipeline,
    pub settings: PipelineConfig,
    pub gateways: HashMap<GatewayId, GatewayHandle>,
    /// Who may talk to the assistant, per gateway.
    pub access: Access,
    pub router: Router,
    pub stats: Stats,
    /// Cancelled at shutdown: workers finish their current job and stop.
    pub draining: CancellationToken,
    /// Every task the daemon spawns, so shutdown can wait for them.
    pub tracker: TaskTracker,
    /// The background loops, installed by the daemon once the core exists
    /// (their handlers need it); none in a bare core.
    loops: OnceLock<Loops>,
    /// Conversations with a delivery retry timer armed.
    retries: Mutex<HashSet<ConversationKey>>,
    started: Instant,
}

impl Core {
    pub fn new(
        store: Store,
        pipeline: Pipeline,
        settings: PipelineConfig,
        gateways: HashMap<GatewayId, GatewayHandle>,
        access: Access,
    ) -> Arc<Core> {
        let router = Router::new(settings.queue_capacity);
        Arc::new(Core {
            store,
            pipeline,
            settings,
            gateways,
            access,
            router,
            stats: Stats::default(),
            draining: CancellationToken::new(),
            tracker: TaskTracker::new(),
            loops: OnceLock::new(),
            retries: Mutex::default(),
            started: Instant::now(),
        })
    }

    /// Whether the sender of `inbound` may talk to the assistant (see [`Access`]).
    pub fn allowed(&self, inbound: &Inbound) -> bool {
        self.access.allows(inbound)
    }

    /// Installs the loop registry; only the first call does anything.
    pub fn install_loops(&self, registry: Arc<Registry>, iterate: Arc<DaemonLoops>, schedules: Arc<Schedules>) {
        schedules.install(&registry);
        if self
            .loops
            .set(Loops {
                registry,
                iterate,
                schedules,
            })
            .is_err()
        {
            tracing::warn!("loops installed twice; the second registry is dropped");
        }
    }

    /// The loop registry, once installed.
    pub fn loops(&self) -> Option<&Registry> {
        self.loops.get().map(|loops| &*loops.registry)
    }

    /// The book of loops that outlive a restart, once installed.
    pub fn schedules(&self) -> Option<&Arc<Schedules>> {
        self.loops.get().map(|loops| &loops.schedules)
    }

    /// Stops loop `name` for good (`passepartout loops stop NAME`): a
    /// stored loop is forgotten too, so it does not come back at the next
    /// start.
    pub async fn stop_loop(&self, name: &str) -> Result<(), BookError> {
        self.schedules().ok_or(BookError::NotReady)?.remove(name).await
    }

    /// Runs loop `name` now (`passepartout loops run NAME`): a sleeping
    /// loop wakes early, a loop waiting for a trigger runs.
    pub fn trigger_loop(&self, name: &str) -> Result<(), BookError> {
        Ok(self.loops().ok_or(BookError::NotReady)?.trigger(name)?)
    }

    /// Every loop's status, by name; none before the registry is installed.
    pub fn loop_statuses(&self) -> Vec<LoopStatus> {
        self.loops().map(Registry::list).unwrap_or_default()
    }

    /// The `/loops` chat command's answer: the same text as `passepartout loops`.
    pub fn loops_text(&self) -> String {
        crate::loops::status::render(&self.loop_statuses(), crate::intake::now_ms())
    }

    /// The loops' part of the status document: how many run, how many
    /// heartbeats ran, and the loops in error.
    fn loops_summary(&self) -> serde_json::Value {
        let statuses = self.loop_statuses();
        let failing: Vec<_> = statuses
            .iter()
            .filter(|s| s.state == State::Error || s.consecutive_errors > 0)
            .map(|s| json!({ "name": s.name, "error": s.last_error, "consecutive_errors": s.consecutive_errors }))
            .collect();
        json!({
            "running": self.loops().map_or(0, Registry::running_count),
            "total": statuses.len(),
            "heartbeats": self.loops.get().map_or(0, |loops| loops.iterate.heartbeats()),
            "failing": failing,
        })
    }

    /// Marks a delivery retry armed for `key`; false if one already was.
    pub fn arm_retry(&self, key: &ConversationKey) -> bool {
        self.retries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone())
    }

    /// The retry timer for `key` fired.
    pub fn disarm_retry(&self, key: &ConversationKey) {
        self.retries.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }

    fn gateway_health(&self) -> Vec<(String, Health)> {
        let mut gateways: Vec<_> = self
            .gateways
            .iter()
            .map(|(id, handle)| (id.to_string(), handle.listen.health()))
            .collect();
        gateways.sort_by(|a, b| a.0.cmp(&b.0));
        gateways
    }

    /// The status document served to `passepartout status`.
    pub fn status_document(&self) -> serde_json::Value {
        let stat = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        let workers = self.router.queue_depths();
        let gateways: Vec<_> = self
            .gateway_health()
            .into_iter()
            .map(|(name, health)| json!({ "name": name, "state": health.state, "detail": health.detail }))
            .collect();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_s": self.started.elapsed().as_secs(),
            "gateways": gateways,
            "providers": self.pipeline.cascade().health(),
            "tools": self.pipeline.tools().telemetry().snapshot(),
            "skills": self.pipeline.skills().telemetry().snapshot(),
            "conversations": {
                "active": workers.len(),
                "queued": workers.iter().map(|(_, depth)| depth).sum::<usize>(),
                "queues": workers.iter().map(|(key, depth)| json!({ "conversation": key.to_string(), "queued": depth })).collect::<Vec<_>>(),
            },
            "approvals": { "pending": self.pipeline.approvals().pending_count().ok() },
            "loops": self.loops_summary(),
            "store": {
                "path": self.store.path(),
                "failed": self.store.is_poisoned(),
                "size_bytes": self.store.size_on_disk().ok(),
                "pending": self.store.pending_count(),
                "outbox": self.store.outbox_len(),
            },
            "intake": {
                "accepted": stat(&self.stats.accepted),
                "duplicates": stat(&self.stats.duplicates),
                "busy": stat(&self.stats.busy),
                "refused": stat(&self.stats.refused),
            },
            "turns": { "finished": stat(&self.stats.turns), "failed": stat(&self.stats.turn_failures) },
            "delivered": stat(&self.stats.delivered),
        })
    }

    /// The `/status` chat command's answer: the same text as `passepartout status`.
    pub fn status_text(&self) -> String {
        crate::status::render(&self.status_document())
    }
}
