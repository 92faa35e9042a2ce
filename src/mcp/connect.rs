//! Opening one server's connection: a child process speaking MCP on its
//! standard input and output, or a streamable HTTP endpoint. The child starts
//! in its own process group with an empty environment plus its configured
//! `env`, a minimal `PATH` and a `HOME` of its own (a folder named after it,
//! which it alone may write: caches such as npx's live there) — never the
//! daemon's secrets — and its standard error goes to the log line by line,
//! each line cut at a bound. A URL's headers are read from the environment
//! variables named for them; their values are never logged.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use process_wrap::tokio::{CommandWrap, ProcessGroup};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{NotificationContext, RoleClient, RunningService};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{ClientHandler, ServiceExt};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::Notify;

use crate::config::McpServerConfig;
use crate::sandbox::{Confinement, Policy, SandboxError};

/// The `PATH` a child gets unless its `env` sets one.
pub const MINIMAL_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// Longest line of a child's standard error that is logged whole.
const MAX_STDERR_LINE_BYTES: usize = 1024;

/// Why a server could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("cannot start {command:?}: {source}")]
    Spawn {
        command: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot make the server's home {}: {source}", .path.display())]
    Home {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot confine {command:?}: {source}")]
    Sandbox {
        command: String,
        #[source]
        source: SandboxError,
    },
    #[error("header {header} needs the environment variable {variable}, which is not set")]
    MissingHeader { header: String, variable: String },
    #[error("header {header}'s value (from {variable}) is not a valid header value")]
    BadHeader { header: String, variable: String },
    #[error("the server did not complete the MCP handshake: {0}")]
    Handshake(String),
    #[error("the server did not complete the MCP handshake within {} s", .0.as_secs())]
    HandshakeTimedOut(Duration),
}

/// A live connection, and the child's process group and confinement when
/// the server is one.
pub struct Connection {
    pub service: RunningService<RoleClient, Listener>,
    pub group: Option<ChildGroup>,
    /// Held while the child runs: dropping it removes the child's TMPDIR.
    pub confinement: Option<Confinement>,
}

/// A child server's process group, killed when this is dropped: a server
/// that hangs in a call, or ignores its input closing, never outlives its
/// connection or the daemon. Killed here, synchronously, because the SDK's
/// own clean-up is a task that a stopping runtime may never run.
pub struct ChildGroup(rustix::process::Pid);

impl Drop for ChildGroup {
    fn drop(&mut self) {
        // Gone already (it exited with its connection) is what was wanted.
        let _ = rustix::process::kill_process_group(self.0, rustix::process::Signal::KILL);
    }
}

/// What the daemon does with a server's notifications: it notes that the
/// tool list changed, for the supervisor to list them again.
#[derive(Clone)]
pub struct Listener {
    pub tools_changed: Arc<Notify>,
}

impl ClientHandler for Listener {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("passepartout", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.tools_changed.notify_one();
    }
}

/// Connects to `server`, within `handshake` for the MCP handshake; a child's
/// `HOME` is its own folder in `homes`, and it runs confined by `sandbox`.
pub async fn connect(
    server: &McpServerConfig,
    homes: &Path,
    sandbox: &Policy,
    listener: Listener,
    handshake: Duration,
) -> Result<Connection, ConnectError> {
    let starting = async {
        match (&server.command, &server.url) {
            (Some(command), _) => {
                let (transport, stderr, confinement) = spawn(server, command, homes, sandbox)?;
                // The child leads its own group: its id is the group's.
                let group = transport
                    .id()
                    .and_then(|id| rustix::process::Pid::from_raw(id as i32))
                    .map(ChildGroup);
                if let Some(stderr) = stderr {
                    tokio::spawn(log_stderr(server.name.clone(), stderr));
                }
                let service = listener
                    .serve(transport)
                    .await
                    .map_err(|e| ConnectError::Handshake(e.to_string()))?;
                Ok(Connection {
                    service,
                    group,
                    confinement: Some(confinement),
                })
            }
            (None, Some(url)) => {
                // The SDK's client is built with rustls' process-wide default
                // provider and panics without one: ring, set once for the
                // process (a second call finds it set and changes nothing).
                let _ = rustls::crypto::ring::default_provider().install_default();
                let config =
                    StreamableHttpClientTransportConfig::with_uri(url.as_str()).custom_headers(headers(server)?);
                let transport = StreamableHttpClientTransport::from_config(config);
                let service = listener
                    .serve(transport)
                    .await
                    .map_err(|e| ConnectError::Handshake(e.to_string()))?;
                Ok(Connection {
                    service,
                    group: None,
                    confinement: None,
                })
            }
            (None, None) => Err(ConnectError::Handshake("neither a command nor a url is set".into())),
        }
    };
    tokio::time::timeout(handshake, starting)
        .await
        .map_err(|_| ConnectError::HandshakeTimedOut(handshake))?
}

/// What [`spawn`] hands back: the transport, the child's standard error, and
/// its confinement.
type Spawned = (TokioChildProcess, Option<tokio::process::ChildStderr>, Confinement);

/// Starts the child with only its own environment and its own home in
/// `homes`, confined by `sandbox`.
fn spawn(server: &McpServerConfig, command: &Path, homes: &Path, sandbox: &Policy) -> Result<Spawned, ConnectError> {
    let home = own_home(homes, &server.name)?;
    let mut child = tokio::process::Command::new(command);
    child.args(&server.args).env_clear();
    child.env("PATH", MINIMAL_PATH).env("HOME", &home);
    child.envs(&server.env);
    let path = server.env.get("PATH").map_or(MINIMAL_PATH, String::as_str);
    let programs = resolve(command, path).map(with_interpreter).unwrap_or_default();
    let mut confinement = sandbox
        .for_server(server, &programs)
        .writable(home)
        .prepare()
        .map_err(|source| ConnectError::Sandbox {
            command: command.display().to_string(),
            source,
        })?;
    confinement.apply(&mut child);
    let mut wrapped = CommandWrap::from(child);
    wrapped.wrap(ProcessGroup::leader());
    TokioChildProcess::builder(wrapped)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map(|(transport, stderr)| (transport, stderr, confinement))
        .map_err(|source| ConnectError::Spawn {
            command: command.display().to_string(),
            source,
        })
}

/// The server `name`'s home in `homes`, made (for the daemon's user only)
/// if it is not there yet.
fn own_home(homes: &Path, name: &str) -> Result<std::path::PathBuf, ConnectError> {
    use std::os::unix::fs::DirBuilderExt;
    let home = homes.join(name);
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&home)
        .map_err(|source| ConnectError::Home {
            path: home.clone(),
            source,
        })?;
    Ok(home)
}

/// `program`, and the interpreter its `#!` line names if it is a script (a
/// virtual environment's `mcp-server-time` runs a Python installed
/// elsewhere), symbolic links followed.
fn with_interpreter(program: std::path::PathBuf) -> Vec<std::path::PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let read = std::fs::File::open(&program)
        .and_then(|mut file| file.read(&mut head))
        .unwrap_or(0);
    let interpreter = head[..read]
        .strip_prefix(b"#!")
        .and_then(|line| line.split(|b| *b == b'\n').next())
        .and_then(|line| std::str::from_utf8(line).ok())
        .and_then(|line| line.split_whitespace().next())
        .and_then(|path| Path::new(path).canonicalize().ok());
    std::iter::once(program).chain(interpreter).collect()
}

/// Where `command` is: itself when it names a path, else the first file of
/// that name in `path`'s directories (as `exec` will find it), symbolic
/// links followed so the real installation is what gets read.
fn resolve(command: &Path, path: &str) -> Option<std::path::PathBuf> {
    let found = if command.components().count() > 1 {
        Some(command.to_path_buf())
    } else {
        std::env::split_paths(path)
            .map(|dir| dir.join(command))
            .find(|candidate| candidate.is_file())
    };
    found.and_then(|program| program.canonicalize().ok())
}

/// The headers for a server at a URL, each value from its variable.
fn headers(server: &McpServerConfig) -> Result<HashMap<http::HeaderName, http::HeaderValue>, ConnectError> {
    let mut headers = HashMap::new();
    for (header, variable) in &server.headers_env {
        let bad = || ConnectError::BadHeader {
            header: header.clone(),
            variable: variable.clone(),
        };
        let value = std::env::var(variable).map_err(|_| ConnectError::MissingHeader {
            header: header.clone(),
            variable: variable.clone(),
        })?;
        let name = http::HeaderName::try_from(header.as_str()).map_err(|_| bad())?;
        let mut value = http::HeaderValue::try_from(value).map_err(|_| bad())?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Logs what the child writes to its standard error, a line at a time, each
/// line cut at [`MAX_STDERR_LINE_BYTES`]; ends when the child closes it.
async fn log_stderr(server: String, stderr: impl AsyncRead + Unpin) {
    let mut reader = BufReader::new(stderr);
    let mut line = Vec::new();
    loop {
        line.clear();
        match read_line_bounded(&mut reader, &mut line, MAX_STDERR_LINE_BYTES).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line);
                let text = text.trim_end();
                if !text.is_empty() {
                    tracing::info!(server = %server, line = %text, "mcp server stderr");
                }
            }
        }
    }
}

/// Reads one line into `line`, keeping at most `limit` bytes of it and
/// skipping the rest; the bytes read, 0 at the end.
async fn read_line_bounded(
    reader: &mut (impl AsyncBufReadExt + Unpin),
    line: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<usize> {
    let mut read = 0;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(read);
        }
        let (used, done) = match buffer.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (buffer.len(), false),
        };
        let room = limit.saturating_sub(line.len());
        line.extend_from_slice(&buffer[..used.min(room)]);
        reader.consume(used);
        read += used;
        if done {
            return Ok(read);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_long_line_is_cut_and_the_next_one_read_whole() {
        let input = format!("{}\nnext\n", "x".repeat(5000));
        let mut reader = BufReader::with_capacity(64, input.as_bytes());
        let mut line = Vec::new();
        assert_eq!(read_line_bounded(&mut reader, &mut line, 100).await.unwrap(), 5001);
        assert_eq!(line.len(), 100);
        line.clear();
        read_line_bounded(&mut reader, &mut line, 100).await.unwrap();
        assert_eq!(line, b"next\n");
        line.clear();
        assert_eq!(read_line_bounded(&mut reader, &mut line, 100).await.unwrap(), 0);
    }
}
