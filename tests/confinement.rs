//! What a tool's process cannot do to the daemon or the machine, tried as a
//! hostile command or tool server would, through the real binary: drive the
//! control socket (an approved shell command, and a trusted MCP server's
//! child, each while another chat's call waits for its approval), reach
//! any other Unix socket, or leave a process behind that outlives the
//! command (`setsid -f`, a double fork, `nohup`), as root and as an
//! ordinary user.

use crate::support;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use passepartout::safety::sandbox::{Policy, Support};
use support::chat::{Chat, Prompt};
use support::harness::WAIT;
use support::mcp::{fixture, model, server, wait_for_servers};
use support::process::socket_path;
use support::skip::Need;

use crate::sandbox::{LIMITED_ID, Sandboxed, landlock, shown};

/// The script a hostile process runs against the socket.
fn attack_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/socket_attack.py")
}

/// Bob asks, in words the fake model turns into a shell call, for a command
/// that waits for an approval.
async fn waiting_call(mut bob: Chat, asking: &str) -> Waiting {
    let original = bob.send(asking).await;
    let prompt = bob.prompt(&original).await;
    Waiting { bob, original, prompt }
}

struct Waiting {
    bob: Chat,
    original: String,
    prompt: Prompt,
}

/// Bob's call was still waiting: his own "no" decides it now.
async fn still_waiting(waiting: Waiting) {
    let Waiting {
        mut bob,
        original,
        prompt,
    } = waiting;
    let original = original.as_str();
    bob.answer("no", Some(&prompt.id)).await;
    let (_, text) = bob.reply(original).await;
    assert!(text.starts_with("final: "), "{text}");
    assert!(text.contains("denied"), "bob's own answer decided it: {text}");
}

/// Runs the attack as an approved shell command of alice's.
async fn attack_from_the_shell(s: &mut Sandboxed, token: &str) -> String {
    std::fs::copy(attack_script(), s.workspace().join("socket_attack.py")).unwrap();
    let socket = shown(&socket_path(s.dir.path()));
    s.run(&format!("/usr/bin/python3 socket_attack.py {socket} {token}"))
        .await
}

#[tokio::test]
async fn an_approved_command_cannot_reach_the_socket_or_its_key() {
    if !landlock("an_approved_command_cannot_reach_the_socket_or_its_key") {
        return;
    }
    let mut s = Sandboxed::start("").await;
    let bob = Chat::connect(&socket_path(s.dir.path()), "bob").await;
    let waiting = waiting_call(bob, "please run: echo bob's").await;
    let reply = attack_from_the_shell(&mut s, &waiting.prompt.token).await;
    assert!(reply.contains("key: PermissionError"), "{reply}");
    assert!(
        reply.contains("connect: PermissionError"),
        "no Unix socket can even be made: {reply}"
    );
    still_waiting(waiting).await;
    s.daemon.terminate().await;
}

#[tokio::test]
async fn a_granted_socket_path_still_asks_for_the_key() {
    if !landlock("a_granted_socket_path_still_asks_for_the_key") {
        return;
    }
    // The daemon's socket granted by path: the seccomp filter is off, and
    // only the key stands in the way.
    let dir = tempfile::tempdir().unwrap();
    let socket = socket_path(dir.path());
    drop(dir);
    let grant = format!("[tools.sandbox]\nunix_sockets = [{:?}]\n", shown(&socket));
    let mut s = Sandboxed::start(&grant).await;
    let socket = socket_path(s.dir.path());
    let bob = Chat::connect(&socket, "bob").await;
    let waiting = waiting_call(bob, "please run: echo bob's").await;
    let reply = attack_from_the_shell(&mut s, &waiting.prompt.token).await;
    assert!(reply.contains("key: PermissionError"), "{reply}");
    assert!(reply.contains("connect: ok"), "the grant let it connect: {reply}");
    assert!(reply.contains("answer: error not_allowed"), "{reply}");
    assert!(!reply.contains("answer: approvals"), "{reply}");
    still_waiting(waiting).await;
    s.daemon.terminate().await;
}

#[tokio::test]
async fn a_trusted_tool_server_cannot_approve_a_waiting_call() {
    if !landlock("a_trusted_tool_server_cannot_approve_a_waiting_call") {
        return;
    }
    let llm = support::fake_llm::FakeLlm::start().await;
    llm.set_responder(model);
    let daemon = support::harness::TestDaemon::start_with(
        &llm,
        |config| {
            config.mcp.servers = vec![fixture(30)];
            config.tools.require_approval = vec!["shell".into()];
        },
        Vec::new(),
    )
    .await;
    let running = daemon.daemon.as_ref().expect("running");
    wait_for_servers(running, |servers| {
        server(servers, "fixture").state == passepartout::safety::mcp::Phase::Connected
    })
    .await;
    let socket = daemon.config.socket_path();
    let bob = Chat::open(&daemon, "bob").await;
    let waiting = waiting_call(bob, r#"call shell {"command":"echo bob's"}"#).await;
    let mut kim = Chat::open(&daemon, "kim").await;
    let call = serde_json::json!({ "socket": socket, "token": waiting.prompt.token });
    let id = kim.send(&format!("call fixture__attack {call}")).await;
    let (_, text) = kim.reply(&id).await;
    assert!(text.contains("key: PermissionError"), "{text}");
    assert!(text.contains("connect: PermissionError"), "{text}");
    still_waiting(waiting).await;
}

/// Waits until no process runs `wanted`; false if one still does at the end.
async fn gone(wanted: &str) -> bool {
    let deadline = tokio::time::Instant::now() + WAIT;
    while tokio::time::Instant::now() < deadline {
        if support::process::processes_running(wanted).is_empty() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

/// Lines that leave a process behind in three ways; each sleep is told
/// apart by its length.
const LEFT_BEHIND: &str = "setsid -f sleep 3101 >/dev/null 2>&1; (sleep 3102 >/dev/null 2>&1 &); nohup sleep 3103 >/dev/null 2>&1 & echo left";

#[tokio::test]
async fn nothing_a_command_leaves_behind_outlives_it() {
    if !Support::probe().isolates() {
        support::skip::skipped(
            "nothing_a_command_leaves_behind_outlives_it",
            Need::PidNamespaces,
            "the kernel lets the daemon make no PID namespace here",
        );
        return;
    }
    let mut s = Sandboxed::start("").await;
    let reply = s.run(LEFT_BEHIND).await;
    assert!(reply.contains("left"), "{reply}");
    for sleep in ["sleep 3101", "sleep 3102", "sleep 3103"] {
        assert!(gone(sleep).await, "{sleep} outlived its command");
    }
    let id = s.chat.send("still there?").await;
    assert_eq!(s.chat.reply(&id).await.1, "echo: still there?");
    s.daemon.terminate().await;
}

/// The same as an ordinary user, whom the kernel gives a user namespace
/// for it, and the Unix socket refused there too.
#[tokio::test]
async fn an_ordinary_users_command_is_isolated_and_filtered_too() {
    const TEST: &str = "an_ordinary_users_command_is_isolated_and_filtered_too";
    let support = Support::probe();
    if !support.isolates() {
        support::skip::skipped(
            TEST,
            Need::PidNamespaces,
            "the kernel lets the daemon make no PID namespace here",
        );
        return;
    }
    let root = rustix::process::geteuid().is_root();
    if root {
        let switched = std::process::Command::new("/bin/true")
            .uid(LIMITED_ID)
            .gid(LIMITED_ID)
            .status();
        if !switched.as_ref().is_ok_and(|status| status.success()) {
            support::skip::skipped(
                TEST,
                Need::OtherUsers,
                &format!("cannot run a child as uid {LIMITED_ID}: {switched:?}"),
            );
            return;
        }
    }
    let line = "setsid -f sleep 3104 >/dev/null 2>&1; \
                /usr/bin/python3 -c 'import socket; socket.socket(socket.AF_UNIX)' 2>&1 | tail -1; \
                /usr/bin/python3 -c 'import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)' 2>&1 | tail -1; \
                /usr/bin/python3 -c 'import socket; socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM); print(\"pair-ok\")'; \
                ps -e >/dev/null && free -m >/dev/null && echo diagnostics-ran; id -u";
    let mut confinement = Policy::new(&Default::default(), support).prepare().unwrap();
    let mut command = tokio::process::Command::new("/bin/sh");
    command
        .args(["-c", line])
        .current_dir("/")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if root {
        command.uid(LIMITED_ID).gid(LIMITED_ID);
    }
    confinement.apply(&mut command);
    let output = tokio::time::timeout(WAIT, command.output())
        .await
        .expect("the command ends")
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(stdout.matches("PermissionError").count(), 2, "{stdout}");
    assert!(stdout.contains("pair-ok"), "a stream pair stays open: {stdout}");
    assert!(stdout.contains("diagnostics-ran"), "its own /proc: {stdout}");
    let uid = if root {
        LIMITED_ID
    } else {
        rustix::process::geteuid().as_raw()
    };
    assert!(
        stdout.trim_end().ends_with(&uid.to_string()),
        "its own uid inside: {stdout}"
    );
    assert!(gone("sleep 3104").await, "the detached sleep outlived its command");
}

/// A command's exit status comes through the namespace's keeper unchanged.
#[tokio::test]
async fn a_commands_exit_status_and_signal_come_through() {
    let support = Support::probe();
    for (line, code, signal) in [("exit 7", Some(7), None), ("kill -TERM $$", None, Some(15))] {
        let mut confinement = Policy::new(&Default::default(), support).prepare().unwrap();
        let mut command = tokio::process::Command::new("/bin/sh");
        command.args(["-c", line]).kill_on_drop(true);
        confinement.apply(&mut command);
        let status = tokio::time::timeout(WAIT, command.status())
            .await
            .expect("ends")
            .unwrap();
        assert_eq!(status.code(), code, "{line}: {status:?}");
        assert_eq!(std::os::unix::process::ExitStatusExt::signal(&status), signal, "{line}");
    }
}

/// Eight children of 100 MiB each under `memory_mb = 256`: each fits the
/// limit on its own, so per process all eight would live; held for the
/// whole command, at most two do.
#[tokio::test]
async fn the_memory_limit_holds_for_the_whole_command() {
    const TEST: &str = "the_memory_limit_holds_for_the_whole_command";
    let Some(cgroups) = passepartout::safety::sandbox::Cgroups::find(true) else {
        support::skip::skipped(TEST, Need::Cgroups, "no control group the test may make children in");
        return;
    };
    let config = passepartout::config::SandboxConfig {
        memory_mb: 256,
        ..Default::default()
    };
    let child = "import time; held = b'x' * (100 << 20); time.sleep(3); print('survived', flush=True)";
    let line = format!("for i in 1 2 3 4 5 6 7 8; do /usr/bin/python3 -c \"{child}\" & done; wait");
    let run = |policy: Policy| {
        let line = line.clone();
        async move {
            let mut confinement = policy.prepare().unwrap();
            let mut command = tokio::process::Command::new("/bin/sh");
            command.args(["-c", &line]).process_group(0).kill_on_drop(true);
            confinement.apply(&mut command);
            let output = tokio::time::timeout(WAIT, command.output())
                .await
                .expect("the command ends")
                .unwrap();
            String::from_utf8_lossy(&output.stdout).matches("survived").count()
        }
    };
    let whole = run(Policy::new(&config, Support::probe()).with_cgroups(Some(cgroups))).await;
    assert!(
        whole <= 2,
        "{whole} of 8 survived a 256 MiB limit for the whole command"
    );
    let each = run(Policy::new(&config, Support::probe())).await;
    assert_eq!(each, 8, "per process, each fits");
}

/// Set in the daemon's environment, as a token may be.
const TOKEN_IN_ENV: &str = "token-in-the-daemons-environment-7319";

/// The diagnostics a person asks of a shell first run confined, each on
/// its own `/proc`, while the daemon, its environment and the keeper's copy
/// of it stay out of reach (the token given through the environment, and
/// through a file beside the configuration).
#[tokio::test]
async fn diagnostics_run_confined_and_the_daemon_stays_out_of_reach() {
    const TEST: &str = "diagnostics_run_confined_and_the_daemon_stays_out_of_reach";
    if !landlock(TEST) {
        return;
    }
    if !Support::probe().isolates() {
        support::skip::skipped(
            TEST,
            Need::PidNamespaces,
            "the kernel lets the daemon make no namespaces here",
        );
        return;
    }
    let mut s = Sandboxed::start_with("", &[("PP_TEST_ENVIRONMENT_CANARY", TOKEN_IN_ENV)]).await;
    let mut commands = vec!["df -h", "ps aux", "free -m", "uptime", "ss -tln"];
    for optional in ["ip addr", "journalctl -n 20 --no-pager"] {
        let program = optional.split(' ').next().unwrap();
        if ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
            .iter()
            .any(|dir| Path::new(dir).join(program).exists())
        {
            commands.push(optional);
        }
    }
    for command in commands {
        let reply = s.run(command).await;
        assert!(reply.contains("[exit code: 0]"), "{command}: {reply}");
        assert!(!reply.contains("Permission denied"), "{command}: {reply}");
    }
    // Root's uid, none of its capabilities.
    let caps = s.run("grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status").await;
    assert_eq!(caps.matches("0000000000000000").count(), 5, "{caps}");
    let ps = s.run("ps -eo pid,comm").await;
    assert!(
        !ps.contains("passepartout\n"),
        "the daemon is not in the tool's /proc: {ps}"
    );
    // The namespace's pid 1 is a copy of the daemon that never ran
    // another program: its memory and environment stay closed too.
    for probe in [
        "cat /proc/1/environ",
        "head -c 64 /proc/1/mem",
        "cat /proc/$PPID/environ",
        // Its one descriptor, the pipe it reports the command's end through.
        "for fd in /proc/1/fd/*; do printf 'forged' > $fd || exit 1; done",
    ] {
        let reply = s.run(probe).await;
        assert!(!reply.contains(TOKEN_IN_ENV), "{probe}: {reply}");
        assert!(!reply.contains("[exit code: 0]"), "{probe}: {reply}");
    }
    let token = shown(&s.path("telegram.token"));
    let reply = s.run(&format!("cat {token}; cat /proc/1/root{token}")).await;
    assert!(reply.contains("Permission denied"), "{reply}");
    assert!(!s.model_saw(TOKEN_IN_ENV), "the daemon's environment reached the model");
    assert!(
        !s.model_saw("canary-beside-the-config"),
        "the token file reached the model"
    );
    s.daemon.terminate().await;
}
