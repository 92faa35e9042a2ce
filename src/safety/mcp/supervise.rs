//! One server's supervisor: connect, list the tools, list them again when
//! the server says they changed, and when the connection ends — the child
//! exited, the network dropped — note why and connect again after a backoff
//! that grows while the server keeps failing. A server that never comes up
//! only ever shows as failed; the daemon goes on without its tools.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::retry::Backoff;
use rmcp::service::{Peer, RoleClient};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::connect::{Connection, Listener, connect};
use super::schema;
use super::state::Server;
use super::stderr::Told;
use super::tool::{McpTool, Sandboxed};
use crate::config::McpServerConfig;
use crate::safety::sandbox::Policy;
use crate::safety::tools::Tool;

/// The first wait before connecting again.
const RESTART_BASE: Duration = Duration::from_secs(1);
/// The longest wait before connecting again; a connection that lasted this
/// long counts as healthy, and the next failure waits the least again.
const RESTART_MAX: Duration = Duration::from_secs(60);
/// The least time the MCP handshake gets (a child may take a while to start).
const MIN_HANDSHAKE: Duration = Duration::from_secs(10);

/// Keeps `server` connected until `stop`; a child's `HOME` is its own
/// folder in `homes`, and the child runs confined by `sandbox`.
pub async fn supervise(
    server: Arc<Server>,
    config: McpServerConfig,
    homes: PathBuf,
    sandbox: Policy,
    stop: CancellationToken,
) {
    let mut backoff = Backoff::new(RESTART_BASE, RESTART_MAX);
    let timeout = Duration::from_secs(config.timeout_s);
    loop {
        let changed = Arc::new(Notify::new());
        let listener = Listener {
            tools_changed: changed.clone(),
        };
        // In a task of its own, so that a panic in the SDK or a transport
        // is one failed attempt, not the end of the supervision.
        let (settings, homes_dir, policy) = (config.clone(), homes.clone(), sandbox.clone());
        let mut connecting =
            tokio::spawn(
                async move { connect(&settings, &homes_dir, &policy, listener, timeout.max(MIN_HANDSHAKE)).await },
            );
        let connected = tokio::select! {
            _ = stop.cancelled() => {
                connecting.abort();
                return;
            }
            connected = &mut connecting => connected,
        };
        let started = tokio::time::Instant::now();
        let why = match connected {
            Ok(Ok(connection)) => match serve(&server, connection, &changed, timeout, &stop).await {
                Some(why) => why,
                None => return,
            },
            Ok(Err(error)) => error.to_string(),
            Err(failed) => format!("connecting failed: {failed}"),
        };
        if started.elapsed() >= RESTART_MAX {
            backoff.reset();
        }
        let delay = backoff.next_delay();
        tracing::warn!(server = %config.name, error = %why, retry_in_ms = delay.as_millis() as u64, "mcp server down");
        server.failed(why);
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
    }
}

/// Runs one connection until it ends (why) or `stop` (`None`).
async fn serve(
    server: &Arc<Server>,
    connection: Connection,
    changed: &Notify,
    timeout: Duration,
    stop: &CancellationToken,
) -> Option<String> {
    // Held to the end: dropping it kills the child's process group.
    let Connection {
        service,
        group: _group,
        confinement,
        told,
    } = connection;
    let sandbox = confinement.as_ref().map(|c| Sandboxed {
        summary: c.summary().to_owned(),
        refusal_hint: c.refusal_hint().map(str::to_owned),
    });
    let peer = service.peer().clone();
    if let Err(why) = list(server, &peer, timeout, sandbox.as_ref()).await {
        return Some(why);
    }
    let quit = service.waiting();
    tokio::pin!(quit);
    loop {
        tokio::select! {
            // Dropping the connection closes it, and its group ends the child.
            _ = stop.cancelled() => return None,
            _ = changed.notified() => {
                if let Err(why) = list(server, &peer, timeout, sandbox.as_ref()).await {
                    tracing::warn!(server = %server.name(), error = %why, "mcp tools not listed again");
                    server.note_error(why);
                }
            }
            quit = &mut quit => {
                let why = match quit {
                    Ok(reason) => format!("the connection ended ({reason:?})"),
                    Err(error) => format!("the connection failed: {error}"),
                };
                return Some(explained(why, &told, sandbox.as_ref()));
            }
        }
    }
}

/// `why` a connection ended, with what the child said and what it could
/// read, when it ran confined and said something of a refusal or a module
/// not found (which the sandbox may have caused).
fn explained(why: String, told: &Told, sandbox: Option<&Sandboxed>) -> String {
    match (told.line(), sandbox.and_then(|sandbox| sandbox.refusal_hint.as_deref())) {
        (Some(said), Some(hint)) => format!("{why}; it said: {said} {hint}"),
        _ => why,
    }
}

/// Lists the server's tools and offers them, bound to `peer`; `sandbox` is
/// the one the server's process runs in.
async fn list(
    server: &Arc<Server>,
    peer: &Peer<RoleClient>,
    timeout: Duration,
    sandbox: Option<&Sandboxed>,
) -> Result<(), String> {
    let listed = match tokio::time::timeout(timeout, peer.list_all_tools()).await {
        Ok(Ok(tools)) => tools,
        Ok(Err(error)) => return Err(format!("cannot list its tools: {error}")),
        Err(_) => return Err(format!("did not list its tools within {} s", timeout.as_secs())),
    };
    let (offered, skipped) = schema::offer(server.name(), &listed);
    for (tool, why) in skipped {
        tracing::warn!(server = %server.name(), tool = %tool, reason = %why, "mcp tool not offered");
    }
    let tools = offered
        .into_iter()
        .map(|(name, offered)| {
            let tool = McpTool::new(server.name(), offered, peer.clone(), timeout).confined(sandbox.cloned());
            (name, Arc::new(tool) as Arc<dyn Tool>)
        })
        .collect();
    server.connected(tools);
    tracing::info!(server = %server.name(), tools = server.tool_count(), "mcp server connected");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_confined_server_that_ends_telling_of_a_refusal_says_what_it_could_read() {
        let hint = "[sandbox: the server \"time\" runs confined: … `allow_read` … can add a folder]";
        let confined = Sandboxed {
            summary: "Landlock ABI 7, network open".into(),
            refusal_hint: Some(hint.into()),
        };
        let told = Told::default();
        let said = "Traceback (most recent call last):\nPermissionError: [Errno 13] Permission denied: '/srv/zones'\n";
        super::super::stderr::follow_stderr("time".into(), said.as_bytes(), told.clone()).await;
        assert_eq!(
            explained("the connection ended".into(), &told, Some(&confined)),
            format!(
                "the connection ended; it said: PermissionError: [Errno 13] Permission denied: '/srv/zones' {hint}"
            )
        );
        assert_eq!(
            explained("the connection ended".into(), &told, None),
            "the connection ended",
            "not confined"
        );
        let quiet = Told::default();
        assert_eq!(
            explained("the connection ended".into(), &quiet, Some(&confined)),
            "the connection ended",
            "nothing said of a refusal"
        );
    }
}
