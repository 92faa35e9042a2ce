//! The `shell` tool: runs one command line as `PROGRAM -c LINE` in the
//! workspace and reports its exit status, standard output and standard error.
//!
//! What the command gets:
//! - its working directory is the workspace, and `HOME` points there too;
//! - its environment is cleared, then only the `[tools.shell] pass_env`
//!   variables are copied from the daemon's (so no API keys or tokens leak);
//! - standard input is `/dev/null`;
//! - it runs confined by the sandbox (`crate::safety::sandbox`): it writes only in the
//!   workspace and its own `TMPDIR` (removed after the call), reads only
//!   those and the system's folders, under resource limits. A command that
//!   meets a permission error gets one sentence naming the rule;
//! - it leads its own process group, which is killed (SIGKILL) when the shell
//!   exits, when the timeout strikes, and when the call is abandoned: nothing
//!   it started in the background outlives the call. A process that leaves the
//!   group on purpose (`setsid`) escapes this; if it keeps the output pipes
//!   open, reading stops after [`DRAIN_GRACE`] and the result says so.
//!
//! Both output streams are read concurrently to the end, each kept up to the
//! output cap and then only counted, so a chatty command never blocks on a
//! full pipe. The result shares the cap between the two streams and says how
//! much of each was cut.
//!
//! A non-zero exit is a normal result, not an error: the model should see it.
//! A command still running at the timeout is killed, and the result (also not
//! an error) says so and carries the output produced until then, which is
//! usually what explains the hang. [`ShellTool::timeout`] is the shell's
//! timeout plus [`TIMEOUT_MARGIN`], so the tool box's own timeout, which would
//! lose that output, does not strike first.

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use rustix::process::{Pid, Signal, kill_process_group};
use serde::Deserialize;
use serde_json::json;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::{Child, Command};

use super::workspace::Workspace;
use super::{Tool, ToolContext, ToolError, parse_arguments};
use crate::config::ShellConfig;
use crate::model::llm::ToolSpec;
use crate::safety::sandbox::Policy;

/// How long to keep reading output after the command's process group is
/// gone; only a process that escaped the group can keep the pipes open.
pub const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// Added to the shell timeout for [`ShellTool::timeout`]: room to kill, reap
/// and drain (at most [`DRAIN_GRACE`]) before the tool box gives up.
pub const TIMEOUT_MARGIN: Duration = Duration::from_secs(5);

/// Bytes of the output cap kept for the status line, labels and notes.
const FRAME_RESERVE: usize = 512;

/// `shell {command}`.
pub struct ShellTool {
    program: PathBuf,
    pass_env: Vec<String>,
    limit: Duration,
    output_cap: usize,
    workspace: Arc<Workspace>,
    sandbox: Policy,
}

impl ShellTool {
    /// A shell running `config.program` in `workspace`, whose result text
    /// (both streams and the framing) fits in `output_cap` bytes — pass the
    /// tool box's cap, `[tools] output_cap_bytes`. Each command runs
    /// confined by `sandbox`.
    pub fn new(config: ShellConfig, output_cap: usize, workspace: Arc<Workspace>, sandbox: Policy) -> Self {
        Self {
            program: config.program,
            pass_env: config.pass_env,
            limit: Duration::from_secs(config.timeout_s),
            output_cap,
            workspace,
            sandbox,
        }
    }

    /// The spec of a shell set up from `config`, without setting one up.
    pub fn spec_for(config: &ShellConfig) -> ToolSpec {
        spec(&config.program, Duration::from_secs(config.timeout_s))
    }

    fn command(&self, line: &str) -> Command {
        let mut command = Command::new(&self.program);
        command
            .arg("-c")
            .arg(line)
            .current_dir(self.workspace.root())
            .env_clear()
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        for name in &self.pass_env {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
        command.env("HOME", self.workspace.root());
        command
    }

    async fn run(&self, line: &str) -> Result<String, ToolError> {
        // Kept until the command is over: dropping it removes its TMPDIR.
        let mut confinement = self
            .sandbox
            .prepare()
            .map_err(|error| ToolError::Refused(error.to_string()))?;
        let mut command = self.command(line);
        confinement.apply(&mut command);
        let mut child = command
            .spawn()
            .map_err(|error| ToolError::Failed(format!("could not start {}: {error}", self.program.display())))?;
        // From here on, leaving this function by any path kills the group.
        let mut group = ProcessGroup::of(&child);
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            return Err(ToolError::Failed("the shell's output pipes were not set up".into()));
        };
        let mut out = Captured::default();
        let mut err = Captured::default();
        let (ending, complete) = {
            let cap = self.output_cap;
            let reading = async { tokio::join!(drain(stdout, &mut out, cap), drain(stderr, &mut err, cap)) };
            tokio::pin!(reading);
            let deadline = tokio::time::sleep(self.limit);
            tokio::pin!(deadline);
            let mut read_all = false;
            let ending = loop {
                tokio::select! {
                    status = child.wait() => break status.map(Ending::Exited),
                    _ = &mut reading, if !read_all => read_all = true,
                    () = &mut deadline => break Ok(Ending::TimedOut),
                }
            };
            group.kill();
            if matches!(ending, Ok(Ending::TimedOut)) {
                // The group kill took the shell too; reap it.
                let _ = child.start_kill();
                let _ = child.wait().await;
            }
            let complete = read_all || tokio::time::timeout(DRAIN_GRACE, &mut reading).await.is_ok();
            (ending, complete)
        };
        let ending = ending.map_err(|error| ToolError::Failed(format!("waiting for the shell failed: {error}")))?;
        let mut report = self.report(ending, &out, &err, complete);
        if refused(&err.kept)
            && let Some(hint) = self.sandbox.refusal_hint()
        {
            report.push_str(&hint);
            report.push('\n');
        }
        drop(confinement);
        Ok(report)
    }

    /// The result text: status line, both streams, notes.
    fn report(&self, ending: Ending, out: &Captured, err: &Captured, complete: bool) -> String {
        let status = match ending {
            Ending::TimedOut => format!(
                "[killed after {} s: the command did not finish within the shell timeout; \
                 output until then is below. Run long jobs in smaller steps.]",
                self.limit.as_secs_f64()
            ),
            Ending::Exited(status) => match (status.code(), status.signal()) {
                (Some(code), _) => format!("[exit code: {code}]"),
                (None, Some(signal)) => format!("[killed by signal {signal}]"),
                (None, None) => format!("[ended: {status}]"),
            },
        };
        let out_text = String::from_utf8_lossy(&out.kept);
        let err_text = String::from_utf8_lossy(&err.kept);
        let budget = self.output_cap.saturating_sub(FRAME_RESERVE);
        let (out_share, err_share) = split_budget(out_text.len(), err_text.len(), budget);
        let mut report = status;
        report.push('\n');
        section(&mut report, "stdout", &out_text, out_share, out.total);
        section(&mut report, "stderr", &err_text, err_share, err.total);
        if !complete {
            report.push_str(
                "[output may be incomplete: a process that left the command's process group kept the pipes open]\n",
            );
        }
        report
    }
}

/// The arguments of `shell`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ShellArguments {
    command: String,
}

/// The spec of a shell running `program` for at most `limit`.
fn spec(program: &Path, limit: Duration) -> ToolSpec {
    ToolSpec {
        name: "shell".into(),
        description: format!(
            "Run a command line with {} -c in the workspace directory and return its exit code, \
             stdout and stderr. A non-zero exit code is reported, not an error. Standard input is \
             empty, so the command must not wait for input. Only a few environment variables are \
             set; HOME is the workspace. It runs in a sandbox: it can write only in the workspace \
             and $TMPDIR and read only those and the system's folders. A command running longer than {} s is killed together \
             with everything it started, and so is anything left in the background when it exits.",
            program.display(),
            limit.as_secs()
        ),
        parameters: json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "description": "The command line, e.g. `ls -la && wc -l notes.txt`."}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
    }
}

#[async_trait]
impl Tool for ShellTool {
    fn spec(&self) -> ToolSpec {
        spec(&self.program, self.limit)
    }

    fn timeout(&self) -> Option<Duration> {
        Some(self.limit + TIMEOUT_MARGIN)
    }

    fn confinement(&self) -> Option<String> {
        Some(self.sandbox.summary())
    }

    async fn call(&self, _: &ToolContext, arguments: serde_json::Value) -> Result<String, ToolError> {
        let ShellArguments { command } = parse_arguments(arguments)?;
        if command.trim().is_empty() {
            return Err(ToolError::InvalidArguments(
                "`command` is empty; give a command line to run".into(),
            ));
        }
        if command.contains('\0') {
            return Err(ToolError::InvalidArguments("`command` contains a NUL character".into()));
        }
        self.run(&command).await
    }
}

/// Whether `stderr` reports a refused access (EACCES or EPERM, as the C
/// library words them), which the sandbox may have caused.
fn refused(stderr: &[u8]) -> bool {
    crate::safety::sandbox::refused(&String::from_utf8_lossy(stderr))
}

/// How the command ended.
enum Ending {
    Exited(ExitStatus),
    TimedOut,
}

/// One output stream: the first bytes up to the cap, and the total seen.
#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    total: u64,
}

/// Reads `pipe` to its end into `into`, keeping at most `cap` bytes and
/// counting the rest. A read error ends the stream like end-of-file.
async fn drain(mut pipe: impl AsyncRead + Unpin, into: &mut Captured, cap: usize) {
    let mut chunk = [0u8; 8192];
    while let Ok(read) = pipe.read(&mut chunk).await {
        if read == 0 {
            break;
        }
        let room = cap.saturating_sub(into.kept.len());
        into.kept.extend_from_slice(&chunk[..read.min(room)]);
        into.total += read as u64;
    }
}

/// Shares `budget` bytes between two texts of lengths `a` and `b`: each gets
/// all it needs if both fit, otherwise a short one keeps all of its and the
/// long one gets the rest, or each gets half.
fn split_budget(a: usize, b: usize, budget: usize) -> (usize, usize) {
    let half = budget / 2;
    if a + b <= budget {
        (a, b)
    } else if a <= half {
        (a, budget - a)
    } else if b <= half {
        (budget - b, b)
    } else {
        (half, budget - half)
    }
}

/// Appends a labeled stream to `report`, cut to `share` bytes on a character
/// boundary, with a note when anything was cut.
fn section(report: &mut String, label: &str, text: &str, share: usize, total: u64) {
    report.push_str(&format!("--- {label} ---\n"));
    if total == 0 {
        report.push_str("(empty)\n");
        return;
    }
    let mut end = share.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    report.push_str(&text[..end]);
    if !text[..end].ends_with('\n') {
        report.push('\n');
    }
    if end < text.len() || (text.len() as u64) < total {
        report.push_str(&format!("[{label} cut: first {end} of {total} bytes shown]\n"));
    }
}

/// The command's process group, killed when [`ProcessGroup::kill`] is called
/// or the guard is dropped (the call was abandoned), whichever comes first.
struct ProcessGroup(Option<Pid>);

impl ProcessGroup {
    /// The group `child` leads (it was spawned with `process_group(0)`).
    fn of(child: &Child) -> Self {
        Self(child.id().and_then(|id| i32::try_from(id).ok()).and_then(Pid::from_raw))
    }

    /// SIGKILLs every process in the group, once. The leader is not reaped
    /// before this on any path but a normal exit, and then a group with
    /// members left keeps its id reserved, so the id cannot name a stranger.
    fn kill(&mut self) {
        let Some(pid) = self.0.take() else {
            return;
        };
        match kill_process_group(pid, Signal::KILL) {
            Ok(()) | Err(rustix::io::Errno::SRCH) => {}
            Err(error) => {
                tracing::warn!(%error, pgid = pid.as_raw_nonzero().get(), "could not kill the shell's process group");
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

#[cfg(test)]
#[path = "shell_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "shell_sandbox_tests.rs"]
mod sandbox_tests;
