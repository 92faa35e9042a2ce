//! The daemon: builds every part from the configuration, starts the tasks,
//! and shuts them down in order — stop intake, stop the background loops
//! within their grace period, drain its [`Lifecycle`] (running turns finish
//! within theirs), then the tool servers' supervisors, close the gateways,
//! flush the store.
//!
//! Each part is handed what it uses: the one `Lifecycle` to the parts that
//! spawn tasks or watch for the drain, the store and the approvals to those
//! that read or decide them, and the [`Conversations`] to those that queue
//! work, wake a conversation or read its counters, which they do through
//! its verbs.
//!
//! [`Daemon::start`] returns once the daemon is ready (the socket answers);
//! [`run`] is start, wait for the shutdown future, shut down. The binary and
//! the tests both use them.
//!
//! This folder holds what runs only inside a running daemon: its
//! [`background`] tasks, the [`admin`] path that answers the local
//! administration, [`reload`], the [`recent_logs`] kept for the dashboard,
//! and the word to the [`service_manager`].

pub mod admin;
pub(crate) mod background;
pub mod recent_logs;
pub mod reload;
pub mod service_manager;

use std::collections::HashMap;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use passepartout_admin::Admin;
use passepartout_gateway::{Deliver, Draft, GatewayId, Intake, Listen, LiveSecrets, Secrets};
use thiserror::Error;
use tokio_util::sync::CancellationToken;

use crate::config::Config;
use crate::daemon::admin::AdminContext;
use crate::daemon::reload::{Live, Reloader};
use crate::engine::bridges::{Bridges, Carrier};
use crate::engine::conversations::{Conversations, Outlets, Views};
use crate::engine::intake::IntakeContext;
use crate::engine::loops::daemon::Loops;
use crate::engine::loops::heartbeat::{BackupPlan, Heartbeat};
use crate::engine::loops::schedules::Schedules;
use crate::engine::pipeline::Pipeline;
use crate::engine::pipeline::cascade::Cascade;
use crate::engine::pipeline::setup_hint::SetupHint;
use crate::foundation::clock::Clock;
use crate::foundation::data_dir::{DataDirError, DataDirLock};
use crate::foundation::lifecycle::Lifecycle;
use crate::gateways::restarts::Restarts;
use crate::gateways::{BuildContext, GatewayComponent};
use crate::model::llm::{ChatModel, ToolSpec};
use crate::model::media::{Fetchers, Media, MediaPruning};
use crate::operator::status::{PipelineGauges, StatusSources};
use crate::people::linking::Linking;
use crate::safety::approvals::{Approvals, Unconfined};
use crate::safety::mcp::McpServers;
use crate::safety::sandbox::Support;
use crate::safety::skills::Skills;
use crate::safety::tools::{Tool, ToolBox};
use crate::store::{Store, StoreError};

/// Room in the gateways' shared intake queue.
const INTAKE_CAPACITY: usize = 1024;

/// Room in the admin queue (questions from local clients).
const ADMIN_CAPACITY: usize = 64;

/// What can be plugged into the daemon besides its configuration.
#[derive(Default)]
pub struct Extensions {
    /// Extra tools offered to the model.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Extra gateways, started beside the configured ones; who may talk and
    /// approve through them is as they say, and they fetch their messages'
    /// media if they build a fetcher.
    pub gateways: Vec<Box<dyn GatewayComponent>>,
    /// The file the configuration was read from, read again on a reload
    /// (SIGHUP, `passepartout reload`); none: the defaults and the
    /// environment are read again.
    pub config_file: Option<PathBuf>,
    /// The clock the daemon reads; none: the system's.
    pub clock: Option<Clock>,
    /// The log lines kept for the dashboard's Logs page; none: the process
    /// keeps none (its log is another's, as in tests).
    pub logs: Option<Arc<crate::daemon::recent_logs::RecentLogs>>,
    /// The secrets the process's log redacts, which the daemon shares and
    /// adds a reloaded file's to; none: a set of the daemon's own.
    pub secrets: Option<LiveSecrets>,
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
    #[error(transparent)]
    Provider(#[from] crate::model::llm::ProviderError),
    #[error(transparent)]
    Tools(#[from] crate::safety::tools::SetupError),
    #[error("a [skills] pattern is not a valid regular expression: {0}")]
    Skills(#[from] regex::Error),
    #[error("cannot start the background loops: {0}")]
    Loops(#[from] crate::engine::loops::daemon::LoopsStartError),
    /// Settings name tools or arguments the daemon does not have (as
    /// `check-config` reports them): the gates they set would never apply.
    #[error("{} problem(s) in the configuration:\n  - {}", problems.len(), problems.join("\n  - "))]
    UnknownNames { problems: Vec<String> },
    /// An enabled gateway cannot start (its token cannot be read), as
    /// `check-config` reports it.
    #[error("{} problem(s) in the configuration:\n  - {}", problems.len(), problems.join("\n  - "))]
    Unstartable { problems: Vec<String> },
}

/// A gateway as the daemon holds it: how to deliver, and how it listens.
#[derive(Clone)]
struct GatewayHandle {
    deliver: Arc<dyn Deliver>,
    listen: Arc<dyn Listen>,
    draft: Option<Arc<dyn Draft>>,
}

/// The running gateways, and where a local client reaches the daemon.
struct Gateways {
    handles: HashMap<GatewayId, GatewayHandle>,
    /// How the media of each gateway's messages is fetched.
    fetchers: Fetchers,
    local_path: Option<PathBuf>,
    /// How often each gateway's supervisor restarted it.
    restarts: Arc<Restarts>,
}

impl Gateways {
    /// The halves the conversations deliver and show drafts through, and
    /// the `bridges` between their chats.
    fn outlets(&self, bridges: Bridges) -> Outlets {
        Outlets {
            deliver: self
                .handles
                .iter()
                .map(|(id, handle)| (id.clone(), handle.deliver.clone()))
                .collect(),
            drafts: self
                .handles
                .iter()
                .filter_map(|(id, handle)| Some((id.clone(), handle.draft.clone()?)))
                .collect(),
            bridges: Arc::new(bridges),
        }
    }

    fn listen(&self) -> Vec<Arc<dyn Listen>> {
        self.handles.values().map(|handle| handle.listen.clone()).collect()
    }
}

/// A running daemon.
pub struct Daemon {
    /// Flushed last at shutdown; its failure stops the daemon.
    store: Store,
    /// Every task the daemon spawns, and the token that drains them.
    lifecycle: Lifecycle,
    loops: Arc<Loops>,
    status: Arc<StatusSources>,
    gateways: Vec<Arc<dyn Listen>>,
    stop_intake: CancellationToken,
    intake_task: tokio::task::JoinHandle<()>,
    /// Held until the daemon is gone; released last, after the final flush.
    _lock: DataDirLock,
    socket_path: Option<PathBuf>,
    grace: Duration,
    /// How long the loops get to stop at shutdown.
    loops_grace: Duration,
    /// Reads the configuration again.
    reloader: Arc<Reloader>,
    /// The tool servers, and the lifecycle of their supervisors, drained
    /// after the turns that may call them.
    mcp: Arc<McpServers>,
    mcp_lifecycle: Lifecycle,
}

impl Daemon {
    /// Starts a daemon from `config`.
    pub async fn start(config: Config) -> Result<Daemon, StartError> {
        Self::start_with(config, Extensions::default()).await
    }

    /// Starts a daemon from `config` with `extensions` plugged in.
    pub async fn start_with(config: Config, mut extensions: Extensions) -> Result<Daemon, StartError> {
        let more_tools = refuse_what_cannot_start(&config, &extensions)?;
        let data_dir = config.data_dir();
        let lock = DataDirLock::acquire(&data_dir)?;
        let store = open_store(&config)?;
        // One clock for the journal, the approvals, the loops and their schedules.
        let clock = extensions.clock.unwrap_or_else(Clock::start);
        let providers = crate::model::llm::providers(&config)?;
        let zone = config.loops.zone().map_err(|e| StartError::Loops(e.into()))?;
        let schedules = Arc::new(Schedules::new(store.clone(), clock, zone));
        let config_file = extensions.config_file.clone();
        let logs = extensions.logs.clone();
        let given_secrets = extensions.secrets.take();
        let cascade = cascade(&config, &providers, config_file.clone());
        let plugged = std::mem::take(&mut extensions.gateways);
        let fixed_lists = crate::daemon::reload::lists(&plugged);
        let configured = crate::gateways::components(&config);
        let fixed_count = configured.len();
        let components: Vec<Box<dyn GatewayComponent>> = configured.into_iter().chain(plugged).collect();
        // Where every gateway's secrets are kept, the plugged ones' too: the
        // sandbox protects them and what the daemon shows leaves them out.
        let secret_places = crate::gateways::secret_places(&config, &components[fixed_count..]);
        let pairing = Arc::new(crate::gateways::pairing(&components, &config, &store, clock)?);
        let guards = Guards::new(&config, &components, &pairing, &secret_places, config_file.as_deref());
        let (pipeline, approvals, gauges) =
            pipeline(&config, &store, clock, cascade.clone(), &schedules, guards, extensions)?;
        let mcp = gauges.mcp.clone();
        let mcp_lifecycle = start_mcp(&config, &mcp);
        let (admin, admin_queue) = Admin::channel(ADMIN_CAPACITY);
        // One set for the gateways, the admin path and the reload, which
        // adds what a reloaded file names.
        let secrets = live_secrets(
            crate::config::configured_secrets(&config, &secret_places),
            given_secrets,
        );
        let with = BuildContext {
            store: store.clone(),
            admin,
            clock,
            stream: config.pipeline.stream,
            secrets: secrets.clone(),
        };
        let gateways = gateways(&components, &with).await?;
        // Once the gateways run: media is fetched through them.
        let pipeline = pipeline.with_media(Media::new(&config, gateways.fetchers.clone()));
        let lifecycle = Lifecycle::new();
        let conversations = Conversations::new(
            store.clone(),
            pipeline,
            approvals.clone(),
            gateways.outlets(bridges(&config, &gateways, &components)),
            config.pipeline.clone(),
            clock,
            lifecycle.clone(),
        );
        // A gateway's own stores (Matrix's keys) are backed up with the store.
        let beside = components
            .iter()
            .filter_map(|component| component.kept_beside())
            .collect();
        let heartbeat = Heartbeat::new(
            approvals.clone(),
            store.clone(),
            clock,
            BackupPlan::configured(&config, beside),
        );
        let loops = Loops::new(&conversations, heartbeat, &lifecycle, clock, &config, schedules);
        let status = status(&conversations, &gateways, &loops, clock, gauges, &approvals, &store);
        // Before any gateway can hand in something new, so that what was
        // waiting is answered first, in order.
        resume_conversations(&conversations, &store, &approvals, &lifecycle);
        // The heartbeat sweeps approvals too, and writes the periodic backups.
        loops.start(&config).await?;
        let wired = Wired {
            store: store.clone(),
            clock,
            lifecycle: lifecycle.clone(),
            conversations,
            approvals,
            loops: loops.clone(),
            cascade,
            secrets,
            pairing,
            status: status.clone(),
        };
        let intake = wired.intake(&config, &components)?;
        let linking = intake.linking.clone();
        let reloader = wired.reloader(config_file, &config, fixed_lists, more_tools, intake.access.clone());
        let (stop_intake, intake_task) = start_intake(intake, &gateways);
        let admin = wired.admin(linking, reloader.clone(), logs);
        lifecycle.spawn(crate::daemon::admin::run(admin, admin_queue, stop_intake.clone()));
        spawn_housekeeping(&lifecycle, store.clone(), &config, clock, providers);
        log_ready(&data_dir, &gateways, &store);
        Ok(Daemon {
            store,
            lifecycle,
            loops,
            status,
            gateways: gateways.listen(),
            stop_intake,
            intake_task,
            _lock: lock,
            reloader,
            socket_path: gateways.local_path,
            grace: Duration::from_secs(config.pipeline.shutdown_grace_s),
            loops_grace: Duration::from_secs(config.loops.shutdown_grace_s),
            mcp,
            mcp_lifecycle,
        })
    }

    /// The tool servers: their state, and a way to wait for it to change.
    pub fn mcp(&self) -> &Arc<McpServers> {
        &self.mcp
    }

    /// Reads the configuration again and applies what can change while
    /// the daemon runs (as SIGHUP and `passepartout reload` do).
    pub async fn reload(&self) -> passepartout_admin::Reloaded {
        self.reloader.reload().await
    }

    /// The local socket's path, when the socket gateway runs.
    pub fn socket_path(&self) -> Option<&Path> {
        self.socket_path.as_deref()
    }

    /// The status document, as `passepartout status --json` shows it.
    pub fn status(&self) -> serde_json::Value {
        self.status.document()
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
        let drained = self.loops.shutdown(self.loops_grace).await;
        tracing::info!(stopped = drained.stopped, aborted = drained.aborted, "loops stopped");
        if !self.lifecycle.drain(self.grace).await {
            tracing::warn!(
                grace_s = self.grace.as_secs(),
                "turns still running after the grace period; they will run again at next start"
            );
        }
        // After the turns: a running turn may still call a server's tool.
        if !self.mcp_lifecycle.drain(self.grace).await {
            tracing::warn!("tool servers' supervisors still running after the grace period");
        }
        for listen in &self.gateways {
            listen.close().await;
        }
        self.store.durable().await?;
        tracing::info!("store flushed; bye");
        Ok(())
    }
}

/// The status document's sources, which also answer the chat's `/status`
/// and `/loops`.
fn status(
    conversations: &Arc<Conversations>,
    gateways: &Gateways,
    loops: &Arc<Loops>,
    clock: Clock,
    pipeline: PipelineGauges,
    approvals: &Arc<Approvals>,
    store: &Store,
) -> Arc<StatusSources> {
    let status = Arc::new(StatusSources {
        conversations: conversations.clone(),
        pipeline,
        approvals: approvals.clone(),
        store: store.clone(),
        gateways: gateways.listen(),
        restarts: gateways.restarts.clone(),
        loops: loops.clone(),
        clock,
        started: Instant::now(),
    });
    conversations.show_views_with(&(status.clone() as Arc<dyn Views>));
    status
}

/// Queues what was waiting in `store` when the daemon stopped, and arms the
/// `approvals`' expiry timer, which stops when `lifecycle` drains.
fn resume_conversations(
    conversations: &Arc<Conversations>,
    store: &Store,
    approvals: &Arc<Approvals>,
    lifecycle: &Lifecycle,
) {
    background::recover(conversations, store, approvals);
    lifecycle.spawn(background::approval_expiry(
        approvals.clone(),
        conversations.clone(),
        lifecycle.draining().clone(),
    ));
}

fn open_store(config: &Config) -> Result<Store, StoreError> {
    let opening = std::time::Instant::now();
    let store = Store::open(&config.store_dir(), &config.store)?;
    tracing::info!(elapsed_ms = opening.elapsed().as_millis() as u64, "store opened");
    Ok(store)
}

/// The tools beside the built-in ones (the loops' and the `extensions`'),
/// once nothing would keep the daemon from starting well: checked before
/// anything is touched, since a misspelt tool name switches a gate off, and
/// a gateway that cannot start is said before any other starts.
fn refuse_what_cannot_start(config: &Config, extensions: &Extensions) -> Result<Vec<ToolSpec>, StartError> {
    let more_tools: Vec<_> = crate::engine::loops::tools::specs()
        .into_iter()
        .chain(extensions.tools.iter().map(|tool| tool.spec()))
        .collect();
    let catalog = crate::safety::tools::ToolCatalog::registered(config, more_tools.iter().cloned());
    let names = crate::safety::skills::check_names(&config.skills, &config.tools, &catalog);
    names
        .refused()
        .map_err(|problems| StartError::UnknownNames { problems })?;
    let unstartable = crate::gateways::start_problems(config, |name| std::env::var(name).ok());
    if !unstartable.is_empty() {
        return Err(StartError::Unstartable { problems: unstartable });
    }
    Ok(more_tools)
}

/// The secrets the daemon keeps out of what it shows: the `given` set (the
/// process's log's) with `configured` added, or a set of its own.
fn live_secrets(configured: Secrets, given: Option<LiveSecrets>) -> LiveSecrets {
    match given {
        Some(secrets) => {
            secrets.add(&configured);
            secrets
        }
        None => LiveSecrets::new(configured),
    }
}

/// The running parts the intake, the reload and the admin path are
/// handed, once the conversations and the loops run.
struct Wired {
    store: Store,
    clock: Clock,
    lifecycle: Lifecycle,
    conversations: Arc<Conversations>,
    approvals: Arc<Approvals>,
    loops: Arc<Loops>,
    cascade: Arc<Cascade>,
    secrets: LiveSecrets,
    pairing: Arc<crate::people::pairing::Pairing>,
    status: Arc<StatusSources>,
}

impl Wired {
    /// What the intake decides with: who may talk through each of the
    /// `components` (and who was paired), the linking of people, and the
    /// conversations it hands messages to.
    fn intake(
        &self,
        config: &Config,
        components: &[Box<dyn GatewayComponent>],
    ) -> Result<Arc<IntakeContext>, StartError> {
        let access = Arc::new(
            crate::people::access::Access::from_rosters(components.iter().map(|c| (c.id(), c.talkers())))
                .with_paired(self.pairing.paired()),
        );
        let linking = Arc::new(Linking::new(
            self.store.clone(),
            self.clock,
            access.clone(),
            config.approvals.wrong_tokens_per_hour,
        )?);
        Ok(Arc::new(IntakeContext {
            conversations: self.conversations.clone(),
            store: self.store.clone(),
            approvals: self.approvals.clone(),
            access,
            pairing: self.pairing.clone(),
            linking,
            clock: self.clock,
            max_message_bytes: config.pipeline.max_message_bytes,
            lifecycle: self.lifecycle.clone(),
        }))
    }

    /// What reads the configuration again (from `file`; `running` now) and
    /// applies it: the intake's `access` and the parts a reload swaps, the
    /// `fixed` lists of the plugged gateways, and the `more_tools` its
    /// check knows.
    fn reloader(
        &self,
        file: Option<PathBuf>,
        running: &Config,
        fixed: Vec<crate::people::pairing::Lists>,
        more_tools: Vec<ToolSpec>,
        access: Arc<crate::people::access::Access>,
    ) -> Arc<Reloader> {
        let live = Live {
            access,
            pairing: self.pairing.clone(),
            cascade: self.cascade.clone(),
            conversations: self.conversations.clone(),
            approvals: self.approvals.clone(),
            loops: self.loops.clone(),
            secrets: self.secrets.clone(),
        };
        Arc::new(Reloader::new(file, running.clone(), fixed, more_tools, live))
    }

    /// The admin path: the status, the approvals, the loops, the cascade
    /// it probes again, the pairing desk and the `linking`, the store it
    /// makes decisions durable in, the tracker its slow answers run on, the
    /// `reload` of the configuration, a way to wake a conversation, and the
    /// `logs` the dashboard shows.
    fn admin(
        self,
        linking: Arc<Linking>,
        reload: Arc<Reloader>,
        logs: Option<Arc<crate::daemon::recent_logs::RecentLogs>>,
    ) -> AdminContext {
        let Wired {
            store,
            clock,
            lifecycle,
            conversations,
            approvals,
            loops,
            cascade,
            secrets,
            pairing,
            status,
        } = self;
        let (current, priced) = (conversations.clone(), conversations.clone());
        AdminContext {
            status: Arc::new(move || status.document()),
            approvals,
            pairing,
            linking,
            loops,
            cascade,
            tools: Arc::new(move || current.pipeline().tool_list()),
            providers: Arc::new(move || priced.pipeline().providers().to_vec()),
            reload,
            clock,
            sign_in: crate::gateways::web::sign_in::SignIn::new(store.clone(), clock),
            web_keys: crate::gateways::web::keys::WebKeys::new(store.clone(), clock),
            store,
            tracker: lifecycle.tracker().clone(),
            nudge: Arc::new(move |key| conversations.nudge(key)),
            redact: Arc::new(move |text| secrets.now().redact(text)),
            logs,
            changes: Default::default(),
            signal_link: Default::default(),
        }
    }
}

/// Who decides the approvals the tools ask, and what confines the
/// processes they start.
struct Guards {
    approvals: crate::safety::approvals::Policy,
    sandbox: crate::safety::sandbox::Policy,
}

impl Guards {
    /// The deciders each of the `components` names (and those `pairing`
    /// let in as approvers), and a sandbox that keeps the tools from the
    /// daemon's data, its `config_file` and the `secret_places`.
    fn new(
        config: &Config,
        components: &[Box<dyn GatewayComponent>],
        pairing: &crate::people::pairing::Pairing,
        secret_places: &crate::config::SecretPlaces,
        config_file: Option<&Path>,
    ) -> Self {
        let deciders = components.iter().map(|c| (c.id(), c.deciders()));
        Guards {
            approvals: crate::safety::approvals::Policy::from_rosters(deciders, &config.approvals)
                .with_paired(pairing.paired()),
            sandbox: crate::safety::sandbox::Policy::for_tools(config, secret_places, config_file, Support::probe()),
        }
    }
}

/// The models, in the order `config` tries them among its `providers`,
/// whose hints name the `config_file` to fix.
fn cascade(config: &Config, providers: &[Arc<dyn ChatModel>], config_file: Option<PathBuf>) -> Arc<Cascade> {
    let hint = SetupHint::new(config_file, crate::config::default_config_path());
    Arc::new(Cascade::new(providers.to_vec(), Duration::from_secs(config.llm.cooldown_s)).with_hint(hint))
}

/// Starts the tool servers `mcp` in the background, so that a server that
/// is slow or fails never holds up or stops the daemon; the lifecycle of
/// their supervisors.
fn start_mcp(config: &Config, mcp: &McpServers) -> Lifecycle {
    let lifecycle = Lifecycle::new();
    mcp.start(
        &config.mcp,
        config.mcp_homes(),
        lifecycle.tracker(),
        lifecycle.draining(),
    );
    lifecycle
}

/// The pipeline — the model `cascade`, the tools (the built-in ones, the
/// loops' `schedules` tools, the `extensions`), the skills — and the
/// approvals it holds actions for, decided and confined by `guards`, on `clock`; with
/// what the status reads of its parts.
fn pipeline(
    config: &Config,
    store: &Store,
    clock: Clock,
    cascade: Arc<Cascade>,
    schedules: &Arc<Schedules>,
    guards: Guards,
    extensions: Extensions,
) -> Result<(Pipeline, Arc<Approvals>, PipelineGauges), StartError> {
    let Guards {
        approvals: policy,
        sandbox,
    } = guards;
    let sandbox = sandbox.with_cgroups(crate::safety::sandbox::Cgroups::find(true));
    if !sandbox.confines() {
        tracing::warn!(what = %sandbox.describe(), "tool processes are not confined");
    }
    let mut tools = crate::safety::tools::builtin(config, crate::gateways::uploads(config), sandbox.clone())?;
    if let Err(error) = crate::safety::tools::send_file::prune_outgoing(&config.data_dir().join("outgoing"), store) {
        tracing::warn!(%error, "cannot check which files copied for sending still wait");
    }
    tools.extend(crate::engine::loops::tools::tools(schedules));
    tools.extend(extensions.tools);
    let mcp = Arc::new(McpServers::new(&config.mcp, sandbox.clone()));
    let tools = ToolBox::with_limits(
        tools,
        Duration::from_secs(config.tools.timeout_s),
        config.tools.output_cap_bytes,
    )
    .with_late(mcp.clone());
    let skills = Skills::from_config(&config.skills, &config.tools, &config.mcp)?;
    let approvals = Arc::new(
        Approvals::new(store.clone(), policy, clock, &config.approvals)
            .with_surfaces(crate::gateways::surfaces(config))
            .with_unconfined(Unconfined::on(
                sandbox.confines(),
                config.tools.sandbox.require,
                &config.mcp,
            )),
    );
    let gauges = PipelineGauges {
        cascade: cascade.clone(),
        tools: tools.telemetry().clone(),
        skills: skills.telemetry().clone(),
        mcp,
        sandbox,
    };
    let pipeline = Pipeline::new(config, cascade, tools, skills, approvals.clone(), clock);
    Ok((pipeline, approvals, gauges))
}

/// The group chats `config` joins across the running `gateways`, the files
/// carried through them, the gateways named as their `components` say.
fn bridges(config: &Config, gateways: &Gateways, components: &[Box<dyn GatewayComponent>]) -> Bridges {
    Bridges::new(&config.bridges)
        .carrying(Carrier {
            fetchers: gateways.fetchers.clone(),
            uploads: crate::gateways::uploads(config),
            outgoing: config.data_dir().join("outgoing"),
        })
        .naming(crate::gateways::channels(components))
}

/// Starts every enabled gateway component, from the one list of them;
/// those that can show drafts do so unless `stream` or their own setting
/// says not to.
async fn gateways(components: &[Box<dyn GatewayComponent>], with: &BuildContext) -> Result<Gateways, StartError> {
    let mut handles = HashMap::new();
    let mut fetchers = Fetchers::default();
    let mut local_path = None;
    for component in components {
        if !component.enabled() {
            continue;
        }
        let built = component.build(with).await?;
        if let Some((id, fetch)) = built.fetcher() {
            fetchers.insert(id, fetch);
        }
        local_path = local_path.or(built.local_path);
        let handle = GatewayHandle {
            deliver: built.deliver,
            listen: built.listen,
            draft: built.draft,
        };
        handles.insert(handle.listen.id(), handle);
    }
    Ok(Gateways {
        handles,
        fetchers,
        local_path,
        restarts: Arc::default(),
    })
}

/// Starts the intake and a supervisor per gateway feeding it; returns the
/// token that stops them and the intake's task.
fn start_intake(intake: Arc<IntakeContext>, gateways: &Gateways) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let lifecycle = intake.lifecycle.clone();
    let stop_intake = CancellationToken::new();
    let (sender, queue) = Intake::channel(INTAKE_CAPACITY);
    let intake_task = lifecycle.spawn(crate::engine::intake::run(intake, queue, stop_intake.clone()));
    for (id, handle) in &gateways.handles {
        let gateway = handle.listen.clone();
        let supervised = background::supervise(
            id.clone(),
            gateway,
            sender.clone(),
            gateways.restarts.clone(),
            stop_intake.clone(),
        );
        lifecycle.spawn(supervised);
    }
    (stop_intake, intake_task)
}

/// The startup checks of the model `providers`, and the hourly maintenance
/// of `store`; both are tracked by `lifecycle` and stop when it drains.
fn spawn_housekeeping(
    lifecycle: &Lifecycle,
    store: Store,
    config: &Config,
    clock: Clock,
    providers: Vec<Arc<dyn ChatModel>>,
) {
    let draining = lifecycle.draining().clone();
    lifecycle.spawn(async move {
        tokio::select! {
            _ = draining.cancelled() => {}
            _ = crate::operator::doctor::log_startup_checks(providers) => {}
        }
    });
    let dedupe_window = Duration::from_secs(config.store.dedupe_window_s);
    let keep_decided = Duration::from_secs(config.approvals.keep_decided_days.saturating_mul(24 * 3600));
    lifecycle.spawn(background::maintenance(
        store,
        clock,
        lifecycle.draining().clone(),
        dedupe_window,
        keep_decided,
        background::Retention::of(config),
        MediaPruning::of(config),
    ));
}

/// Starts a daemon from `config` (read from `config_file`), runs it until
/// `shutdown` completes, then shuts it down in order; reads the file again
/// on every SIGHUP.
pub async fn run(
    config: Config,
    config_file: Option<PathBuf>,
    logs: Arc<crate::daemon::recent_logs::RecentLogs>,
    secrets: LiveSecrets,
    shutdown: impl Future<Output = ()>,
) -> anyhow::Result<()> {
    let extensions = Extensions {
        config_file,
        logs: Some(logs),
        secrets: Some(secrets),
        ..Extensions::default()
    };
    // Room for every gateway's connections, the stores and the tools' pipes.
    match crate::foundation::open_files::raise() {
        Ok(raised) => tracing::debug!(soft = ?raised.soft, hard = ?raised.hard, "open files limit"),
        Err(error) => tracing::warn!(%error, "cannot raise the limit on open files to its hard limit"),
    }
    // Installed before anything starts: a SIGHUP from now on reloads (one
    // during the start, once the daemon runs), never kills.
    let mut hangups = hangups();
    let daemon = Daemon::start_with(config, extensions).await?;
    // Ready once recovery is done and the gateways listen; then fed while the
    // runtime schedules, so a wedged daemon is restarted by its manager.
    let manager = Arc::new(crate::daemon::service_manager::Notifier::from_env());
    manager.ready("ready");
    let feeding = manager.watchdog_every().map(|every| {
        let fed = manager.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            loop {
                ticks.tick().await;
                fed.watchdog();
            }
        })
    });
    let failed = daemon.store.failed();
    tokio::pin!(shutdown);
    let store_failed = loop {
        tokio::select! {
            _ = &mut shutdown => break false,
            _ = failed.cancelled() => break true,
            Some(()) = next_hangup(&mut hangups) => {
                // Its own task: a reload that waits on a loop to stop never
                // holds up a shutdown (reloads queue on the reloader's lock).
                let reloader = daemon.reloader.clone();
                tokio::spawn(async move { reloader.reload().await });
            }
        }
    };
    // Stopping is bounded by the manager's stop timeout, not the watchdog.
    manager.stopping();
    if let Some(feeding) = feeding {
        feeding.abort();
    }
    daemon.shutdown().await?;
    if store_failed {
        // Exit non-zero so a supervisor (systemd) restarts the daemon, which
        // reopens the store and redoes whatever was not on disk.
        anyhow::bail!("the store failed to flush; stopped so that nothing unsaved is acknowledged");
    }
    Ok(())
}

/// The line that says the daemon is ready: where its data and its socket
/// are, and what waits.
fn log_ready(data_dir: &Path, gateways: &Gateways, store: &Store) {
    tracing::info!(
        data_dir = %data_dir.display(),
        socket = %socket_shown(gateways.local_path.as_deref()),
        pending = store.pending_count(),
        outbox = store.outbox_len(),
        "passepartout ready"
    );
}

/// SIGHUP, if it can be listened for (a reload then needs `passepartout
/// reload`).
fn hangups() -> Option<tokio::signal::unix::Signal> {
    use tokio::signal::unix::{SignalKind, signal};
    signal(SignalKind::hangup())
        .inspect_err(|error| tracing::warn!(%error, "cannot listen for SIGHUP; use `passepartout reload`"))
        .ok()
}

/// The next SIGHUP; never, without a listener.
async fn next_hangup(hangups: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
    match hangups {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}

/// The local socket as the start's log line names it: its path as written,
/// or "none" when no gateway listens on one.
fn socket_shown(path: Option<&std::path::Path>) -> String {
    path.map_or_else(|| "none".to_owned(), |path| path.display().to_string())
}

#[cfg(test)]
mod socket_shown_tests {
    use super::socket_shown;

    #[test]
    fn the_socket_is_logged_as_a_plain_path() {
        let path = std::path::Path::new("/run/user/1000/passepartout.sock");
        assert_eq!(socket_shown(Some(path)), "/run/user/1000/passepartout.sock");
        assert_eq!(socket_shown(None), "none");
    }
}
