//! The embedded store: sled behind one type, so nothing else touches sled.
//!
//! Trees: `journal` (accepted inbound messages not yet processed, by sequence
//! number; a turn's commit removes its entry), `pending` (the same messages
//! by conversation, in order), `dedupe` (conversation + platform message id →
//! sequence and time, swept after a window), `outbox` (replies not yet
//! confirmed by a gateway, per conversation, in order), `history` (one record
//! per finished turn, per conversation), `memory` (facts kept per person),
//! `approvals` (token → approval), `prompts` (a delivered prompt's platform
//! message id → token), `audit` (decisions and tool runs, in order),
//! `loops` (stored loop definitions and next runs, by name), `cursors`
//! (gateway offsets), `settings` (what a conversation set for itself:
//! a pinned model, a fresh start), `usage` (tokens per provider per day, per
//! conversation and in total), `summaries` (a conversation's running summary
//! of the turns folded out of its context), `drafts` (where the draft of a
//! running turn's reply is shown), `stops` (the running turns a `/stop`
//! stopped, until they commit), `guesses` (when each person last named
//! a wrong approval token), `standing_rules` (the calls a person let run
//! without asking, by conversation and tool), `paired` (the people let in by
//! a pairing code, per gateway), `pairing_codes` (the codes sent, waiting
//! for an owner), `people` and `identities` (people linked across
//! channels, and which person each linked account is), `link_codes` (the
//! codes asked for with `/link`, waiting to be named elsewhere), `handoffs`
//! (conversations a linked person moved, waiting to be carried over),
//! `relays` and `relay_copies` (where each message of a bridged group was
//! copied, and what each copy is a copy of), `web_links` (the dashboard's one-time sign-in links, by the
//! SHA-256 of the token), `web_sessions` (the browsers signed in, by the
//! SHA-256 of the session id), `web_keys` (the API keys, by the SHA-256 of
//! the key), `web_chats` (the owner's chats on the dashboard, by id), `api_threads` (where each API
//! conversation stands, by the hash of its messages) and `meta` (schema version).
//!
//! The store is the floor: it persists only forms defined in it or below it
//! (the approval, standing rule and audit records are in [`records`]), and imports nothing
//! of the domain above.
//!
//! Durability: sled flushes in the background every `flush_every_ms`; journal
//! writes and turn commits are made durable explicitly with [`Store::durable`],
//! which groups concurrent callers into one flush (group commit). A flush or
//! a write that fails for want of storage (a full disk: sled refuses every
//! write once it could not write its log) poisons the store: from then on
//! nothing is reported durable, so nothing more is acknowledged or delivered
//! until the daemon is restarted. The first such error is kept, to say why.

mod api_threads;
mod approvals;
mod backup;
mod backup_times;
mod chat_settings;
mod codes;
mod drafts;
mod error;
mod group;
mod guesses;
mod handoffs;
mod history;
mod journal;
mod keys;
mod link_codes;
mod loops;
mod memory;
mod outbox;
mod paired;
mod pairing_codes;
mod people;
pub mod records;
mod relays;
mod released;
mod standing_rules;
mod stops;
mod summary;
mod turn;
mod usage;
mod web_chats;
mod web_keys;
mod web_sign_in;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard, TryLockError};

pub use approvals::{ApprovalWrite, Decided};
pub use backup::{BackupInfo, KeptBeside, beside_backup, list_backups, restore_backup};
pub use backup_times::BackupTimes;
pub use chat_settings::ChatSettings;
pub use error::StoreError;
pub use handoffs::{Handoff, HandoffWrite};
pub use journal::{Accepted, JournalEntry};
pub use loops::LoopRecordWrite;
pub use memory::{Fact, MemoryScope, MemoryWrite};
pub use outbox::{OutboxEntry, Relay};
pub use people::Linked;
pub use records::{
    Approval, Approver, AuditEvent, Audited, Decision, How, Identity, LinkedPerson, Names, PairedPerson,
    PendingPairing, Person, ProposedCall, RunState, Scope, StandingRule, Status, VoteOutcome,
};
pub use relays::Posted;
pub use summary::{Summary, SummaryWrite};
pub use turn::{Following, PendingOutbound, Relayed, TurnCommit};
pub use usage::{ByProvider, Tokens, UsageAdd, add_usage};
pub use web_chats::WebChatRecord;
pub use web_keys::WebKey;
pub use web_sign_in::WebSession;

use tokio_util::sync::CancellationToken;

use crate::config::StoreConfig;

/// Version of the layout of the trees; stored in `meta`.
pub const SCHEMA_VERSION: u64 = 1;

/// A handle on the open store. Cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("path", &self.inner.path)
            .finish_non_exhaustive()
    }
}

struct Inner {
    path: PathBuf,
    db: sled::Db,
    journal: sled::Tree,
    dedupe: sled::Tree,
    pending: sled::Tree,
    outbox: sled::Tree,
    history: sled::Tree,
    memory: sled::Tree,
    approvals: sled::Tree,
    prompts: sled::Tree,
    audit: sled::Tree,
    loops: sled::Tree,
    cursors: sled::Tree,
    meta: sled::Tree,
    settings: sled::Tree,
    usage: sled::Tree,
    drafts: sled::Tree,
    stops: sled::Tree,
    guesses: sled::Tree,
    paired: sled::Tree,
    pairing_codes: sled::Tree,
    people: sled::Tree,
    identities: sled::Tree,
    link_codes: sled::Tree,
    handoffs: sled::Tree,
    relays: sled::Tree,
    relay_copies: sled::Tree,
    summaries: sled::Tree,
    standing_rules: sled::Tree,
    web_links: sled::Tree,
    web_sessions: sled::Tree,
    web_keys: sled::Tree,
    web_chats: sled::Tree,
    api_threads: sled::Tree,
    group: GroupCommit,
    commits: group::CommitQueue,
    /// Multi-tree writers hold it shared; a backup holds it exclusively, so a
    /// backup is a consistent snapshot.
    write_gate: RwLock<()>,
    /// Set when a flush failed; see the module doc.
    poisoned: AtomicBool,
    /// The error that poisoned it, for status and doctor.
    failure: OnceLock<String>,
    /// Cancelled at the same moment, for whoever must react (the daemon exits).
    failed: CancellationToken,
}

/// Counters that let one flush serve every caller that asked before it started.
#[derive(Default)]
struct GroupCommit {
    requested: AtomicU64,
    flushed: AtomicU64,
    gate: tokio::sync::Mutex<()>,
}

impl Store {
    /// Opens (or creates) the store in `dir`.
    pub fn open(dir: &Path, settings: &StoreConfig) -> Result<Store, StoreError> {
        let open_error = |source| StoreError::Open {
            path: dir.to_path_buf(),
            source,
        };
        released::wait_for_release(&dir.join("db"));
        let db = sled::Config::new()
            .path(dir)
            .flush_every_ms(Some(settings.flush_every_ms))
            .cache_capacity(settings.cache_mb.saturating_mul(1024 * 1024))
            .open()
            .map_err(open_error)?;
        let tree = |name: &str| db.open_tree(name).map_err(open_error);
        let inner = Inner {
            path: dir.to_path_buf(),
            journal: tree("journal")?,
            dedupe: tree("dedupe")?,
            pending: tree("pending")?,
            outbox: tree("outbox")?,
            history: tree("history")?,
            memory: tree("memory")?,
            approvals: tree("approvals")?,
            prompts: tree("prompts")?,
            audit: tree("audit")?,
            loops: tree("loops")?,
            cursors: tree("cursors")?,
            meta: tree("meta")?,
            settings: tree("settings")?,
            usage: tree("usage")?,
            drafts: tree("drafts")?,
            stops: tree("stops")?,
            guesses: tree("guesses")?,
            paired: tree("paired")?,
            pairing_codes: tree("pairing_codes")?,
            people: tree("people")?,
            identities: tree("identities")?,
            link_codes: tree("link_codes")?,
            handoffs: tree("handoffs")?,
            relays: tree("relays")?,
            relay_copies: tree("relay_copies")?,
            web_links: tree("web_links")?,
            web_sessions: tree("web_sessions")?,
            web_keys: tree("web_keys")?,
            web_chats: tree("web_chats")?,
            api_threads: tree("api_threads")?,
            summaries: tree("summaries")?,
            standing_rules: tree("standing_rules")?,
            group: GroupCommit::default(),
            commits: group::CommitQueue::default(),
            write_gate: RwLock::new(()),
            poisoned: AtomicBool::new(false),
            failure: OnceLock::new(),
            failed: CancellationToken::new(),
            db,
        };
        let store = Store { inner: Arc::new(inner) };
        store.check_schema()?;
        Ok(store)
    }

    fn check_schema(&self) -> Result<(), StoreError> {
        const KEY: &[u8] = b"schema_version";
        match self.inner.meta.get(KEY)? {
            None => {
                self.inner.meta.insert(KEY, &SCHEMA_VERSION.to_be_bytes())?;
                Ok(())
            }
            Some(bytes) => match keys::decode_u64(&bytes) {
                Some(SCHEMA_VERSION) => Ok(()),
                found => Err(StoreError::Schema {
                    found,
                    expected: SCHEMA_VERSION,
                }),
            },
        }
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// Returns once every write made before the call is on disk. Concurrent
    /// callers share flushes. Called within a Tokio runtime, whose blocking
    /// pool runs the flush.
    pub async fn durable(&self) -> Result<(), StoreError> {
        self.durable_through(self.write_ticket()).await
    }

    /// A ticket for every write made before now: [`Store::durable_through`]
    /// it later makes them durable, at once when a flush since did.
    pub fn write_ticket(&self) -> u64 {
        self.inner.group.requested.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// Returns once every write made before `ticket` was taken is on disk
    /// (see [`Store::durable`]).
    pub async fn durable_through(&self, ticket: u64) -> Result<(), StoreError> {
        if self.is_poisoned() {
            return Err(StoreError::Poisoned);
        }
        let group = &self.inner.group;
        // Covered by a flush already (the counter only grows).
        if group.flushed.load(Ordering::SeqCst) >= ticket {
            return Ok(());
        }
        let _gate = group.gate.lock().await;
        if group.flushed.load(Ordering::SeqCst) >= ticket {
            return Ok(());
        }
        // The flush this caller queued behind may have failed.
        if self.is_poisoned() {
            return Err(StoreError::Poisoned);
        }
        let covered = group.requested.load(Ordering::SeqCst);
        // On a thread of the runtime's blocking pool, not sled's own
        // (`flush_async`): a flush waits for log writes that sled's pool
        // runs, and that pool (one for every store in the process) adds a
        // thread only once more than seven tasks wait, so seven flushes
        // waiting in its seven threads left none to write.
        let db = self.inner.db.clone();
        let flushed = match tokio::task::spawn_blocking(move || db.flush()).await {
            Ok(flushed) => flushed.map_err(StoreError::Io),
            Err(error) => Err(StoreError::Task(error.to_string())),
        };
        if let Err(error) = flushed {
            self.poison(&error);
            return Err(error);
        }
        group.flushed.store(covered, Ordering::SeqCst);
        Ok(())
    }

    /// The last ticket a flush has covered: every ticket up to it is
    /// durable.
    #[cfg(test)]
    pub(crate) fn flushed_through(&self) -> u64 {
        self.inner.group.flushed.load(Ordering::SeqCst)
    }

    /// Whether a flush has failed (see the module doc).
    pub fn is_poisoned(&self) -> bool {
        self.inner.poisoned.load(Ordering::SeqCst)
    }

    /// Cancelled when the store is poisoned.
    pub fn failed(&self) -> CancellationToken {
        self.inner.failed.clone()
    }

    /// Why the store is poisoned, if it is: the error that did it.
    pub fn failure(&self) -> Option<String> {
        self.inner.failure.get().cloned()
    }

    /// From now on nothing is reported durable (see the module doc).
    fn poison(&self, cause: &StoreError) {
        // Kept before the flag is raised, so whoever sees the flag finds the cause.
        let _ = self.inner.failure.set(cause.to_string());
        if !self.inner.poisoned.swap(true, Ordering::SeqCst) {
            tracing::error!(error = %cause, "the store cannot be trusted to be on disk: nothing more is acknowledged or delivered");
            self.inner.failed.cancel();
        }
    }

    /// Passes a write's outcome on, poisoning the store if the storage
    /// failed: what was asked may or may not be on disk, and sled takes no
    /// more writes after its log could not be written.
    fn wrote<T>(&self, result: Result<T, StoreError>) -> Result<T, StoreError> {
        if let Err(error) = &result
            && error.is_storage()
        {
            self.poison(error);
        }
        result
    }

    /// Runs `work` holding the write gate shared: right here normally, but on
    /// a blocking thread while a backup holds the gate, so the async runtime's
    /// few threads never stop to wait for a backup.
    async fn gated<T: Send + 'static>(&self, work: impl FnOnce(&Store) -> T + Send + 'static) -> Result<T, StoreError> {
        {
            // Scoped so that no guard is alive across the await below.
            let fast = match self.inner.write_gate.try_read() {
                Ok(guard) => Some(guard),
                Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
                Err(TryLockError::WouldBlock) => None,
            };
            if let Some(_guard) = fast {
                return Ok(work(self));
            }
        }
        let store = self.clone();
        tokio::task::spawn_blocking(move || {
            let _writing = store.writing();
            work(&store)
        })
        .await
        .map_err(|error| StoreError::Task(error.to_string()))
    }

    fn writing(&self) -> RwLockReadGuard<'_, ()> {
        self.inner
            .write_gate
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn quiesced(&self) -> RwLockWriteGuard<'_, ()> {
        self.inner
            .write_gate
            .write()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Size of the store's files, in bytes.
    pub fn size_on_disk(&self) -> Result<u64, StoreError> {
        Ok(self.inner.db.size_on_disk()?)
    }

    /// A gateway's saved cursor (e.g. the Telegram update offset).
    pub fn cursor(&self, gateway: &str) -> Result<Option<Vec<u8>>, StoreError> {
        Ok(self.inner.cursors.get(gateway)?.map(|v| v.to_vec()))
    }

    /// Saves a gateway's cursor durably.
    pub async fn set_cursor(&self, gateway: &str, value: &[u8]) -> Result<(), StoreError> {
        self.wrote(self.inner.cursors.insert(gateway, value).map_err(StoreError::from))?;
        self.durable().await
    }

    /// A fresh, never reused, increasing number (sled keeps it across restarts).
    fn next_id(&self) -> Result<u64, StoreError> {
        Ok(self.inner.db.generate_id()?)
    }
}

/// Helpers for other modules' tests that need a real store.
#[cfg(test)]
pub(crate) use tests as tests_support;

#[cfg(test)]
pub(crate) mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, Inbound, InboundBody, MessageId, Sender, UserId};

    use super::*;

    pub fn open_temp() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("store"), &StoreConfig::default()).unwrap();
        (dir, store)
    }

    /// Opens the store at `path` again. sled's flush helpers let go of the
    /// files a moment after the last handle is dropped: this waits for that,
    /// within a limit.
    pub fn reopen(path: &std::path::Path) -> Store {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            match Store::open(path, &StoreConfig::default()) {
                Ok(store) => return store,
                Err(error) if std::time::Instant::now() > deadline => panic!("the store stays locked: {error}"),
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
            }
        }
    }

    pub fn conversation(chat: &str) -> ConversationKey {
        ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new(chat).unwrap())
    }

    pub fn inbound(chat: &str, id: &str, text: &str) -> Inbound {
        Inbound {
            conversation: conversation(chat),
            sender: Sender::new(UserId::new("1000").unwrap()),
            message_id: MessageId::new(id).unwrap(),
            reply_to: None,
            body: InboundBody::Text { text: text.into() },
            received_at_ms: 0,
            overheard: false,
            by_reply_only: false,
            client: None,
        }
    }

    #[tokio::test]
    async fn the_store_reopens_with_its_data() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store");
        {
            let store = Store::open(&path, &StoreConfig::default()).unwrap();
            store.journal_accept(&inbound("c", "m", "x"), 0).unwrap();
            store.durable().await.unwrap();
        }
        let store = reopen(&path);
        assert_eq!(store.pending_count(), 1);
    }

    fn no_space() -> StoreError {
        StoreError::Io(sled::Error::Io(std::io::Error::from_raw_os_error(28)))
    }

    #[tokio::test]
    async fn a_failed_write_poisons_the_store_and_keeps_why() {
        let (_dir, store) = open_temp();
        let failed = store.failed();
        let refused: Result<(), _> = store.wrote(Err(no_space()));
        assert!(refused.is_err());
        assert!(store.is_poisoned());
        assert!(failed.is_cancelled(), "whoever watches the store is told");
        let why = store.failure().unwrap();
        assert!(why.contains("No space left on device"), "{why}");
        assert!(matches!(store.durable().await, Err(StoreError::Poisoned)));
        // A later error does not replace the first.
        store.poison(&StoreError::Task("later".into()));
        assert_eq!(store.failure().unwrap(), why);
    }

    #[test]
    fn a_wrong_record_does_not_poison_the_store() {
        let (_dir, store) = open_temp();
        let refused: Result<(), _> = store.wrote(Err(StoreError::AlreadyProcessed { seq: 1 }));
        assert!(refused.is_err());
        assert!(!store.is_poisoned());
        assert_eq!(store.failure(), None);
    }

    /// A ticket covers the writes made before it: waiting on it flushes
    /// once, a ticket a flush already covered waits for nothing, and one
    /// taken after a flush waits for the next.
    #[tokio::test]
    async fn a_ticket_is_durable_after_a_flush_that_covers_it_and_not_before() {
        let (_dir, store) = open_temp();
        store.journal_accept(&inbound("c", "1", "x"), 0).unwrap();
        let first = store.write_ticket();
        assert!(store.flushed_through() < first, "nothing flushed yet");
        store.durable_through(first).await.unwrap();
        let covered = store.flushed_through();
        assert!(covered >= first, "the flush covers the ticket");

        store.journal_accept(&inbound("c", "2", "x"), 0).unwrap();
        let second = store.write_ticket();
        assert!(second > covered, "a write since is not covered by the flush before it");
        store.durable_through(first).await.unwrap();
        assert_eq!(store.flushed_through(), covered, "a covered ticket flushes nothing");
        store.durable_through(second).await.unwrap();
        assert!(store.flushed_through() >= second);

        // A plain `durable` takes a ticket of its own, which covers all.
        let third = store.write_ticket();
        store.durable().await.unwrap();
        assert!(store.flushed_through() > third);
        store.durable_through(third).await.unwrap();
    }

    /// A poisoned store reports no ticket durable, even one flushed before.
    #[tokio::test]
    async fn a_poisoned_store_reports_no_ticket_durable() {
        let (_dir, store) = open_temp();
        let ticket = store.write_ticket();
        store.durable_through(ticket).await.unwrap();
        let _: Result<(), _> = store.wrote(Err(no_space()));
        assert!(matches!(store.durable_through(ticket).await, Err(StoreError::Poisoned)));
    }

    #[tokio::test]
    async fn concurrent_durable_calls_all_return() {
        let (_dir, store) = open_temp();
        let calls: Vec<_> = (0..16)
            .map(|n| {
                let store = store.clone();
                tokio::spawn(async move {
                    store.journal_accept(&inbound("c", &n.to_string(), "x"), 0).unwrap();
                    store.durable().await.unwrap();
                })
            })
            .collect();
        for call in calls {
            call.await.unwrap();
        }
        assert_eq!(store.pending_count(), 16);
    }

    /// More stores flushing at once than sled keeps threads for writing
    /// (as a process holding many stores, the end-to-end tests' among
    /// them, does): every flush still returns. The stores run on a runtime
    /// of their own, so that a flush stuck for good fails this test rather
    /// than holding it (and its runtime's threads) forever.
    #[test]
    fn many_stores_flushing_at_once_all_return() {
        let (done, finished) = std::sync::mpsc::channel();
        let stores_thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(4)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(async {
                let stores: Vec<_> = (0..24).map(|_| open_temp()).collect();
                let flushing = stores.iter().map(|(_dir, store)| {
                    let store = store.clone();
                    tokio::spawn(async move {
                        for n in 0..40 {
                            store.journal_accept(&inbound("c", &n.to_string(), "x"), 0).unwrap();
                            store.durable().await.unwrap();
                        }
                    })
                });
                for flushed in futures::future::join_all(flushing).await {
                    flushed.unwrap();
                }
                for (_dir, store) in &stores {
                    assert_eq!(store.pending_count(), 40);
                }
            });
            let _ = done.send(());
        });
        let bound = std::time::Duration::from_secs(120);
        match finished.recv_timeout(bound) {
            Ok(()) => {}
            // It panicked: show why.
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match stores_thread.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => panic!("the stores' thread ended without saying it was done"),
            },
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => panic!("a flush did not return within {bound:?}"),
        }
    }
}
