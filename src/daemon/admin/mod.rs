//! The admin path: the core's end of the local administration queue.
//!
//! The machine's owner asks through the local socket for the daemon's status,
//! the approvals, the background loops, pairing, sign-in links for the web
//! dashboard, its pages' documents and a reload of the configuration
//! ([`passepartout_admin`]); those
//! questions never travel with chat messages through the intake. [`run`]
//! takes them one at a time and hands each to the file in `answers/` that
//! answers its request, one file per request; what is in memory is answered
//! at once, whatever waits on the disk or the network is spawned on the
//! daemon's task tracker, so a slow answer holds up no other question and
//! shutdown waits for it.
//!
//! [`AdminContext`] holds exactly what the answers need, handed in by the
//! daemon.

mod answers;
mod channels;
mod config_write;
mod loop_desk;
mod redacted;
mod relative;
mod reloaded;

use std::path::PathBuf;
use std::sync::Arc;

use passepartout_admin::{AdminQueue, AdminReply, Reloaded};
use passepartout_gateway::ConversationKey;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::engine::pipeline::cascade::Cascade;
use crate::engine::pipeline::tool_list::ToolList;
use crate::foundation::clock::Clock;
use crate::people::pairing::Pairing;
use crate::safety::approvals::Approvals;
use crate::store::Store;

pub use channels::Linking;
pub use config_write::{Changes, digest};
pub use loop_desk::LoopDesk;

/// Where an answer goes.
type Reply = oneshot::Sender<AdminReply>;

/// What the admin path reads and acts on.
pub struct AdminContext {
    /// Assembles the status document (`passepartout status`).
    pub status: Arc<dyn Fn() -> serde_json::Value + Send + Sync>,
    /// The approvals: listed, and decided by the local user.
    pub approvals: Arc<Approvals>,
    /// Pairing codes approved, people listed and revoked.
    pub pairing: Arc<Pairing>,
    /// People linked across channels: listed, linked from the terminal, unlinked.
    pub linking: Arc<crate::people::linking::Linking>,
    /// The background loops: listed, stopped, triggered.
    pub loops: Arc<dyn LoopDesk>,
    /// The tools and the gates now (`passepartout tools`).
    pub tools: Arc<dyn Fn() -> ToolList + Send + Sync>,
    /// The configured model providers now, with their prices (the usage's cost).
    pub providers: Arc<dyn Fn() -> Vec<crate::engine::pipeline::model_command::ProviderInfo> + Send + Sync>,
    /// Reads the configuration again (`passepartout reload`, SIGHUP).
    pub reload: Arc<dyn Reload>,
    /// The model providers, probed again on `recheck`.
    pub cascade: Arc<Cascade>,
    /// Made durable before a decision is confirmed.
    pub store: Store,
    /// Every answer that waits is spawned here, so shutdown waits for it.
    pub tracker: TaskTracker,
    /// The web dashboard's sign-in links and sessions.
    pub sign_in: crate::gateways::web::sign_in::SignIn,
    /// The web API's keys.
    pub web_keys: crate::gateways::web::keys::WebKeys,
    /// Wakes the worker of a conversation that has something waiting (the
    /// outcome of an approval decided here).
    pub nudge: Arc<dyn Fn(&ConversationKey) + Send + Sync>,
    /// The daemon's clock: which days the dashboard's usage covers.
    pub clock: Clock,
    /// A text with every configured secret (keys, tokens, credentials)
    /// replaced: the dashboard's history and search never show one, even
    /// when a tool's output quoted it.
    pub redact: Arc<redacted::Redact>,
    /// The daemon's recent log lines (the dashboard's Logs page); none
    /// where the process keeps none.
    pub logs: Option<Arc<crate::daemon::recent_logs::RecentLogs>>,
    /// Changes to the configuration file from the dashboard, one at a time.
    pub changes: Changes,
    /// Where linking a Signal account from the dashboard stands.
    pub signal_link: Linking,
}

/// Answers admin questions until `stop` is cancelled or every admin handle
/// is dropped.
pub async fn run(admin: AdminContext, mut queue: AdminQueue, stop: CancellationToken) {
    let admin = Arc::new(admin);
    loop {
        let asked = tokio::select! {
            biased;
            _ = stop.cancelled() => break,
            asked = queue.recv() => match asked {
                Some(asked) => asked,
                None => break,
            },
        };
        answers::answer(&admin, asked);
    }
    // Whatever is still queued is answered "closed" by dropping it.
    queue.close();
    tracing::debug!("admin path stopped");
}

/// Reading the configuration again, as the daemon does it: the admin path
/// asks, and never needs to know what a reload touches.
#[async_trait::async_trait]
pub trait Reload: Send + Sync {
    /// Reads the file, applies what can change while the daemon runs, and
    /// says what did, what waits for a restart, or why the file was refused.
    async fn reload(&self) -> Reloaded;

    /// The file a reload reads, and what `check-config` says of it now,
    /// changing nothing. Reads the disk: called off the async threads.
    fn inspect(&self) -> Inspection;

    /// The file a reload reads; none when the daemon runs on the defaults
    /// and the environment. Unless implemented, asks [`inspect`](Self::inspect).
    fn file(&self) -> Option<PathBuf> {
        self.inspect().file
    }

    /// What `check-config` says of `file`, read as the configuration
    /// would be (a file about to replace it). Reads the disk, as `inspect`.
    /// Unless implemented, no file passes.
    fn inspect_file(&self, file: &std::path::Path) -> Inspection {
        Inspection {
            file: Some(file.to_path_buf()),
            problems: vec!["this daemon cannot check another configuration file".into()],
            ..Inspection::default()
        }
    }
}

/// The configuration file and what `check-config` says of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Inspection {
    /// The file; none when the daemon runs on the defaults and the
    /// environment.
    pub file: Option<PathBuf>,
    /// What keeps the file from being taken (at a start or a reload).
    pub problems: Vec<String>,
    /// What is taken but likely not meant.
    pub warnings: Vec<String>,
    /// Whether the file, as it reads now, turns the web dashboard on
    /// (`[web] enabled`), which the running daemon may not have started with.
    pub web_enabled: bool,
}

#[cfg(test)]
mod tests;
