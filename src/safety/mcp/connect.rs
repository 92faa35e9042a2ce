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
use tokio::sync::Notify;

use super::stderr::{Told, follow_stderr};
use crate::config::McpServerConfig;
use crate::safety::sandbox::{Confinement, Policy, SandboxError};

/// The `PATH` a child gets unless its `env` sets one.
pub const MINIMAL_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long a child that ended before its handshake is given to finish
/// writing why, once its group is ended.
const LAST_WORDS: Duration = Duration::from_secs(2);

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
    /// A child that ended (or broke off) before its handshake; the first
    /// line it wrote that tells of a refusal, and, when it ran confined,
    /// what it could read and the setting that adds a folder.
    #[error("the server did not complete the MCP handshake: {why}{}{}",
        .said.as_ref().map(|said| format!("; it said: {said}")).unwrap_or_default(),
        .sandbox.as_ref().map(|hint| format!(" {hint}")).unwrap_or_default())]
    Ended {
        why: String,
        said: Option<String>,
        sandbox: Option<String>,
    },
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
    /// The first line the child wrote that tells of a refusal.
    pub told: Told,
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
                let told = Told::default();
                let following =
                    stderr.map(|stderr| tokio::spawn(follow_stderr(server.name.clone(), stderr, told.clone())));
                let service = match listener.serve(transport).await {
                    Ok(service) => service,
                    Err(error) => {
                        // Ended, and what it wrote read to its end (or
                        // for a moment), so that its last words are known.
                        drop(group);
                        if let Some(following) = following {
                            let _ = tokio::time::timeout(LAST_WORDS, following).await;
                        }
                        return Err(ConnectError::Ended {
                            why: error.to_string(),
                            said: told.line(),
                            sandbox: confinement.refusal_hint().map(str::to_owned),
                        });
                    }
                };
                Ok(Connection {
                    service,
                    group,
                    confinement: Some(confinement),
                    told,
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
                    told: Told::default(),
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
    let mut programs = resolve(command, path)
        .map(|program| with_interpreter(program, path))
        .unwrap_or_default();
    programs.extend(script(&programs, &server.args));
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
/// elsewhere), symbolic links followed; for `#!/usr/bin/env node`, the
/// `node` found on `path` as well.
fn with_interpreter(program: std::path::PathBuf, path: &str) -> Vec<std::path::PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let read = std::fs::File::open(&program)
        .and_then(|mut file| file.read(&mut head))
        .unwrap_or(0);
    let line = head[..read]
        .strip_prefix(b"#!")
        .and_then(|line| line.split(|b| *b == b'\n').next())
        .and_then(|line| std::str::from_utf8(line).ok())
        .unwrap_or_default();
    let mut words = line.split_whitespace();
    let interpreter = words.next().and_then(|path| Path::new(path).canonicalize().ok());
    let through_env = interpreter
        .as_deref()
        .is_some_and(|interpreter| interpreter.file_name().is_some_and(|name| name == "env"));
    let named = through_env
        .then(|| words.find(|word| !word.starts_with('-') && !word.contains('=')))
        .flatten()
        .and_then(|name| resolve(Path::new(name), path));
    std::iter::once(program).chain(interpreter).chain(named).collect()
}

/// The script an interpreter is given to run (`node /opt/mcp/dist/index.js`,
/// `python3 server.py`): its first argument that is not an option, when
/// that is a file, links followed. `programs` is the command as resolved.
fn script(programs: &[std::path::PathBuf], args: &[String]) -> Option<std::path::PathBuf> {
    let interpreter = programs.first()?.file_name()?.to_str()?;
    let runs_scripts = ["node", "python", "deno", "bun"]
        .iter()
        .any(|name| interpreter.starts_with(name));
    if !runs_scripts {
        return None;
    }
    let first = args.iter().find(|arg| !arg.starts_with('-'))?;
    Path::new(first).canonicalize().ok().filter(|path| path.is_file())
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interpreters_script_is_a_program_too() {
        let dir = tempfile::tempdir().unwrap();
        let server = dir.path().canonicalize().unwrap().join("index.js");
        std::fs::write(&server, "").unwrap();
        let node = vec![std::path::PathBuf::from("/usr/bin/node")];
        let args = |args: &[&str]| args.iter().map(|arg| arg.to_string()).collect::<Vec<_>>();
        let named = server.display().to_string();
        assert_eq!(
            script(&node, &args(&["--no-warnings", &named, "/srv"])),
            Some(server.clone())
        );
        let python = vec![std::path::PathBuf::from("/usr/bin/python3.11")];
        assert_eq!(script(&python, &args(&["-m", "mcp_server_time"])), None, "a module");
        let other = vec![std::path::PathBuf::from("/usr/bin/tool")];
        assert_eq!(script(&other, &args(&[&named])), None, "not an interpreter");
    }

    #[test]
    fn a_script_run_through_env_has_its_interpreter_found_on_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().canonicalize().unwrap();
        let bin = dir.join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("node"), "").unwrap();
        let server = dir.join("server.mjs");
        std::fs::write(&server, "#!/usr/bin/env -S node --no-warnings\n").unwrap();
        let path = format!("/nonexistent:{}", bin.display());
        let programs = with_interpreter(server.clone(), &path);
        assert_eq!(programs.first(), Some(&server));
        assert_eq!(programs.last(), Some(&bin.join("node")), "{programs:?}");
        assert!(programs.iter().any(|p| p.ends_with("env")), "{programs:?}");
    }
}
