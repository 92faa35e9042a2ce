//! Tests of the `shell` tool with real processes: status and streams, the
//! working directory and environment, output caps, and that nothing the
//! command starts survives a timeout, its exit, or an abandoned call.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

use serde_json::json;

use super::*;
use crate::config::{DEFAULT_OUTPUT_CAP_BYTES, SandboxConfig};
use crate::safety::sandbox::Support;
use crate::safety::tools::{ToolBox, testing};

/// Outer guard for every call: far beyond what any passing test needs.
pub(super) const GUARD: Duration = Duration::from_secs(30);

/// A workspace in a temporary folder (shared with the sandbox's tests).
pub(super) struct Fixture {
    pub(super) temp: tempfile::TempDir,
    pub(super) workspace: Arc<Workspace>,
}

pub(super) fn fixture() -> Fixture {
    let temp = tempfile::tempdir().unwrap();
    let workspace = Arc::new(Workspace::open(temp.path().join("ws")).unwrap());
    Fixture { temp, workspace }
}

fn config(timeout_s: u64) -> ShellConfig {
    ShellConfig {
        timeout_s,
        ..ShellConfig::default()
    }
}

impl Fixture {
    fn tool(&self, config: ShellConfig, cap: usize) -> ShellTool {
        self.tool_in(config, cap, &SandboxConfig::default())
    }

    /// The tool with `config` and `cap`, its commands confined by `sandbox`
    /// with the workspace writable.
    pub(super) fn tool_in(&self, config: ShellConfig, cap: usize, sandbox: &SandboxConfig) -> ShellTool {
        self.tool_on(config, cap, sandbox, Support::probe())
    }

    /// [`Fixture::tool_in`] on a kernel offering `support`.
    fn tool_on(&self, config: ShellConfig, cap: usize, sandbox: &SandboxConfig, support: Support) -> ShellTool {
        let policy = Policy::new(sandbox, support).writable(self.workspace.root());
        ShellTool::new(config, cap, self.workspace.clone(), policy)
    }

    pub(super) async fn run(&self, tool: &ShellTool, command: &str) -> String {
        let context = testing::context();
        let call = tool.call(&context, json!({ "command": command }));
        tokio::time::timeout(GUARD, call)
            .await
            .expect("the outer guard fired")
            .unwrap()
    }
}

/// The text between `--- label ---` and the next label or note.
fn stream<'a>(report: &'a str, label: &str) -> &'a str {
    let start = report.find(&format!("--- {label} ---\n")).unwrap() + label.len() + 9;
    let rest = &report[start..];
    let end = rest.find("\n--- ").map_or(rest.len(), |end| end + 1);
    &rest[..end]
}

/// Pids of processes in group `pgid` that are still running (not zombies:
/// whoever adopts orphans here may reap them late).
fn live_members(pgid: i32) -> Vec<i32> {
    let mut live = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        let Some(close) = stat.rfind(')') else { continue };
        let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
        if fields.get(2) == Some(&pgid.to_string().as_str()) && !matches!(fields[0], "Z" | "X") {
            live.push(pid);
        }
    }
    live
}

/// Waits until group `pgid` has no running member. SIGKILL is delivered
/// asynchronously, so this polls for the condition, with a deadline.
fn assert_group_gone(pgid: i32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let live = live_members(pgid);
        if live.is_empty() {
            return;
        }
        assert!(Instant::now() < deadline, "group {pgid} still has {live:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The two pids `echo $$ $!` printed: the shell (= group id) and a child.
fn pids(report: &str) -> (i32, i32) {
    let line = stream(report, "stdout").lines().next().unwrap();
    let mut numbers = line.split(' ').map(|number| number.parse::<i32>().unwrap());
    (numbers.next().unwrap(), numbers.next().unwrap())
}

#[tokio::test]
async fn exit_code_and_both_streams_are_reported() {
    let f = fixture();
    let tool = f.tool(config(30), DEFAULT_OUTPUT_CAP_BYTES);
    let report = f.run(&tool, "echo out; echo err >&2; exit 3").await;
    assert!(report.starts_with("[exit code: 3]\n"), "{report}");
    assert_eq!(stream(&report, "stdout"), "out\n");
    assert_eq!(stream(&report, "stderr"), "err\n");

    let report = f.run(&tool, "true").await;
    assert_eq!(
        report,
        "[exit code: 0]\n--- stdout ---\n(empty)\n--- stderr ---\n(empty)\n"
    );

    let report = f.run(&tool, "kill -KILL $$").await;
    assert!(report.starts_with("[killed by signal 9]\n"), "{report}");
}

#[tokio::test]
async fn runs_in_the_workspace_with_home_there() {
    let f = fixture();
    let tool = f.tool(config(30), DEFAULT_OUTPUT_CAP_BYTES);
    let report = f.run(&tool, "pwd; echo \"$HOME\"; echo hi > made.txt").await;
    let root = f.workspace.root().display().to_string();
    assert_eq!(stream(&report, "stdout"), format!("{root}\n{root}\n"));
    assert_eq!(
        std::fs::read_to_string(f.workspace.root().join("made.txt")).unwrap(),
        "hi\n"
    );
}

#[tokio::test]
async fn the_environment_is_scrubbed_to_pass_env() {
    // Variables a POSIX shell may add by itself.
    let shell_own = ["PWD", "OLDPWD", "SHLVL", "_"];
    // TMPDIR is the command's own temporary directory, not the daemon's.
    let expected: BTreeSet<&str> = ["PATH", "HOME", "TMPDIR"].into();
    let daemon_only: Vec<String> = std::env::vars_os()
        .map(|(name, _)| name.to_string_lossy().into_owned())
        .filter(|name| !expected.contains(name.as_str()) && !shell_own.contains(&name.as_str()))
        .collect();
    assert!(
        !daemon_only.is_empty(),
        "the test needs a daemon variable outside pass_env"
    );
    let absent = "PASSEPARTOUT_TEST_NEVER_SET";
    assert!(std::env::var_os(absent).is_none());

    let f = fixture();
    let shell = ShellConfig {
        pass_env: vec!["PATH".into(), absent.into()],
        ..config(30)
    };
    let tool = f.tool(shell, DEFAULT_OUTPUT_CAP_BYTES);
    let report = f.run(&tool, "env").await;
    let names: BTreeSet<&str> = stream(&report, "stdout")
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .filter(|name| !shell_own.contains(name))
        .collect();
    assert_eq!(names, expected, "{report}");
    let path = std::env::var("PATH").unwrap();
    assert!(stream(&report, "stdout").contains(&format!("PATH={path}\n")));
}

#[tokio::test]
async fn output_is_capped_with_a_note_and_stderr_keeps_its_share() {
    let f = fixture();
    let cap = 2048;
    let tool = f.tool(config(30), cap);
    let report = f
        .run(&tool, "head -c 100000 /dev/zero | tr '\\0' x; echo important >&2")
        .await;
    assert!(report.len() <= cap, "{} bytes", report.len());
    assert!(report.starts_with("[exit code: 0]\n"), "{report}");
    let shown = cap - 512 - "important\n".len();
    assert!(
        report.contains(&format!("[stdout cut: first {shown} of 100000 bytes shown]")),
        "{report}"
    );
    assert_eq!(stream(&report, "stderr"), "important\n");
}

#[tokio::test]
async fn a_chatty_command_on_both_streams_does_not_block() {
    let f = fixture();
    let tool = f.tool(config(30), DEFAULT_OUTPUT_CAP_BYTES);
    // Far more than a pipe buffer on stderr first, then on stdout: a reader
    // that drained one stream at a time, or stopped at the cap, would hang
    // until the timeout.
    let command = "head -c 3000000 /dev/zero | tr '\\0' e >&2; head -c 3000000 /dev/zero | tr '\\0' o";
    let report = f.run(&tool, command).await;
    assert!(report.starts_with("[exit code: 0]\n"), "{report}");
    assert!(report.contains("of 3000000 bytes shown]\n--- stderr"), "{report}");
    assert!(report.ends_with("of 3000000 bytes shown]\n"), "{report}");
}

#[tokio::test]
async fn a_command_running_forever_is_killed_with_its_group_and_partial_output() {
    let f = fixture();
    let tool = f.tool(config(1), DEFAULT_OUTPUT_CAP_BYTES);
    // Through the tool box, to show its own timeout does not strike first.
    let tools = ToolBox::with_limits([Arc::new(tool) as Arc<dyn Tool>], Duration::from_secs(1), 16 * 1024);
    let arguments = json!({"command": "sleep 1000 & echo $$ $!; echo waiting >&2; wait"}).to_string();
    let context = testing::context();
    let call = tools.call(&context, "shell", &arguments);
    let report = tokio::time::timeout(GUARD, call).await.unwrap().unwrap();
    assert!(report.starts_with("[killed after 1 s"), "{report}");
    assert_eq!(stream(&report, "stderr"), "waiting\n");
    let (group, child) = pids(&report);
    assert_ne!(group, child);
    assert_group_gone(group);
    assert!(!live_members(group).contains(&child));
}

#[tokio::test]
async fn background_processes_are_killed_when_the_shell_exits() {
    let f = fixture();
    let tool = f.tool(config(600), DEFAULT_OUTPUT_CAP_BYTES);
    // The background sleep holds stdout open: without the group kill at exit
    // the call would wait for it (and the guard would fire).
    let report = f.run(&tool, "sleep 1000 & echo $$ $!").await;
    assert!(report.starts_with("[exit code: 0]\n"), "{report}");
    assert!(!report.contains("incomplete"), "{report}");
    let (group, _) = pids(&report);
    assert_group_gone(group);
}

#[tokio::test]
async fn an_abandoned_call_kills_the_group() {
    let f = fixture();
    let tool = f.tool(config(600), DEFAULT_OUTPUT_CAP_BYTES);
    let pid_file = f.workspace.root().join("pid");
    let context = testing::context();
    let call = tool.call(&context, json!({"command": "sleep 1000 & echo $$ > pid; wait"}));
    let group = tokio::select! {
        result = call => panic!("the call ended by itself: {result:?}"),
        group = wait_for_line(&pid_file) => group,
    };
    // The call future is dropped here, as when act gives up on a turn.
    assert_group_gone(group);
}

/// Polls until `path` holds a complete line, then parses it.
async fn wait_for_line(path: &Path) -> i32 {
    let deadline = Instant::now() + GUARD;
    loop {
        if let Ok(text) = std::fs::read_to_string(path)
            && let Some(line) = text.strip_suffix('\n')
        {
            return line.parse().unwrap();
        }
        assert!(Instant::now() < deadline, "{} never written", path.display());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Where the kernel lets no PID namespace be made, a process that leaves
/// the group escapes the group kill; the call still ends.
#[tokio::test]
async fn an_escaped_process_holding_the_pipes_does_not_hang_the_call() {
    let f = fixture();
    let without_namespaces = Support::probe().isolating(false);
    let tool = f.tool_on(
        config(600),
        DEFAULT_OUTPUT_CAP_BYTES,
        &SandboxConfig::default(),
        without_namespaces,
    );
    // The shell waits until the child has left the group, or the group kill
    // at exit could catch it before `setsid` runs.
    let command = "setsid sh -c 'echo $$ > escaped; exec sleep 1000' & \
                   while [ ! -s escaped ]; do :; done; echo $$ $(cat escaped)";
    let report = f.run(&tool, command).await;
    let (_, escaped) = pids(&report);
    // Clean up what the group kill could not reach before asserting.
    let _ = rustix::process::kill_process(Pid::from_raw(escaped).unwrap(), Signal::KILL);
    assert!(report.starts_with("[exit code: 0]\n"), "{report}");
    assert!(report.contains("[output may be incomplete"), "{report}");
}

/// In a PID namespace of its own, the same escape ends with the command, and
/// its output is whole.
#[tokio::test]
async fn a_process_that_leaves_the_group_ends_with_the_command() {
    if !Support::probe().isolates() {
        crate::skip::skipped(
            "a_process_that_leaves_the_group_ends_with_the_command",
            crate::skip::Need::PidNamespaces,
            "no PID namespaces here",
        );
        return;
    }
    let f = fixture();
    let tool = f.tool(config(600), DEFAULT_OUTPUT_CAP_BYTES);
    let command = "setsid sh -c 'echo $$ > escaped; exec sleep 1011' & \
                   while [ ! -s escaped ]; do :; done; echo left";
    let report = f.run(&tool, command).await;
    assert!(report.starts_with("[exit code: 0]\n"), "{report}");
    assert!(!report.contains("[output may be incomplete"), "{report}");
    let running = |wanted: &str| {
        std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
            std::fs::read(entry.path().join("cmdline"))
                .is_ok_and(|line| String::from_utf8_lossy(&line).replace('\0', " ").trim() == wanted)
        })
    };
    assert!(!running("sleep 1011"), "the detached sleep outlived the command");
}

#[tokio::test]
async fn bad_arguments_are_invalid_arguments() {
    let f = fixture();
    let tool = f.tool(config(30), DEFAULT_OUTPUT_CAP_BYTES);
    let context = testing::context();
    for arguments in [
        json!({}),
        json!({"command": 1}),
        json!({"command": "true", "cwd": "/"}),
        json!({"command": "  "}),
        json!({"command": "a\u{0}b"}),
    ] {
        let result = tool.call(&context, arguments.clone()).await;
        assert!(
            matches!(result, Err(ToolError::InvalidArguments(_))),
            "{arguments}: {result:?}"
        );
    }
}

#[tokio::test]
async fn a_missing_shell_program_fails_clearly() {
    let f = fixture();
    let shell = ShellConfig {
        program: "/nonexistent/sh".into(),
        ..config(30)
    };
    let result = f
        .tool(shell, DEFAULT_OUTPUT_CAP_BYTES)
        .call(&testing::context(), json!({"command": "true"}))
        .await;
    assert!(
        matches!(&result, Err(ToolError::Failed(message)) if message.contains("/nonexistent/sh")),
        "{result:?}"
    );
}

#[test]
fn the_tool_timeout_leaves_room_after_the_shell_timeout() {
    let f = fixture();
    let tool = f.tool(config(7), DEFAULT_OUTPUT_CAP_BYTES);
    assert_eq!(tool.timeout(), Some(Duration::from_secs(7) + TIMEOUT_MARGIN));
    assert!(TIMEOUT_MARGIN > DRAIN_GRACE);
    let spec = tool.spec();
    assert_eq!(spec.name, "shell");
    assert_eq!(spec.parameters["required"], json!(["command"]));
    assert_eq!(spec.parameters["additionalProperties"], false);
}

#[test]
fn the_budget_is_shared_between_the_streams() {
    assert_eq!(split_budget(10, 20, 100), (10, 20));
    assert_eq!(split_budget(10, 200, 100), (10, 90));
    assert_eq!(split_budget(200, 10, 100), (90, 10));
    assert_eq!(split_budget(200, 300, 100), (50, 50));
    assert_eq!(split_budget(5, 5, 0), (0, 0));
}
