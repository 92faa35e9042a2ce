//! MCP tool servers: the daemon as a Model Context Protocol client, through
//! the official SDK (`rmcp`). Each `[[mcp.servers]]` entry is started (a
//! child on its standard input and output) or connected to (streamable
//! HTTP) when the daemon starts, and kept so by its own supervisor
//! (`supervise.rs`): a server that exits or drops is connected again after a
//! backoff, and one that never comes up only shows as failed. Its tools are
//! offered as `SERVER__TOOL` (`schema.rs`) through the tool box's
//! [`LateTools`] seam, listed again when the server says they changed, and
//! called like any tool (`tool.rs`): the skills judge each call first, and
//! by default a person approves it (`skills::McpApproval`). [`McpServers`]
//! also answers the status: each server's state, tool count and last error.

mod connect;
mod schema;
mod state;
mod stderr;
mod supervise;
mod tool;

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use connect::MINIMAL_PATH;
pub use state::{Phase, ServerStatus};

use crate::config::{MCP_SEPARATOR, McpConfig, McpServerConfig};
use crate::safety::sandbox::Policy;
use crate::safety::tools::{LateTools, Tool};
use state::Server;

/// Every configured server, in the configuration's order.
pub struct McpServers {
    servers: Vec<Arc<Server>>,
    changes: Arc<watch::Sender<u64>>,
    /// What every child server's process may touch (each adds its own).
    sandbox: Policy,
}

impl McpServers {
    /// The servers of `config`, not started; their children will run
    /// confined by `sandbox`.
    pub fn new(config: &McpConfig, sandbox: Policy) -> Self {
        let changes = Arc::new(watch::Sender::new(0));
        let servers = config
            .servers
            .iter()
            .map(|server| Arc::new(Server::new(&server.name, server.enabled, changes.clone())))
            .collect();
        Self {
            servers,
            changes,
            sandbox,
        }
    }

    /// Starts a supervisor for each enabled server of `config` on `tracker`,
    /// until `stop`; each child's `HOME` is its own folder in `homes`.
    pub fn start(&self, config: &McpConfig, homes: PathBuf, tracker: &TaskTracker, stop: &CancellationToken) {
        for (server, settings) in self.servers.iter().zip(&config.servers) {
            if settings.enabled {
                let supervised = supervise::supervise(
                    server.clone(),
                    settings.clone(),
                    homes.clone(),
                    self.sandbox.clone(),
                    stop.clone(),
                );
                tracker.spawn(supervised);
            }
        }
    }

    /// Each server's state, in the configuration's order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.servers.iter().map(|server| server.status()).collect()
    }

    /// Follows every change of any server (connected, failed, tools listed).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    fn server(&self, name: &str) -> Option<&Arc<Server>> {
        self.servers.iter().find(|server| server.name() == name)
    }
}

/// Starts (or reaches) `server`, lists its tools and stops it: how many it
/// offers, or why it could not be asked. For `doctor` without a daemon; the
/// child runs confined by `sandbox`, as the daemon's would.
pub async fn probe(server: &McpServerConfig, homes: &std::path::Path, sandbox: &Policy) -> Result<usize, String> {
    let timeout = std::time::Duration::from_secs(server.timeout_s);
    let listener = connect::Listener {
        tools_changed: Default::default(),
    };
    let connection = connect::connect(server, homes, sandbox, listener, timeout)
        .await
        .map_err(|error| error.to_string())?;
    let listed = tokio::time::timeout(timeout, connection.service.peer().list_all_tools()).await;
    let _ = connection.service.cancel().await;
    match listed {
        Ok(Ok(tools)) => Ok(schema::offer(&server.name, &tools).0.len()),
        Ok(Err(error)) => Err(format!("cannot list its tools: {error}")),
        Err(_) => Err(format!("did not list its tools within {} s", timeout.as_secs())),
    }
}

impl LateTools for McpServers {
    fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        let (server, _) = name.split_once(MCP_SEPARATOR)?;
        self.server(server)?.tool(name)
    }

    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.servers.iter().flat_map(|server| server.tools()).collect()
    }
}
