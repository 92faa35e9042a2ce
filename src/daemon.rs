//! The daemon: builds every part from the configuration, starts the tasks,
//! and shuts them down in order — stop intake, let running turns finish within
//! the grace period, stop the background loops, close the gateways, flush the
//! store.
//!
//! [`Daemon::start`] returns once the daemon is ready (the socket answers);
//! [`run`] is start, wait for the shutdown future, shut down. The binary and
//! the tests both use them.

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use passepartout_admin::Admin;
use passepartout_gateway::{GatewayId, Intake};
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::admin::AdminContext;
use crate::approvals::{Approvals, Policy};
use crate::background;
use crate::clock::Clock;
use crate::config::{Config, ProviderKind, Secret};
use crate::core::{Core, GatewayHandle};
use crate::data_dir::{DataDirError, DataDirLock};
use crate::llm::{AnthropicClient, AnthropicSettings, ChatModel, Endpoint, OpenAiClient};
use crate::pipeline::Pipeline;
use crate::pipeline::cascade::Cascade;
use crate::schedules::Schedules;
use crate::skills::Skills;
use crate::store::{Store, StoreError};
use crate::tools::{Tool, ToolBox};

/// Room in the gateways' shared intake queue.
const INTAKE_CAPACITY: usize = 1024;

/// Room in the admin queue (questions from local clients).
const ADMIN_CAPACITY: usize = 64;

/// What can be plugged into the daemon besides its configuration.
#[derive(Default)]
pub struct Extensions {
    /// Extra tools offered to the model.
    pub tools: Vec<Arc<dyn Tool>>,
}

/// Why the daemon could not start.
#[derive(Debug, Error)]
pub enum StartError {
    #[error(transparent)]
    DataDir(#[from] DataDirError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Gateway(#[from] crate::gateways::BuildError),
    #[error("cannot set up model provider {name}: {reason}")]
    Provider { name: String, reason: String },
    #[error(transparent)]
    Tools(#[from] crate::tools::SetupError),
    #[error("a [skills] pattern is not a valid regular expression: {0}")]
    Skills(#[from] regex::Error),
    #[error("cannot start the background loops: {0}")]
    Loops(#[from] crate::daemon_loops::LoopsStartError),
}

/// A running daemon.
pub struct Daemon {
    core: Arc<Core>,
    stop_intake: CancellationToken,
    intake_task: tokio::task::JoinHandle<()>,
    /// Held until the daemon is gone; released last, after the final flush.
    _lock: DataDirLock,
    /// Where a local client reaches the daemon, when a gateway offers that.
    socket_path: Option<PathBuf>,
    grace: Duration,
    /// How long the loops get to stop at shutdown.
    loops_grace: Duration,
}

impl Daemon {
    /// Starts a daemon from `config`.
    pub async fn start(config: Config) -> Result<Daemon, StartError> {
        Self::start_with(config, Extensions::default()).await
    }

    /// Starts a daemon from `config` with `extensions` plugged in.
    pub async fn start_with(config: Config, extensions: Extensions) -> Result<Daemon, StartError> {
        let data_dir = config.data_dir();
        let lock = DataDirLock::acquire(&data_dir)?;
        let opening = std::time::Instant::now();
        let store = Store::open(&config.store_dir(), &config.store)?;
        tracing::info!(elapsed_ms = opening.elapsed().as_millis() as u64, "store opened");
        let providers = providers(&config)?;
        let cascade = Arc::new(Cascade::new(
            providers.clone(),
            Duration::from_secs(config.llm.cooldown_s),
        ));
        // One clock for the approvals, the loops and their schedules.
        let clock = Clock::start();
        let zone = config.loops.zone().map_err(|e| StartError::Loops(e.into()))?;
        let schedules = Arc::new(Schedules::new(store.clone(), clock, zone));
        let mut tools = crate::tools::builtin(&config)?;
        tools.extend(crate::tools::schedule::tools(&schedules));
        tools.extend(extensions.tools);
        let tools = ToolBox::with_limits(
            tools,
            Duration::from_secs(config.tools.timeout_s),
            config.tools.output_cap_bytes,
        );
        let skills = Skills::from_config(&config.skills, &config.tools)?;
        let approvals = Arc::new(Approvals::new(
            store.clone(),
            Policy::from_config(&config),
            clock,
            &config,
        ));
        let pipeline = Pipeline::new(&config, cascade.clone(), tools, skills, approvals.clone());
        let (admin, admin_queue) = Admin::channel(ADMIN_CAPACITY);

        let (gateways, socket_path) = start_gateways(&config, &store, admin).await?;

        let access = crate::access::Access::from_config(&config);
        let core = Core::new(store, pipeline, config.pipeline.clone(), gateways, access);
        // Before any gateway can hand in something new, so that what was
        // waiting is answered first, in order.
        background::recover(&core);
        core.tracker.spawn(background::approval_expiry(core.clone()));
        // The heartbeat sweeps approvals too, and writes the periodic backups.
        crate::daemon_loops::start(&core, &config, schedules).await?;
        let stop_intake = CancellationToken::new();
        let (intake, queue) = Intake::channel(INTAKE_CAPACITY);
        let intake_task = core
            .tracker
            .spawn(crate::intake::run(core.clone(), queue, stop_intake.clone()));
        let admin = admin_context(&core, approvals, cascade);
        core.tracker
            .spawn(crate::admin::run(admin, admin_queue, stop_intake.clone()));
        for (id, handle) in &core.gateways {
            let gateway = handle.listen.clone();
            let supervised = background::supervise(id.clone(), gateway, intake.clone(), stop_intake.clone());
            core.tracker.spawn(supervised);
        }
        drop(intake);
        let draining = core.draining.clone();
        core.tracker.spawn(async move {
            tokio::select! {
                _ = draining.cancelled() => {}
                _ = crate::doctor::log_startup_checks(providers) => {}
            }
        });
        let dedupe_window = Duration::from_secs(config.store.dedupe_window_s);
        let keep_decided = Duration::from_secs(config.approvals.keep_decided_days.saturating_mul(24 * 3600));
        core.tracker
            .spawn(background::maintenance(core.clone(), dedupe_window, keep_decided));
        tracing::info!(
            data_dir = %data_dir.display(),
            socket = ?socket_path,
            pending = core.store.pending_count(),
            outbox = core.store.outbox_len(),
            "passepartout ready"
        );
        let grace = Duration::from_secs(config.pipeline.shutdown_grace_s);
        Ok(Daemon {
            core,
            stop_intake,
            intake_task,
            _lock: lock,
            socket_path,
            grace,
            loops_grace: Duration::from_secs(config.loops.shutdown_grace_s),
        })
    }

    /// The local socket's path, when the socket gateway runs.
    pub fn socket_path(&self) -> Option<&Path> {
        self.socket_path.as_deref()
    }

    /// The status document, as `passepartout status --json` shows it.
    pub fn status(&self) -> serde_json::Value {
        self.core.status_document()
    }

    /// Stops intake, stops the loops within their grace period, lets running
    /// turns finish within theirs, closes the gateways and flushes the store.
    pub async fn shutdown(self) -> Result<(), StoreError> {
        tracing::info!("shutting down: intake stopped");
        self.stop_intake.cancel();
        // The intake's last batch is acknowledged and dispatched before the
        // workers are told to stop; what they do not reach runs at next start.
        if tokio::time::timeout(self.grace, self.intake_task).await.is_err() {
            tracing::warn!("intake did not stop within the grace period");
        }
        // Before the workers drain: a loop's last iteration may still hand
        // them work (a heartbeat nudging a conversation).
        if let Some(loops) = self.core.loops() {
            let drained = loops.shutdown(self.loops_grace).await;
            tracing::info!(stopped = drained.stopped, aborted = drained.aborted, "loops stopped");
        }
        self.core.draining.cancel();
        self.core.tracker.close();
        if tokio::time::timeout(self.grace, self.core.tracker.wait())
            .await
            .is_err()
        {
            tracing::warn!(
                grace_s = self.grace.as_secs(),
                "turns still running after the grace period; they will run again at next start"
            );
        }
        for handle in self.core.gateways.values() {
            handle.listen.close().await;
        }
        self.core.store.durable().await?;
        tracing::info!("store flushed; bye");
        Ok(())
    }
}

/// Starts a daemon from `config`, runs it until `shutdown` completes, then
/// shuts it down in order.
pub async fn run(config: Config, shutdown: impl Future<Output = ()>) -> anyhow::Result<()> {
    let daemon = Daemon::start(config).await?;
    let failed = daemon.core.store.failed();
    let store_failed = tokio::select! {
        _ = shutdown => false,
        _ = failed.cancelled() => true,
    };
    daemon.shutdown().await?;
    if store_failed {
        // Exit non-zero so a supervisor (systemd) restarts the daemon, which
        // reopens the store and redoes whatever was not on disk.
        anyhow::bail!("the store failed to flush; stopped so that nothing unsaved is acknowledged");
    }
    Ok(())
}

/// What the admin path needs, taken from the core.
fn admin_context(core: &Arc<Core>, approvals: Arc<Approvals>, cascade: Arc<Cascade>) -> AdminContext {
    let status = core.clone();
    let nudge = core.clone();
    AdminContext {
        status: Arc::new(move || status.status_document()),
        approvals,
        loops: core.clone(),
        cascade,
        store: core.store.clone(),
        tracker: core.tracker.clone(),
        nudge: Arc::new(move |key| nudge.router.nudge(&nudge, key)),
    }
}

/// Starts every enabled gateway component, one list for all of them; also
/// returns where a local client reaches the daemon.
async fn start_gateways(
    config: &Config,
    store: &Store,
    admin: Admin,
) -> Result<(HashMap<GatewayId, GatewayHandle>, Option<PathBuf>), StartError> {
    let mut gateways = HashMap::new();
    let mut local_path = None;
    let with = crate::gateways::BuildContext {
        store: store.clone(),
        admin,
    };
    for component in crate::gateways::components(config) {
        if !component.enabled() {
            continue;
        }
        let built = component.build(&with).await?;
        local_path = local_path.or(built.local_path);
        let handle = GatewayHandle {
            deliver: built.deliver,
            listen: built.listen,
        };
        gateways.insert(handle.listen.id(), handle);
    }
    Ok((gateways, local_path))
}

pub(crate) fn providers(config: &Config) -> Result<Vec<Arc<dyn ChatModel>>, StartError> {
    config
        .llm
        .providers
        .iter()
        .map(|provider| {
            let api_key = Secret::named(provider.api_key_env.as_deref(), provider.api_key_file.as_deref())
                .unwrap_or_else(|| Ok(Secret::new(String::new())));
            // A missing key is a degraded start, not a failed one: the
            // provider answers 401 and doctor says which variable to set.
            let api_key = match api_key {
                Ok(key) if key.expose().is_empty() => None,
                Ok(key) => Some(key),
                Err(error) => {
                    tracing::warn!(provider = %provider.name, %error, "no API key");
                    None
                }
            };
            let endpoint = Endpoint {
                name: provider.name.clone(),
                base_url: provider.base_url.clone(),
                model: provider.model.clone(),
                api_key,
                connect_timeout: Duration::from_secs(provider.connect_timeout_s),
                timeout: Duration::from_secs(provider.timeout_s),
            };
            let client: Result<Arc<dyn ChatModel>, _> = match provider.kind {
                ProviderKind::Openai => OpenAiClient::new(endpoint).map(|client| Arc::new(client) as _),
                ProviderKind::Anthropic => AnthropicClient::new(AnthropicSettings {
                    endpoint,
                    max_tokens: provider.max_tokens,
                })
                .map(|client| Arc::new(client) as _),
            };
            client.map_err(|error| StartError::Provider {
                name: provider.name.clone(),
                reason: error.to_string(),
            })
        })
        .collect()
}
