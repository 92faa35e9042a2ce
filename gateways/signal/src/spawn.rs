//! signal-cli as our own child process, spoken to over its stdin and stdout.
//!
//! Instead of connecting to a running daemon, the gateway may start
//! `signal-cli [-a ACCOUNT] [--config DIR] jsonRpc --receive-mode=manual`
//! itself: the same JSON-RPC, one request per line on the child's stdin, the
//! answers and notifications on its stdout. [`RpcClient::spawn`] starts it and
//! hands the pipes to the usual connection task, which owns the child: when
//! the connection ends — the client closed, every handle dropped, or the child
//! exited and its stdout closed — the task kills the child (if it still
//! runs), reaps it and says how it ended in the [`RpcError::Closed`] that
//! pending calls and [`Notification::Lost`](crate::Notification::Lost) carry.
//! The gateway's reconnect loop then starts a new child, as it would connect
//! again to a daemon.
//!
//! The child must not outlive us. It is killed on drop (so a runtime that
//! shuts down takes it along), and `signal-cli jsonRpc` exits when its stdin
//! closes, which happens however this process ends, even killed outright. It
//! runs in a process group of its own, so that a Ctrl-C meant for the daemon
//! does not kill it while replies are still being delivered during the drain.
//!
//! Java libraries unpack native code into the temporary folder and delete it
//! only when the JVM exits normally: libsignal leaves 120 MB behind each time
//! a child is killed. So each child gets a scratch folder of its own as
//! `java.io.tmpdir` (through `JAVA_OPTS`, which signal-cli's start script
//! reads), removed once the child has been reaped, and a child is first asked
//! to end by closing its stdin, and killed only if it does not within
//! [`EXIT_GRACE`].
//!
//! Its stderr is logged line by line, lossily decoded: signal-cli's log lines
//! of level INFO and below at debug, everything else (warnings, errors, "User
//! … is not registered.") at warn.
//!
//! signal-cli locks an account's data while it runs, so two children on the
//! same data directory would take turns; only the gateway's listener starts
//! one, and a reply while it is starting again waits in the outbox.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use passepartout_gateway::lines::{LineReader, ReadLine};
use tokio::io::AsyncRead;
use tokio::process::{Child, Command};
use tracing::{debug, warn};

use crate::error::RpcError;
use crate::rpc::{Notifications, RpcClient, RpcOptions};

/// The program started when none is configured: `signal-cli` on the `PATH`.
pub const DEFAULT_PROGRAM: &str = "signal-cli";
/// How long a child may take to exit by itself, once its stdin or stdout
/// closed, before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// Longest stderr line logged whole; longer ones are reported by length.
const MAX_STDERR_LINE: usize = 16 * 1024;

/// How to start signal-cli in JSON-RPC mode.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Spawn {
    /// The signal-cli program: a path, or a name looked up on the `PATH`.
    pub program: PathBuf,
    /// signal-cli's `--config` directory (where it keeps accounts); `None`
    /// leaves signal-cli's own default (`$XDG_DATA_HOME/signal-cli`).
    pub config_dir: Option<PathBuf>,
}

impl Default for Spawn {
    fn default() -> Self {
        Self {
            program: PathBuf::from(DEFAULT_PROGRAM),
            config_dir: None,
        }
    }
}

impl Spawn {
    /// `program` with signal-cli's default data directory.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            config_dir: None,
        }
    }

    /// The arguments: `-a ACCOUNT` for a single-account child (`None` starts it
    /// in multi-account mode, where every request names its account).
    pub fn args(&self, account: Option<&str>) -> Vec<OsString> {
        let mut args = Vec::new();
        if let Some(account) = account {
            args.extend(["-a".into(), account.into()]);
        }
        if let Some(dir) = &self.config_dir {
            args.extend(["--config".into(), dir.clone().into_os_string()]);
        }
        args.extend(["jsonRpc".into(), "--receive-mode=manual".into()]);
        args
    }

    /// The command line, for logs and errors.
    pub fn command_line(&self, account: Option<&str>) -> String {
        let mut line = self.program.display().to_string();
        for arg in self.args(account) {
            line.push(' ');
            line.push_str(&arg.to_string_lossy());
        }
        line
    }
}

impl RpcClient {
    /// Starts signal-cli as described by `spawn` (with `-a account`, or in
    /// multi-account mode for `None`) and a connection over its stdin and
    /// stdout. Fails with [`RpcError::Connect`] when it cannot be started;
    /// a child that starts and then fails (an account that is not
    /// registered) ends the connection like a daemon closing it.
    pub fn spawn(
        spawn: &Spawn,
        account: Option<&str>,
        options: RpcOptions,
    ) -> Result<(RpcClient, Notifications), RpcError> {
        let label = spawn.command_line(account);
        let start_error = |kind: std::io::ErrorKind, reason: String| RpcError::Connect {
            endpoint: label.clone(),
            kind,
            reason,
        };
        let scratch = scratch_dir();
        let mut command = Command::new(&spawn.program);
        if let Some(scratch) = &scratch {
            command.env("JAVA_OPTS", java_opts(std::env::var_os("JAVA_OPTS"), scratch.path()));
        }
        command
            .args(spawn.args(account))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        // Not in our process group: a Ctrl-C for the daemon must not stop it
        // before the drain delivered the last replies.
        command.process_group(0);
        let mut child = command.spawn().map_err(|error| {
            let reason = match error.kind() {
                std::io::ErrorKind::NotFound => format!(
                    "cannot start {}: no such program; install signal-cli or configure the path of its program",
                    spawn.program.display()
                ),
                _ => format!("cannot start {}: {error}", spawn.program.display()),
            };
            start_error(error.kind(), reason)
        })?;
        let pid = child.id();
        let (Some(stdin), Some(stdout), Some(stderr)) = (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            // The pipes were asked for above; a child without them is useless.
            let _ = child.start_kill();
            return Err(start_error(
                std::io::ErrorKind::BrokenPipe,
                "the child's pipes are missing".to_owned(),
            ));
        };
        tokio::spawn(log_stderr(stderr, pid));
        debug!(command = %label, pid, "started signal-cli");
        let guard = ChildGuard {
            child,
            pid,
            _scratch: scratch,
        };
        Ok(RpcClient::start(stdout, stdin, label, Some(guard), options))
    }
}

/// A scratch folder for one child's temporary files; none (and a warning)
/// when it cannot be made, as the child still works without.
fn scratch_dir() -> Option<tempfile::TempDir> {
    match tempfile::Builder::new().prefix("passepartout-signal-cli-").tempdir() {
        Ok(dir) => Some(dir),
        Err(error) => {
            warn!(%error, "cannot make a scratch folder for signal-cli; it will use the system's");
            None
        }
    }
}

/// `JAVA_OPTS` for a child: whatever the environment sets, then our
/// temporary folder, which wins as the last setting of it.
fn java_opts(inherited: Option<OsString>, scratch: &std::path::Path) -> OsString {
    let mut opts = inherited.unwrap_or_default();
    if !opts.is_empty() {
        opts.push(" ");
    }
    opts.push("-Djava.io.tmpdir=");
    opts.push(scratch);
    opts
}

/// The child behind a connection, owned by its task.
#[derive(Debug)]
pub(crate) struct ChildGuard {
    child: Child,
    pid: Option<u32>,
    /// Removed when the guard goes, after the child was reaped.
    _scratch: Option<tempfile::TempDir>,
}

impl ChildGuard {
    /// The child's process id, as it was when started.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.pid
    }

    /// Ends the child and says how it ended, after `reason` (why the
    /// connection ended). Its stdin is closed by then, and `signal-cli
    /// jsonRpc` exits when it is: it gets [`EXIT_GRACE`] to do so, so that
    /// the JVM cleans up after itself, and is killed after that.
    pub(crate) async fn finish(mut self, reason: String) -> String {
        let exited = match self.child.try_wait() {
            Ok(Some(status)) => Some(Ok(status)),
            _ => tokio::time::timeout(EXIT_GRACE, self.child.wait()).await.ok(),
        };
        let waited = match exited {
            Some(waited) => waited,
            None => {
                // Fails only when it already exited, which `wait` then reports.
                let _ = self.child.start_kill();
                self.child.wait().await
            }
        };
        match waited {
            Ok(status) => {
                debug!(pid = self.pid, %status, "signal-cli ended");
                format!("{reason}; signal-cli ended ({status})")
            }
            Err(error) => {
                warn!(pid = self.pid, %error, "could not end signal-cli");
                format!("{reason}; signal-cli could not be ended: {error}")
            }
        }
    }
}

/// Logs the child's stderr until it closes.
async fn log_stderr<R: AsyncRead + Unpin>(stderr: R, pid: Option<u32>) {
    let mut lines = LineReader::new(stderr, MAX_STDERR_LINE);
    loop {
        match lines.next_line().await {
            Ok(ReadLine::Line(bytes)) => {
                let line = String::from_utf8_lossy(&bytes);
                let line = line.trim_end();
                if line.is_empty() {
                    continue;
                }
                if is_chatter(line) {
                    debug!(pid, line, "signal-cli stderr");
                } else {
                    warn!(pid, line, "signal-cli stderr");
                }
            }
            Ok(ReadLine::TooLong { len }) => warn!(pid, len, "signal-cli wrote an over-long line on stderr"),
            // A line cut off by the end of the stream is dropped, as signal-cli ends every line.
            Ok(ReadLine::Unterminated(_) | ReadLine::Eof) => break,
            Err(error) => {
                debug!(pid, %error, "reading signal-cli's stderr failed");
                break;
            }
        }
    }
}

/// Whether a stderr line is one of signal-cli's informational log lines.
fn is_chatter(line: &str) -> bool {
    ["INFO", "DEBUG", "TRACE"].iter().any(|level| line.starts_with(level))
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn strings(args: Vec<OsString>) -> Vec<String> {
        args.into_iter().map(|arg| arg.into_string().unwrap()).collect()
    }

    #[test]
    fn a_single_account_child_is_started_with_its_account() {
        let spawn = Spawn::default();
        assert_eq!(
            strings(spawn.args(Some("+15551234567"))),
            ["-a", "+15551234567", "jsonRpc", "--receive-mode=manual"]
        );
        assert_eq!(
            spawn.command_line(Some("+15551234567")),
            "signal-cli -a +15551234567 jsonRpc --receive-mode=manual"
        );
    }

    #[test]
    fn a_multi_account_child_names_no_account_and_may_have_a_data_directory() {
        let spawn = Spawn {
            program: "/opt/signal-cli/bin/signal-cli".into(),
            config_dir: Some("/var/lib/signal-cli".into()),
        };
        assert_eq!(
            strings(spawn.args(None)),
            ["--config", "/var/lib/signal-cli", "jsonRpc", "--receive-mode=manual"]
        );
        assert_eq!(
            strings(spawn.args(Some("+1555"))),
            [
                "-a",
                "+1555",
                "--config",
                "/var/lib/signal-cli",
                "jsonRpc",
                "--receive-mode=manual"
            ]
        );
        assert_eq!(
            spawn.command_line(None),
            "/opt/signal-cli/bin/signal-cli --config /var/lib/signal-cli jsonRpc --receive-mode=manual"
        );
    }

    #[test]
    fn log_levels_of_stderr_lines() {
        assert!(is_chatter("INFO  DaemonCommand - Starting"));
        assert!(!is_chatter(
            "WARN  SignalAccount - Config file is in use by another instance, waiting…"
        ));
        assert!(!is_chatter("User +15551234567 is not registered."));
    }

    /// Writes an executable `sh` script standing in for signal-cli.
    fn script(dir: &std::path::Path, name: &str, body: &str) -> PathBuf {
        use std::os::unix::fs::PermissionsExt;
        let path = dir.join(name);
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    async fn lost(notifications: &mut Notifications) -> String {
        let wait = Duration::from_secs(10);
        match tokio::time::timeout(wait, notifications.recv()).await {
            Ok(Some(crate::Notification::Lost(RpcError::Closed { reason }))) => reason,
            other => panic!("expected the loss, got {other:?}"),
        }
    }

    /// A stand-in answering the n-th request with id n, its arguments as the
    /// result, and a non-UTF-8 line on stderr.
    const ECHO: &str = r#"i=0
while read -r line; do
  i=$((i+1))
  printf 'WARN \377 line %s\n' "$i" >&2
  printf '{"jsonrpc":"2.0","id":%s,"result":"%s"}\n' "$i" "$*"
  [ "$EXIT_AFTER_ONE" = yes ] && exit 3
done
exit 0"#;

    #[tokio::test]
    async fn the_child_answers_over_its_pipes_and_ends_with_the_connection() {
        let dir = tempfile::tempdir().unwrap();
        // Both written before anything is spawned: a file open for writing
        // while another thread forks cannot be executed (ETXTBSY).
        let echo = script(dir.path(), "echo-cli", ECHO);
        let exits = script(dir.path(), "exiting-cli", &format!("EXIT_AFTER_ONE=yes\n{ECHO}"));

        let spawn = Spawn {
            program: echo,
            config_dir: Some(dir.path().join("data")),
        };
        let (client, mut notifications) = RpcClient::spawn(&spawn, None, RpcOptions::default()).unwrap();
        let pid = client.child_id().expect("a child id");
        let args = format!(
            "--config {} jsonRpc --receive-mode=manual",
            dir.path().join("data").display()
        );
        assert_eq!(client.call("version", Value::Null).await.unwrap(), json!(args));
        assert_eq!(client.call("version", Value::Null).await.unwrap(), json!(args));
        assert!(client.endpoint().ends_with(&args), "{}", client.endpoint());
        client.close();
        let reason = lost(&mut notifications).await;
        // Its stdin closed, so it ended by itself.
        assert!(
            reason.contains("closed") && reason.contains("exit status: 0"),
            "{reason}"
        );
        // Reaped before the loss was reported.
        assert!(!std::path::Path::new(&format!("/proc/{pid}")).exists());

        let (client, mut notifications) =
            RpcClient::spawn(&Spawn::new(exits), Some("+1555"), RpcOptions::default()).unwrap();
        assert_eq!(
            client.call("version", Value::Null).await.unwrap(),
            json!("-a +1555 jsonRpc --receive-mode=manual")
        );
        let reason = lost(&mut notifications).await;
        assert!(reason.contains("exit status: 3"), "{reason}");
        assert!(
            client
                .call("version", Value::Null)
                .await
                .unwrap_err()
                .is_connection_lost()
        );
    }

    /// A stand-in that leaves a file in its temporary folder, as libsignal
    /// does, answers the first request with that folder, and then ignores
    /// the end of its stdin, as a hung JVM would.
    const LITTERING: &str = r#"dir=${JAVA_OPTS##*-Djava.io.tmpdir=}
echo native > "$dir/libsignal_jni.so"
read -r line
printf '{"jsonrpc":"2.0","id":1,"result":"%s"}\n' "$dir"
exec sleep 600"#;

    #[tokio::test]
    async fn a_child_that_does_not_end_is_killed_and_its_temporary_files_go_with_it() {
        let dir = tempfile::tempdir().unwrap();
        let program = script(dir.path(), "littering-cli", LITTERING);
        let (client, mut notifications) = RpcClient::spawn(&Spawn::new(program), None, RpcOptions::default()).unwrap();
        let scratch = client.call("version", Value::Null).await.unwrap();
        let scratch = PathBuf::from(scratch.as_str().expect("the folder"));
        assert!(
            scratch.join("libsignal_jni.so").is_file(),
            "the child wrote into its own folder: {}",
            scratch.display()
        );
        assert!(
            scratch
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("passepartout-signal-cli-")
        );
        client.close();
        let reason = lost(&mut notifications).await;
        assert!(reason.contains("SIGKILL"), "killed after the grace: {reason}");
        assert!(!scratch.exists(), "{} was removed", scratch.display());
    }

    #[test]
    fn java_options_of_the_environment_are_kept_before_the_temporary_folder() {
        let folder = std::path::Path::new("/tmp/scratch");
        assert_eq!(java_opts(None, folder), "-Djava.io.tmpdir=/tmp/scratch");
        assert_eq!(
            java_opts(Some("-Xmx64m".into()), folder),
            "-Xmx64m -Djava.io.tmpdir=/tmp/scratch"
        );
    }

    #[tokio::test]
    async fn a_missing_program_is_a_connect_error_naming_it_and_the_fix() {
        let spawn = Spawn::new("/nonexistent/signal-cli");
        let error = RpcClient::spawn(&spawn, None, RpcOptions::default()).unwrap_err();
        let RpcError::Connect { endpoint, kind, reason } = &error else {
            panic!("expected a connect error, got {error:?}");
        };
        assert_eq!(*kind, std::io::ErrorKind::NotFound);
        assert_eq!(endpoint, "/nonexistent/signal-cli jsonRpc --receive-mode=manual");
        assert!(
            reason.contains("/nonexistent/signal-cli") && reason.contains("install signal-cli"),
            "{reason}"
        );
        assert!(error.is_connection_lost());
    }
}
