//! The daemon's book of loops that outlive a restart: those a person made in
//! a chat (the `schedule` tool) and the config's `[[loops.entries]]`. Each
//! is kept in the store's `loops` tree with its next run, so that at start
//! every loop resumes, and a run missed while the daemon was down runs once
//! ([`Schedule::resume`](crate::foundation::clock::schedule::Schedule::resume)). A loop that ends by itself (a spent one-shot
//! reminder, its maximum attempts or duration) is forgotten; one stopped by
//! the shutdown is not.
//!
//! A loop's next run is stored in its iteration's own commit
//! ([`Schedules::next_run_write`]). Built-in handlers have no schedule.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use passepartout_gateway::{ConversationKey, UserId};
use serde::{Deserialize, Serialize};

use crate::engine::loops::registry::{LoopError, Registry, SpawnError};
use crate::engine::loops::spec::{InvalidSpec, LoopName, LoopSpec};
use crate::engine::loops::status::{LoopStatus, State, StopReason};
use crate::foundation::clock::Clock;
use crate::foundation::clock::schedule::{Resume, Schedule, Zone};
use crate::store::{LoopRecordWrite, Store, StoreError};

/// Where a stored loop was defined.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// `[[loops.entries]]`: the config stays the definition; only the next
    /// run is taken from the store.
    Config,
    /// Made in a conversation, by this person.
    Chat { by: UserId },
}

/// One loop as the store keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Stored {
    spec: LoopSpec,
    source: Source,
    /// When the next slot is (scheduled loops only).
    #[serde(default)]
    next_run_ms: Option<u64>,
    created_ms: u64,
}

pub use crate::engine::loops::configured::Configured;

/// Why a change to the book was refused.
#[derive(Debug, thiserror::Error)]
pub enum BookError {
    #[error("the loops are not running yet")]
    NotReady,
    #[error("there is already a loop called \"{name}\"; choose another name, or stop that one first")]
    Taken { name: LoopName },
    #[error("loop \"{name}\" belongs to another conversation")]
    NotHere { name: String },
    #[error("loop \"{name}\" is defined in the config file; only its owner can remove it there")]
    Configured { name: String },
    #[error(transparent)]
    Invalid(#[from] InvalidSpec),
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error(transparent)]
    Loop(#[from] LoopError),
    #[error("cannot keep the loop: {0}")]
    Store(#[from] StoreError),
    #[error("cannot encode the loop: {0}")]
    Encode(#[from] serde_json::Error),
}

/// What [`Schedules::resume`] did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resumed {
    /// Loops started.
    pub started: usize,
    /// Of those, loops that missed a run while the daemon was down and run now.
    pub missed: usize,
    /// Stored loops that could not start (logged).
    pub failed: usize,
}

/// The book, shared by the daemon's loops, the `schedule` tools and the
/// socket's loop controls.
pub struct Schedules {
    store: Store,
    clock: Clock,
    zone: Zone,
    /// Weak: the registry's iterations hold the book, and the loops hold both.
    registry: OnceLock<Weak<Registry>>,
    /// Loops that every heartbeat triggers.
    on_heartbeat: Mutex<BTreeSet<LoopName>>,
    /// The stored loops stopped on request, as they were kept: starting
    /// one again keeps it again. Only in memory, so a stop still holds
    /// across a restart as it always did.
    set_aside: Mutex<BTreeMap<LoopName, Stored>>,
    /// Configured loops a reload took out of the configuration: still
    /// listed as stopped, but never started again, until the file names
    /// them once more (or a chat makes a loop of the name).
    dropped: Mutex<BTreeSet<LoopName>>,
    /// Held while a loop starts again, so two starts of one name cannot
    /// both get past the check that it is stopped.
    starting: tokio::sync::Mutex<()>,
}

impl Schedules {
    /// A book kept in `store`, reading time from `clock`; schedules that
    /// name no zone use `zone`.
    pub fn new(store: Store, clock: Clock, zone: Zone) -> Self {
        Self {
            store,
            clock,
            zone,
            registry: OnceLock::new(),
            on_heartbeat: Mutex::default(),
            set_aside: Mutex::default(),
            dropped: Mutex::default(),
            starting: tokio::sync::Mutex::new(()),
        }
    }

    /// Hands the book the registry its loops run in; only the first call counts.
    pub fn install(&self, registry: &Arc<Registry>) {
        if self.registry.set(Arc::downgrade(registry)).is_err() {
            tracing::warn!("the loop registry was installed twice; the second is ignored");
        }
    }

    pub fn registry(&self) -> Option<Arc<Registry>> {
        self.registry.get().and_then(Weak::upgrade)
    }

    /// The zone of schedules that name none.
    pub fn zone(&self) -> &Zone {
        &self.zone
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    fn ready(&self) -> Result<Arc<Registry>, BookError> {
        self.registry().ok_or(BookError::NotReady)
    }

    /// Starts `spec`, made in a chat by `by`, and keeps it so that it
    /// resumes after a restart. Refused if the name is taken.
    pub async fn add(self: &Arc<Self>, spec: LoopSpec, by: &UserId) -> Result<(), BookError> {
        let registry = self.ready()?;
        spec.validate()?;
        if registry
            .status(spec.name.as_str())
            .is_some_and(|s| s.state != State::Stopped)
        {
            return Err(BookError::Taken { name: spec.name });
        }
        let now_ms = self.clock.now_ms();
        let stored = Stored {
            next_run_ms: spec.schedule.as_ref().and_then(|s| s.next_after(now_ms)),
            spec,
            source: Source::Chat { by: by.clone() },
            created_ms: now_ms,
        };
        // Claims the name in the store, atomically: of two loops made at
        // once under one name, one is refused.
        let name = stored.spec.name.clone();
        let bytes = serde_json::to_vec(&stored)?;
        if !self
            .store
            .swap_loop_record(name.as_str(), None, Some(bytes.clone()))
            .await?
        {
            return Err(BookError::Taken { name });
        }
        if let Err(error) = registry.spawn(stored.spec) {
            if let Err(error) = self.store.swap_loop_record(name.as_str(), Some(bytes), None).await {
                tracing::error!(%name, %error, "cannot forget the loop that did not start");
            }
            return Err(error.into());
        }
        // A new loop of the name: the stopped one cannot start again.
        self.aside().remove(&name);
        self.dropped().remove(&name);
        self.watch_for_the_end(&registry, &name, now_ms);
        Ok(())
    }

    /// Stops loop `name` for good: it is forgotten, so it does not come
    /// back at the next start (unless [started again](Schedules::start_again)
    /// before that).
    pub async fn remove(&self, name: &str) -> Result<(), BookError> {
        // Never beside a start of the name: the record set aside here is
        // the one a start takes.
        let _one_at_a_time = self.starting.lock().await;
        let registry = self.ready()?;
        let stopped = match registry.stop(name) {
            Ok(()) => true,
            Err(LoopError::NotRunning { .. }) => false,
            Err(LoopError::Unknown { .. }) if self.store.loop_record(name)?.is_some() => false,
            Err(error) => return Err(error.into()),
        };
        // A record that cannot be read is forgotten all the same, and cannot come back.
        if let Ok(Some(record)) = self.stored(name) {
            self.aside().insert(record.spec.name.clone(), record);
        }
        let forgotten = self.store.remove_loop_record(name).await?;
        tracing::info!(name, stopped, forgotten, "loop removed");
        Ok(())
    }

    /// Like [`Schedules::remove`], for a conversation that may only remove
    /// its own loops.
    pub async fn remove_in(&self, conversation: &ConversationKey, name: &str) -> Result<(), BookError> {
        let registry = self.ready()?;
        let stored = self.stored(name)?;
        if stored.as_ref().is_some_and(|s| s.source == Source::Config) {
            return Err(BookError::Configured { name: name.to_owned() });
        }
        let status = registry.status(name);
        let ours = match &status {
            Some(status) => status.output.as_deref() == Some(conversation.to_string().as_str()),
            None => stored.is_some_and(|s| s.spec.output.as_ref() == Some(conversation)),
        };
        if !ours {
            return match status {
                Some(_) => Err(BookError::NotHere { name: name.to_owned() }),
                None => Err(LoopError::Unknown { name: name.to_owned() }.into()),
            };
        }
        self.remove(name).await
    }

    /// The loops speaking in `conversation` that have not stopped.
    pub fn listed_in(&self, conversation: &ConversationKey) -> Vec<LoopStatus> {
        let output = conversation.to_string();
        let Some(registry) = self.registry() else {
            return Vec::new();
        };
        registry
            .list()
            .into_iter()
            .filter(|status| status.state != State::Stopped && status.output.as_deref() == Some(output.as_str()))
            .collect()
    }

    /// The write that stores the next run of loop `name`, which ran by
    /// `schedule`, in an iteration's commit; none if the loop is not stored
    /// (any more), or its stored version runs by another schedule (it was
    /// replaced while this iteration ran).
    pub fn next_run_write(
        &self,
        name: &LoopName,
        schedule: &Schedule,
        next_run_ms: Option<u64>,
    ) -> Result<Option<LoopRecordWrite>, BookError> {
        let Some(expected) = self.store.loop_record(name.as_str())? else {
            return Ok(None);
        };
        let mut stored: Stored = serde_json::from_slice(&expected)?;
        if stored.spec.schedule.as_ref() != Some(schedule) {
            return Ok(None);
        }
        stored.next_run_ms = next_run_ms;
        Ok(Some(LoopRecordWrite {
            name: name.to_string(),
            new: serde_json::to_vec(&stored)?,
            expected,
        }))
    }

    /// The loops every heartbeat triggers.
    pub fn heartbeat_triggered(&self) -> Vec<LoopName> {
        self.on_heartbeat
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned()
            .collect()
    }

    /// Starts the configured loops and every stored one, each resuming
    /// from its stored next run. Stored config loops no longer configured
    /// are forgotten. A loop made in a chat keeps its name: a configured
    /// loop of that name does not start (logged), since the chat's loop is
    /// somebody's and is not replaced unasked.
    pub async fn resume(self: &Arc<Self>, configured: Vec<Configured>) -> Result<Resumed, BookError> {
        let registry = self.ready()?;
        let now_ms = self.clock.now_ms();
        let stored = self.stored_records()?;
        let configured = self.without_chats_names(configured, &stored);
        let names: BTreeSet<_> = configured.iter().map(|c| c.spec.name.clone()).collect();
        self.set_heartbeat_triggered(&configured);
        let mut starting = self.configured_records(configured, &stored, now_ms);
        starting.extend(self.stored_to_start(stored, &names).await);
        let mut resumed = Resumed::default();
        for record in starting {
            self.start_resumed(&registry, record, now_ms, &mut resumed).await;
        }
        Ok(resumed)
    }

    /// The loops made in a chat that the book keeps, by name, with the
    /// conversation each speaks in.
    pub fn made_in_chat(&self) -> Result<Vec<(LoopName, Option<ConversationKey>)>, BookError> {
        Ok(self
            .stored_records()?
            .into_iter()
            .filter(|record| record.source != Source::Config)
            .map(|record| (record.spec.name, record.spec.output))
            .collect())
    }

    /// Every stored loop that can be read; one that cannot is logged and
    /// left in the store as it is.
    fn stored_records(&self) -> Result<Vec<Stored>, BookError> {
        let mut stored = Vec::new();
        for (name, bytes) in self.store.loop_records()? {
            match serde_json::from_slice::<Stored>(&bytes) {
                Ok(record) => stored.push(record),
                Err(error) => tracing::error!(name, %error, "a stored loop cannot be read; it is left as it is"),
            }
        }
        Ok(stored)
    }

    /// `configured` without the loops whose names loops made in a chat
    /// (in `stored`) hold, each of those logged.
    fn without_chats_names(&self, configured: Vec<Configured>, stored: &[Stored]) -> Vec<Configured> {
        configured
            .into_iter()
            .filter(|c| {
                let held = held_by_a_chat(stored, &c.spec.name);
                if held {
                    held_back(&c.spec.name);
                }
                !held
            })
            .collect()
    }

    /// Makes the loops every heartbeat triggers those of `configured` that
    /// ask for it, swapped whole: a heartbeat reads either set, never a half.
    fn set_heartbeat_triggered(&self, configured: &[Configured]) {
        let names = configured
            .iter()
            .filter(|c| c.on_heartbeat)
            .map(|c| c.spec.name.clone())
            .collect();
        *self.on_heartbeat.lock().unwrap_or_else(|p| p.into_inner()) = names;
    }

    /// The configured loops as the book keeps them, each taking its next
    /// run from the stored loop of its name.
    fn configured_records(&self, configured: Vec<Configured>, stored: &[Stored], now_ms: u64) -> Vec<Stored> {
        let mut records = Vec::new();
        for Configured { spec, .. } in configured {
            let previous = stored.iter().find(|s| s.spec.name == spec.name);
            // A schedule changed in the config starts afresh.
            let same_schedule = previous.is_some_and(|s| s.spec.schedule == spec.schedule);
            records.push(Stored {
                next_run_ms: previous.filter(|_| same_schedule).and_then(|s| s.next_run_ms),
                created_ms: previous.map_or(now_ms, |s| s.created_ms),
                spec,
                source: Source::Config,
            });
        }
        records
    }

    /// The stored loops that still start: not the configured ones (named
    /// in `configured`), which start as configured, and not config loops no
    /// longer configured, which are forgotten.
    async fn stored_to_start(&self, stored: Vec<Stored>, configured: &BTreeSet<LoopName>) -> Vec<Stored> {
        let mut records = Vec::new();
        for record in stored {
            if configured.contains(&record.spec.name) {
                continue;
            }
            if record.source == Source::Config {
                tracing::info!(name = %record.spec.name, "loop no longer configured; forgotten");
                self.forget(record.spec.name.as_str()).await;
                continue;
            }
            records.push(record);
        }
        records
    }

    /// Starts one loop at its first run: its stored next run, or now, once,
    /// if that passed while the daemon was down. A one-shot that already
    /// ran is forgotten instead.
    async fn start_resumed(
        self: &Arc<Self>,
        registry: &Registry,
        mut record: Stored,
        now_ms: u64,
        resumed: &mut Resumed,
    ) {
        let name = record.spec.name.clone();
        if let Some(schedule) = &record.spec.schedule {
            let first = match record.next_run_ms.map(|next| schedule.resume(next, now_ms)) {
                Some(Resume::RunNow { .. }) => {
                    resumed.missed += 1;
                    tracing::info!(%name, "a run was missed while the daemon was down; it runs now, once");
                    Some(now_ms)
                }
                Some(Resume::Wait { until_ms }) => Some(until_ms),
                None => schedule.next_after(now_ms),
            };
            let Some(first) = first else {
                // A one-shot whose time passed and that already ran.
                self.forget(name.as_str()).await;
                return;
            };
            record.spec.first_run_ms = Some(first);
            record.next_run_ms = Some(first);
        }
        if let Err(error) = self.keep(&record).await {
            tracing::error!(%name, %error, "cannot store the loop");
        }
        let created_ms = record.created_ms;
        match registry.spawn(record.spec) {
            Ok(()) => {
                resumed.started += 1;
                self.aside().remove(&name);
                self.watch_for_the_end(registry, &name, created_ms);
            }
            Err(error) => {
                // Kept: it may start at the next start, with room for it.
                resumed.failed += 1;
                tracing::error!(%name, %error, "a stored loop cannot start");
            }
        }
    }

    fn dropped(&self) -> std::sync::MutexGuard<'_, BTreeSet<LoopName>> {
        // Every change to the set is a single insert, remove or retain.
        self.dropped.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn aside(&self) -> std::sync::MutexGuard<'_, BTreeMap<LoopName, Stored>> {
        // Every change to the map is a single insert or remove.
        self.set_aside.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn stored(&self, name: &str) -> Result<Option<Stored>, BookError> {
        match self.store.loop_record(name)? {
            Some(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
            None => Ok(None),
        }
    }

    async fn keep(&self, stored: &Stored) -> Result<(), BookError> {
        let bytes = serde_json::to_vec(stored)?;
        self.store.put_loop_record(stored.spec.name.as_str(), bytes).await?;
        Ok(())
    }

    async fn forget(&self, name: &str) {
        if let Err(error) = self.store.remove_loop_record(name).await {
            tracing::error!(name, %error, "cannot forget the stored loop");
        }
    }

    /// Forgets loop `name` (the one made at `created_ms`) once it ends by
    /// itself; one stopped by the shutdown (or on request, which forgets it
    /// already) is left alone, and so is a new loop of the same name.
    fn watch_for_the_end(self: &Arc<Self>, registry: &Registry, name: &LoopName, created_ms: u64) {
        let Some(mut status) = registry.watch(name.as_str()) else {
            return;
        };
        // Weak: the book, and with it the store, may go before the loop ends.
        let book = Arc::downgrade(self);
        let name = name.clone();
        tokio::spawn(async move {
            let ended = status
                .wait_for(|s| s.state == State::Stopped)
                .await
                .ok()
                .and_then(|s| s.stop_reason);
            let by_itself = matches!(
                ended,
                Some(StopReason::Spent | StopReason::MaxAttempts | StopReason::MaxDuration)
            );
            if let (true, Some(book)) = (by_itself, book.upgrade()) {
                match book.forget_ended(&name, created_ms).await {
                    Ok(true) => tracing::info!(%name, "loop ended; forgotten"),
                    Ok(false) => {}
                    Err(error) => tracing::error!(%name, %error, "cannot forget the ended loop"),
                }
            }
        });
    }

    /// Forgets loop `name` if the stored one is still the one made at
    /// `created_ms`: never a loop of the same name made since.
    async fn forget_ended(&self, name: &LoopName, created_ms: u64) -> Result<bool, BookError> {
        loop {
            let Some(bytes) = self.store.loop_record(name.as_str())? else {
                return Ok(false);
            };
            let stored: Stored = serde_json::from_slice(&bytes)?;
            if stored.created_ms != created_ms {
                return Ok(false);
            }
            if self.store.swap_loop_record(name.as_str(), Some(bytes), None).await? {
                return Ok(true);
            }
            // Changed meanwhile (its next run was stored): look again.
        }
    }
}

#[path = "schedules_reconfigure.rs"]
mod reconfigure;
pub use reconfigure::Reconfigured;

#[path = "schedules_restart.rs"]
mod restart;
pub use restart::NextTime;

/// Whether a loop made in a chat (of those `stored`) is called `name`.
fn held_by_a_chat(stored: &[Stored], name: &LoopName) -> bool {
    stored
        .iter()
        .any(|record| record.spec.name == *name && record.source != Source::Config)
}

/// Logs that the configured loop `name` does not start: a chat's loop
/// has the name.
fn held_back(name: &LoopName) {
    tracing::error!(%name, "a loop made in a chat has this configured loop's name; it runs on, and the configured one does not start");
}

#[cfg(test)]
#[path = "schedules_tests.rs"]
mod tests;
