//! What the conversation workers work with, and nothing more: the store,
//! the pipeline and the approvals beside it, the gateways' delivery halves,
//! the pipeline settings, the clock, the counters, the daemon's lifecycle
//! (which tracks the workers and drains them), the running turns, the
//! delivery locks and the delivery retries armed.
//!
//! Its fields are the conversations' own. The daemon builds one
//! [`Conversations`] and hands it to the intake, the loops, the status and
//! the reload, which use its verbs: reserve a place in a conversation's
//! queue, wake a conversation, deliver what waits in its outbox, stop its
//! running turn, count what happened, read the counters and the usage, find
//! a gateway's deliver half, swap the pipeline.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use arc_swap::ArcSwap;
use passepartout_gateway::{ConversationKey, Deliver, Draft, GatewayId, Surface, UserId};
use tokio::sync::mpsc;

use super::delivery_lock::DeliveryLocks;
use super::stats::{Counted, Counts, Stats};
use super::stop::RunningTurns;
use super::{Busy, Job, Router, chat_control, delivery};
use crate::config::PipelineConfig;
use crate::engine::bridges::Bridges;
use crate::engine::pipeline::Pipeline;
use crate::engine::pipeline::commands::View;
use crate::engine::pipeline::usage_report::UsagePeriods;
use crate::foundation::clock::Clock;
use crate::foundation::histogram::{Histogram, Snapshot, TURN_BUCKETS};
use crate::foundation::lifecycle::Lifecycle;
use crate::model::memory::MemorySession;
use crate::people::Channels;
use crate::safety::approvals::Approvals;
use crate::store::{LinkedPerson, Store, StoreError};

/// Renders the reports about the daemon that chat commands show (`/status`,
/// `/loops`). Supplied by the daemon, which has every part at hand.
pub trait Views: Send + Sync {
    /// `view`, worded for `surface`.
    fn show(&self, view: View, surface: Surface) -> String;
}

/// A bridge as `status` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct BridgeStatus {
    pub name: String,
    pub chats: Vec<ChatBacklog>,
}

/// What waits to be relayed to one chat of a bridge.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ChatBacklog {
    /// `gateway:chat`.
    pub chat: String,
    /// None when the outbox cannot be read.
    pub waiting: Option<usize>,
    pub last_error: Option<String>,
}

/// The running gateways' halves the conversations speak through, and the
/// bridges between their chats.
#[derive(Default)]
pub struct Outlets {
    /// How to reach each running gateway's chats.
    pub deliver: HashMap<GatewayId, Arc<dyn Deliver>>,
    /// The gateways that show a reply as a draft while it is written.
    pub drafts: HashMap<GatewayId, Arc<dyn Draft>>,
    /// The group chats joined across gateways (`[[bridges]]`).
    pub bridges: Arc<Bridges>,
}

/// The conversation workers' context; private to the conversations, whose
/// neighbours use its verbs.
pub struct Conversations {
    pub(super) store: Store,
    /// Replaced whole when the configuration is reloaded: a turn keeps the
    /// pipeline it started with.
    pipeline: ArcSwap<Pipeline>,
    pub(super) approvals: Arc<Approvals>,
    /// The gateways' halves replies go out through.
    outlets: Outlets,
    pub(super) settings: PipelineConfig,
    /// Dates what the turns remember.
    pub(super) clock: Clock,
    /// What `status` shows of the intake and the workers.
    stats: Stats,
    /// How long turns took, from their start to their commit.
    turn_time: Histogram,
    /// Tracks the workers and deliveries; its drain stops the workers once
    /// their current job is done.
    pub(super) lifecycle: Lifecycle,
    router: Router,
    /// Taken by whoever delivers a conversation's outbox.
    delivering: DeliveryLocks<ConversationKey>,
    /// Conversations with a delivery retry timer armed.
    retries: Mutex<HashSet<ConversationKey>>,
    /// Weak: the views show these conversations too.
    views: OnceLock<Weak<dyn Views>>,
    /// The turns running now, which `/stop` can stop.
    pub(super) running: Arc<RunningTurns>,
    /// Why relaying to a bridged chat last failed, until a relay goes.
    relay_errors: Mutex<HashMap<ConversationKey, String>>,
    /// Per conversation, the store's ticket for the delivered entries
    /// cleared from its outbox and maybe not yet durable: made durable
    /// before its next send, so a crash repeats at most the one in flight.
    cleared: Mutex<HashMap<ConversationKey, u64>>,
}

impl Conversations {
    pub fn new(
        store: Store,
        pipeline: Pipeline,
        approvals: Arc<Approvals>,
        outlets: Outlets,
        settings: PipelineConfig,
        clock: Clock,
        lifecycle: Lifecycle,
    ) -> Arc<Self> {
        Arc::new(Self {
            router: Router::new(settings.queue_capacity),
            store,
            pipeline: ArcSwap::from_pointee(pipeline),
            approvals,
            outlets,
            settings,
            clock,
            stats: Stats::default(),
            turn_time: Histogram::new(&TURN_BUCKETS),
            lifecycle,
            delivering: DeliveryLocks::default(),
            retries: Mutex::default(),
            views: OnceLock::new(),
            running: Arc::default(),
            relay_errors: Mutex::default(),
            cleared: Mutex::default(),
        })
    }

    /// The pipeline a turn starting now runs through.
    pub fn pipeline(&self) -> Arc<Pipeline> {
        self.pipeline.load_full()
    }

    /// Runs the turns that start from now on through `pipeline` (a reloaded
    /// configuration's); those under way finish with the one they have.
    pub fn set_pipeline(&self, pipeline: Pipeline) {
        self.pipeline.store(Arc::new(pipeline));
    }

    /// Reserves a place in `key`'s queue, starting its worker if it has none;
    /// a worker never retires with a reservation outstanding.
    pub fn try_reserve(self: &Arc<Self>, key: &ConversationKey) -> Result<mpsc::OwnedPermit<Job>, Busy> {
        self.router.try_reserve(self, key)
    }

    /// Wakes `key`: what waits in its outbox is delivered at once (see
    /// [`Conversations::deliver_waiting`]), and its worker, unless its queue is full,
    /// settles the approvals whose outcome the conversation is owed.
    pub fn nudge(self: &Arc<Self>, key: &ConversationKey) {
        self.deliver_waiting(key);
        self.router.wake(self, key);
    }

    /// Delivers what waits in `key`'s outbox, in a task of its own started
    /// now: a committed reply never waits for a turn the worker is running.
    /// The task takes the conversation's delivery lock like the worker does
    /// after each commit, and shutdown waits for it.
    pub fn deliver_waiting(self: &Arc<Self>, key: &ConversationKey) {
        let cx = self.clone();
        let key = key.clone();
        self.lifecycle.spawn(async move { delivery::deliver(&cx, &key).await });
    }

    /// How to reach `gateway`'s chats, if it runs.
    pub fn deliver_half(&self, gateway: &GatewayId) -> Option<&Arc<dyn Deliver>> {
        self.outlets.deliver.get(gateway)
    }

    /// The group chats joined across gateways.
    pub fn bridges(&self) -> &Bridges {
        &self.outlets.bridges
    }

    /// The gateways as people name them.
    pub(super) fn channels(&self) -> &Channels {
        self.outlets.bridges.channels()
    }

    /// How `gateway` shows a reply as a draft, if it runs and does.
    pub(super) fn draft_half(&self, gateway: &GatewayId) -> Option<&Arc<dyn Draft>> {
        self.outlets.drafts.get(gateway)
    }

    /// Stops `conversation`'s running turn, if it has one, marking it
    /// stopped in the store first: the flush that makes the `/stop` durable
    /// covers the mark, so a crash before the stopped turn commits cannot
    /// run it again.
    pub fn stop_turn(&self, conversation: &ConversationKey) {
        if let Some(seq) = self.running.running(conversation)
            && let Err(error) = self.store.mark_stopped(seq)
        {
            // Stopped all the same; only a crash before its commit would run it again.
            tracing::error!(%conversation, seq, %error, "cannot mark a stopped turn in the store");
        }
        self.running.stop(conversation);
    }

    /// Counts one `what`, for `status`.
    pub fn count(&self, what: Counted) {
        self.stats.bump(what);
    }

    /// The counters now.
    pub fn counts(&self) -> Counts {
        self.stats.read()
    }

    /// Counts a turn that took `took` from its start to its commit.
    pub fn time_turn(&self, took: std::time::Duration) {
        self.turn_time.record(took);
    }

    /// How long the turns took, for `status`.
    pub fn turn_times(&self) -> Snapshot {
        self.turn_time.snapshot()
    }

    /// Today's and this month's token usage of every conversation.
    pub fn usage(&self) -> Result<UsagePeriods, StoreError> {
        chat_control::periods(self, None)
    }

    /// Queue depth per live conversation worker.
    pub fn queue_depths(&self) -> Vec<(ConversationKey, usize)> {
        self.router.queue_depths()
    }

    /// What `user` (also known as `aliases`) keeps in memory on `gateway`,
    /// for one turn in `conversation`: with what they keep on their other
    /// channels when they are linked and this is the private conversation
    /// they linked from; in a group (a chat that is not theirs, on a gateway
    /// that does not vouch for its peers), nothing kept before, unless
    /// `memory.facts_in_groups` names it.
    pub(super) fn memory_of(
        &self,
        gateway: &GatewayId,
        user: &UserId,
        aliases: &[UserId],
        conversation: &ConversationKey,
    ) -> MemorySession {
        let pipeline = self.pipeline.load();
        let session =
            MemorySession::with_limits(self.store.clone(), self.clock, gateway, user, pipeline.memory_limits());
        let chat = conversation.chat.as_str();
        let own = std::iter::once(user).chain(aliases).any(|id| id.as_str() == chat);
        if !own && !self.approvals.vouches(gateway) {
            if pipeline.reads_facts_in(conversation) {
                return session;
            }
            return session.unread();
        }
        let Some(person) = self.linked_here(gateway, user, conversation) else {
            return session;
        };
        let others = person
            .identities
            .into_iter()
            .filter(|identity| !identity.is(gateway, user))
            .map(|identity| (identity.gateway, identity.user))
            .collect();
        session.linked_with(others)
    }

    /// The linked person `user` on `gateway` is, when `conversation` is the
    /// private conversation they linked from: what linking gives (memory,
    /// history, hand-offs) is theirs there, never in a group. A store that
    /// cannot say is logged, and read as not linked.
    pub(super) fn linked_here(
        &self,
        gateway: &GatewayId,
        user: &UserId,
        conversation: &ConversationKey,
    ) -> Option<LinkedPerson> {
        let person = self.store.person_of(gateway, user).unwrap_or_else(|error| {
            tracing::warn!(%error, "cannot read whom a person is linked with; their other channels are left out");
            None
        })?;
        let here = person.identity(gateway, user)?.conversation == *conversation;
        here.then_some(person)
    }

    pub(super) fn router(&self) -> &Router {
        &self.router
    }

    pub(super) fn delivery_locks(&self) -> &DeliveryLocks<ConversationKey> {
        &self.delivering
    }

    /// Answers the chat's `/status` and `/loops` with `views`; only the first
    /// call does anything.
    pub fn show_views_with(&self, views: &Arc<dyn Views>) {
        if self.views.set(Arc::downgrade(views)).is_err() {
            tracing::warn!("views installed twice; the second is dropped");
        }
    }

    /// A report about the daemon, for a chat command.
    pub(super) fn show(&self, view: View, surface: Surface) -> String {
        match self.views.get().and_then(Weak::upgrade) {
            Some(views) => views.show(view, surface),
            None => "The daemon is still starting; ask again in a moment.".to_owned(),
        }
    }

    /// A delivered entry was just cleared from `key`'s outbox.
    pub(super) fn note_cleared(&self, key: &ConversationKey) {
        let ticket = self.store.write_ticket();
        self.cleared
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone(), ticket);
    }

    /// The ticket of `key`'s clears not yet known durable, if any.
    pub(super) fn take_cleared(&self, key: &ConversationKey) -> Option<u64> {
        self.cleared.lock().unwrap_or_else(|p| p.into_inner()).remove(key)
    }

    /// A relayed message could not be delivered to `key` (`None`: one was).
    pub(super) fn relay_outcome(&self, key: &ConversationKey, error: Option<String>) {
        let mut errors = self.relay_errors.lock().unwrap_or_else(|p| p.into_inner());
        match error {
            Some(error) => errors.insert(key.clone(), error),
            None => errors.remove(key),
        };
    }

    /// Each bridge, with what waits to be relayed to each of its chats and
    /// why the last relay there failed, if it did.
    pub fn bridges_status(&self) -> Vec<BridgeStatus> {
        let errors = self.relay_errors.lock().unwrap_or_else(|p| p.into_inner());
        self.bridges()
            .all()
            .map(|bridge| BridgeStatus {
                name: bridge.name.clone(),
                chats: bridge
                    .chats
                    .iter()
                    .map(|chat| ChatBacklog {
                        chat: chat.to_string(),
                        waiting: self
                            .store
                            .outbox_for(chat)
                            .ok()
                            .map(|entries| entries.iter().filter(|entry| entry.relay.is_some()).count()),
                        last_error: errors.get(chat).cloned(),
                    })
                    .collect(),
            })
            .collect()
    }

    /// Marks a delivery retry armed for `key`; false if one already was.
    pub(super) fn arm_retry(&self, key: &ConversationKey) -> bool {
        self.retries
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key.clone())
    }

    /// The retry timer for `key` fired.
    pub(super) fn disarm_retry(&self, key: &ConversationKey) {
        self.retries.lock().unwrap_or_else(|p| p.into_inner()).remove(key);
    }
}
