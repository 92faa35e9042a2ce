//! The sandbox end to end, through the real binary: approved shell commands
//! cannot read the secret beside the config, the data directory nor the
//! daemon's environment (and their canaries never reach the model), write
//! only in the workspace, are kept off the network when it is closed, and a
//! burst of processes ends within the limits while the daemon keeps
//! answering. And the process limit itself, on a user the kernel counts.

use crate::support;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};

use passepartout::safety::sandbox::{PRETEND_ABI_VAR, Support};
use serde_json::{Value, json};
use support::chat::Chat;
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::harness::WAIT;
use support::process::{Running, binary, run_cli, socket_path, write_config};
use support::skip::Need;

/// Written beside the config file, as a token file would be.
const CONFIG_CANARY: &str = "canary-beside-the-config-5531";
/// Written into the data directory, outside the workspace.
const DATA_CANARY: &str = "canary-in-the-data-dir-8812";
/// Set in the daemon's own environment.
const ENV_CANARY: &str = "canary-in-the-daemons-environment-2290";

/// The fake model: `please run: LINE` calls the shell with LINE; the outcome
/// of an approval is quoted back in a final reply; the rest is echoed.
fn model(request: &Value) -> Script {
    let text = last_user_text(request);
    if text.starts_with("[passepartout] ") {
        Script::Reply(format!("final: {text}"))
    } else if let Some(line) = text.strip_prefix("please run: ") {
        Script::ToolCall {
            name: "shell".into(),
            arguments: json!({ "command": line }).to_string(),
        }
    } else {
        Script::Echo
    }
}

/// A daemon (the real binary) whose shell needs approval, with the two
/// canaries in place and `extra` appended to its file.
pub(crate) struct Sandboxed {
    pub(crate) dir: tempfile::TempDir,
    pub(crate) llm: FakeLlm,
    pub(crate) daemon: Running,
    pub(crate) chat: Chat,
    /// The last approval prompt, as shown.
    pub(crate) prompt: String,
}

impl Sandboxed {
    pub(crate) async fn start(extra: &str) -> Sandboxed {
        Self::start_with(extra, &[]).await
    }

    /// [`Sandboxed::start`], the daemon given `env` too.
    pub(crate) async fn start_with(extra: &str, env: &[(&str, &str)]) -> Sandboxed {
        let llm = FakeLlm::start().await;
        llm.set_responder(model);
        let dir = tempfile::tempdir().unwrap();
        let config = write_config(dir.path(), &llm.base_url());
        let mut text = std::fs::read_to_string(&config).unwrap();
        text += "[tools]\nrequire_approval = [\"shell\"]\n";
        text += extra;
        std::fs::write(&config, text).unwrap();
        std::fs::write(dir.path().join("telegram.token"), CONFIG_CANARY).unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        std::fs::write(dir.path().join("data").join("notes.txt"), DATA_CANARY).unwrap();
        let env: Vec<(&str, &str)> = [("RUST_LOG", "info")].into_iter().chain(env.iter().copied()).collect();
        let daemon = Running::start_with(&config, &env).await;
        let chat = Chat::connect(&socket_path(dir.path()), "alice").await;
        Sandboxed {
            dir,
            llm,
            daemon,
            chat,
            prompt: String::new(),
        }
    }

    pub(crate) fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    pub(crate) fn workspace(&self) -> PathBuf {
        self.dir.path().join("data").join("workspace")
    }

    /// Asks for `line`, approves it, and returns the model's final reply,
    /// which quotes the command's result.
    pub(crate) async fn run(&mut self, line: &str) -> String {
        let original = self.chat.send(&format!("please run: {line}")).await;
        let prompt = self.chat.prompt(&original).await;
        self.prompt = prompt.text.clone();
        self.chat.answer("yes", Some(&prompt.id)).await;
        let (_, text) = self.chat.reply(&original).await;
        assert!(text.starts_with("final: "), "{text}");
        text
    }

    /// Whether `canary` appears in anything the model was sent.
    pub(crate) fn model_saw(&self, canary: &str) -> bool {
        self.llm
            .requests()
            .iter()
            .any(|request| request.to_string().contains(canary))
    }
}

/// Whether this kernel offers Landlock; where it does not, `test` says it
/// skipped.
pub(crate) fn landlock(test: &str) -> bool {
    let there = Support::probe().filesystem();
    if !there {
        support::skip::skipped(test, Need::Landlock, "this kernel offers no Landlock");
    }
    there
}

/// `passepartout doctor` on `config`, its environment given `env`: how it
/// ended, and what it printed.
pub(crate) async fn doctor(config: &Path, env: &[(&str, &str)]) -> (std::process::Output, String) {
    let running = tokio::process::Command::new(binary())
        .arg("--config")
        .arg(config)
        .arg("doctor")
        .envs(env.iter().copied())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(WAIT, running)
        .await
        .expect("doctor finishes")
        .unwrap();
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    (output, report)
}

/// The doctor's sandbox line in `report`.
pub(crate) fn sandbox_line(report: &str) -> &str {
    report
        .lines()
        .find(|line| line.contains("sandbox"))
        .unwrap_or_else(|| panic!("{report}"))
}

pub(crate) fn shown(path: &Path) -> String {
    path.display().to_string()
}

#[tokio::test]
async fn the_secret_beside_the_config_and_the_data_dir_stay_out_of_reach() {
    if !landlock("the_secret_beside_the_config_and_the_data_dir_stay_out_of_reach") {
        return;
    }
    let mut s = Sandboxed::start("").await;
    let reply = s.run(&format!("cat {}", shown(&s.path("telegram.token")))).await;
    assert!(reply.contains("Permission denied"), "{reply}");
    assert!(
        reply.contains("tools.sandbox.allow_read"),
        "the refusal names the rule: {reply}"
    );
    let reply = s.run(&format!("cat {}", shown(&s.path("data/notes.txt")))).await;
    assert!(reply.contains("Permission denied"), "{reply}");
    let reply = s.run(&format!("ls {}", shown(&s.path("data")))).await;
    assert!(
        reply.contains("Permission denied"),
        "the store is not even listed: {reply}"
    );
    assert!(!s.model_saw(CONFIG_CANARY), "the config's secret reached the model");
    assert!(!s.model_saw(DATA_CANARY), "the data dir's file reached the model");
    s.daemon.terminate().await;
}

#[tokio::test]
async fn the_daemons_environment_stays_out_of_reach_and_the_machine_is_readable() {
    if !landlock("the_daemons_environment_stays_out_of_reach_and_the_machine_is_readable") {
        return;
    }
    let mut s = Sandboxed::start_with("", &[("PP_TEST_ENVIRONMENT_CANARY", ENV_CANARY)]).await;
    // The shell's parent is the daemon, whose environment holds the canary.
    let reply = s.run("cat /proc/$PPID/environ").await;
    assert!(reply.contains("Permission denied"), "{reply}");
    let token = shown(&s.path("telegram.token"));
    let reply = s.run(&format!("cat /proc/$PPID/root{token}")).await;
    assert!(reply.contains("Permission denied"), "{reply}");
    assert!(!s.model_saw(ENV_CANARY), "the daemon's environment reached the model");
    assert!(!s.model_saw(CONFIG_CANARY), "the config's secret reached the model");
    let reply = s.run("nproc && cat /sys/devices/system/cpu/online").await;
    assert!(!reply.contains("Permission denied"), "the machine is readable: {reply}");
    assert!(reply.contains("[exit code: 0]"), "{reply}");
    s.daemon.terminate().await;
}

#[tokio::test]
async fn only_the_workspace_is_writable() {
    if !landlock("only_the_workspace_is_writable") {
        return;
    }
    let mut s = Sandboxed::start("").await;
    let outside = s.path("outside.txt");
    let reply = s.run(&format!("touch {}", shown(&outside))).await;
    assert!(!outside.exists(), "{reply}");
    assert!(reply.contains("only the workspace and $TMPDIR are writable"), "{reply}");
    let reply = s.run("touch inside.txt && echo made").await;
    assert!(s.workspace().join("inside.txt").exists(), "{reply}");
    assert!(reply.contains("made"), "{reply}");
    assert!(!s.prompt.contains("unconfined"), "{}", s.prompt);

    let status = run_cli(&s.path("config.toml"), &["status"]).await;
    let text = String::from_utf8_lossy(&status.stdout);
    let abi = Support::probe().abi();
    assert!(
        text.contains(&format!(
            "sandbox  shell commands and MCP servers confined by Landlock ABI {abi}: files beyond the \
             workspace and the system refused, network open"
        )),
        "status says what is enforced: {text}"
    );
    let audit = run_cli(&s.path("config.toml"), &["approvals", "--all"]).await;
    let text = String::from_utf8_lossy(&audit.stdout);
    assert!(
        text.contains(&format!("confined (Landlock ABI {abi}, network open, cpu 60 s")),
        "the audit says the call ran confined: {text}"
    );
    s.daemon.terminate().await;
}

#[tokio::test]
async fn a_burst_of_processes_ends_within_the_limits_and_the_daemon_answers() {
    // Bounded: far more processes than the limit allows, yet few enough not
    // to hurt a machine where the kernel does not hold root to the limit.
    let mut s = Sandboxed::start("[tools.shell]\ntimeout_s = 5\n[tools.sandbox]\nprocesses = 64\n").await;
    let burst = "i=0; while [ $i -lt 300 ]; do sleep 120 & i=$((i+1)); done; wait";
    let started = std::time::Instant::now();
    let reply = s.run(burst).await;
    assert!(started.elapsed() < WAIT, "{reply}");
    // Where a control group holds the limit for the whole command (root
    // too), the shell meets it and gives up; elsewhere the sleeps started
    // within the limit are ended by the timeout, the whole group with the
    // shell.
    assert!(
        reply.contains("[killed after 5 s") || reply.contains("Cannot fork") || reply.contains("fork"),
        "{reply}"
    );
    // The kernel exempts root (kernel user 0, in any user namespace) from
    // the per-process limit, but not from a control group's; everyone else
    // meets either.
    let root = rustix::process::getuid().is_root();
    if !root || passepartout::safety::sandbox::Cgroups::find(false).is_some() {
        assert!(
            reply.contains("fork") || reply.contains("Resource temporarily unavailable"),
            "the process limit held: {reply}"
        );
    } else {
        support::skip::skipped(
            "a_burst_of_processes_ends_within_the_limits_and_the_daemon_answers",
            Need::Cgroups,
            "run as root without a control group, nothing limits the burst",
        );
    }
    let id = s.chat.send("still there?").await;
    assert_eq!(s.chat.reply(&id).await.1, "echo: still there?");
    s.daemon.terminate().await;
}

#[tokio::test]
async fn network_none_stops_a_connection_that_any_lets_through() {
    if !Support::probe().network() {
        support::skip::skipped(
            "network_none_stops_a_connection_that_any_lets_through",
            Need::LandlockNetwork,
            "this kernel's Landlock has no network rules",
        );
        return;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    // bash's /dev/tcp connects without any other program.
    let line = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let connected = "--- stdout ---\nconnected";
    let bash = "[tools.shell]\nprogram = \"/bin/bash\"\n";

    let mut closed = Sandboxed::start(&format!("{bash}[tools.sandbox]\nnetwork = \"none\"\n")).await;
    let reply = closed.run(&line).await;
    assert!(!reply.contains(connected), "{reply}");
    assert!(
        reply.contains(r#"network = "none""#),
        "the refusal names the rule: {reply}"
    );
    closed.daemon.terminate().await;

    let mut open = Sandboxed::start(bash).await;
    let reply = open.run(&line).await;
    assert!(reply.contains(connected), "{reply}");
    let accepted = tokio::time::timeout(WAIT, listener.accept()).await;
    assert!(matches!(accepted, Ok(Ok(_))), "the listener saw the connection");
    open.daemon.terminate().await;
}

#[tokio::test]
async fn require_on_a_kernel_without_landlock_refuses_clearly() {
    let required = "[tools.sandbox]\nrequire = true\n";
    let mut s = Sandboxed::start_with(required, &[(PRETEND_ABI_VAR, "0")]).await;
    s.daemon
        .wait_for_log(&["tool processes are not confined", "no Landlock"])
        .await;
    let reply = s.run("touch ran.txt").await;
    assert!(
        reply.contains("tools.sandbox.require is on and this kernel offers no Landlock"),
        "{reply}"
    );
    assert!(!s.workspace().join("ran.txt").exists(), "nothing ran: {reply}");
    assert!(
        s.prompt.contains("It will be refused: tools.sandbox.require is on"),
        "{}",
        s.prompt
    );
    assert!(!s.prompt.contains("runs unconfined"), "{}", s.prompt);

    let (doctor, report) = doctor(&s.path("config.toml"), &[(PRETEND_ABI_VAR, "0")]).await;
    let line = sandbox_line(&report);
    assert!(line.contains("refuses every tool process"), "{line}");
    assert!(
        !doctor.status.success(),
        "a refusing sandbox fails the doctor: {report}"
    );
    s.daemon.terminate().await;
}

#[tokio::test]
async fn doctor_names_the_landlock_abi() {
    let support = Support::probe();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "http://127.0.0.1:9/v1");
    let (_, report) = doctor(&config, &[]).await;
    let line = sandbox_line(&report);
    if support.filesystem() {
        assert!(line.contains(&format!("Landlock ABI {}", support.abi())), "{line}");
    } else {
        assert!(line.contains("unconfined"), "{line}");
    }
}

/// An id no account on a test machine is likely to have: the process limit
/// counts every process of the user, so a busy one would skew it.
pub(crate) const LIMITED_ID: u32 = 61_938;

#[tokio::test]
async fn the_process_limit_holds_a_user_the_kernel_counts() {
    const TEST: &str = "the_process_limit_holds_a_user_the_kernel_counts";
    let config = passepartout::config::SandboxConfig {
        processes: 16,
        ..Default::default()
    };
    let mut confinement = passepartout::safety::sandbox::Policy::new(&config, Support::probe())
        .prepare()
        .unwrap();
    // A burst far past the limit; the sleeps left behind (their output
    // elsewhere, so the pipes close with the shell) are killed below.
    let burst = "i=0; while [ $i -lt 100 ]; do sleep 60 >/dev/null 2>&1 & i=$((i+1)); done";
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .args(["-c", burst])
        .current_dir("/")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0);
    // Root is not counted (the kernel exempts it), so the burst runs as a
    // user that is.
    if rustix::process::geteuid().is_root() {
        let switched = std::process::Command::new("/bin/true")
            .uid(LIMITED_ID)
            .gid(LIMITED_ID)
            .status();
        if !switched.as_ref().is_ok_and(|status| status.success()) {
            let why = format!("this machine cannot run a child as uid {LIMITED_ID}: {switched:?}");
            support::skip::skipped(TEST, Need::OtherUsers, &why);
            return;
        }
        command.uid(LIMITED_ID).gid(LIMITED_ID);
    }
    confinement.apply(&mut command);
    let child = command.spawn().unwrap();
    let group = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    let output = tokio::time::timeout(WAIT, child.wait_with_output()).await;
    let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    // The shell gives up at its first refused fork (dash) or after its
    // retries (bash).
    let output = output.expect("the burst ends").unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("fork") || stderr.contains("Resource temporarily unavailable"),
        "the limit stopped the burst: {stderr}"
    );
}
