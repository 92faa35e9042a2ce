//! The client commands against a running daemon, as a person types them,
//! whatever the configuration file says now: a typo in the file does not
//! lock the terminal out, `--socket` finds a daemon anywhere, `send` keeps
//! to `--timeout-s` even while an approval waits, reads `-` from standard
//! input, and refuses an oversized message in words.

use crate::support;

use std::path::Path;
use std::process::{Output, Stdio};

use support::fake_llm::FakeLlm;
use support::harness::WAIT;
use support::process::{Running, binary, run_cli, write_config};
use tokio::io::AsyncWriteExt;

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A daemon whose shell tool needs approval, on a file that is then broken
/// by a typo (an unknown key and a wrong value) while the daemon runs on.
async fn daemon_then_typo(dir: &Path, llm: &FakeLlm) -> (std::path::PathBuf, Running) {
    let config = support::process::write_config_asking_for_shell(dir, &llm.base_url());
    let daemon = Running::start(&config).await;
    let mut text = std::fs::read_to_string(&config).unwrap();
    text += "[pipeline_typo]\nmax_depth = 3\n[approvals]\nexpire_after_s = \"soon\"\n";
    std::fs::write(&config, text).unwrap();
    (config, daemon)
}

/// Runs the binary with `args` (no `--config` added) and `input` on stdin.
async fn run_with_input(args: &[&str], input: &[u8]) -> Output {
    let mut child = tokio::process::Command::new(binary())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    // Written beside the wait: a client that refuses early stops reading.
    let writer = tokio::spawn(async move {
        let _ = stdin.write_all(&input).await;
    });
    let output = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .expect("the command finishes")
        .unwrap();
    writer.await.unwrap();
    output
}

/// The token of the first approval `approvals --json` lists, once one is
/// listed (within [`WAIT`]).
async fn first_waiting(config: &Path) -> String {
    let until = tokio::time::Instant::now() + WAIT;
    let mut polled = tokio::time::interval(std::time::Duration::from_millis(50));
    loop {
        let listed = run_cli(config, &["approvals", "--json"]).await;
        assert!(listed.status.success(), "{}", stderr(&listed));
        let listing: serde_json::Value = serde_json::from_str(&stdout(&listed)).expect("JSON");
        if let Some(token) = listing["approvals"][0]["token"].as_str() {
            return token.to_owned();
        }
        assert!(tokio::time::Instant::now() < until, "no approval waits: {listing}");
        polled.tick().await;
    }
}

#[tokio::test]
async fn a_typo_in_the_file_does_not_lock_the_client_commands_out() {
    let llm = FakeLlm::start().await;
    llm.set_responder(support::approvals::model);
    let dir = tempfile::tempdir().unwrap();
    let (config, daemon) = daemon_then_typo(dir.path(), &llm).await;

    let checked = run_cli(&config, &["check-config"]).await;
    assert_eq!(checked.status.code(), Some(2), "the file has problems: {checked:?}");

    let status = run_cli(&config, &["status"]).await;
    assert!(status.status.success(), "{}", stderr(&status));
    assert!(stdout(&status).contains("gateway  socket"), "{}", stdout(&status));
    let warned = stderr(&status);
    assert_eq!(warned.matches("has problems").count(), 1, "said once: {warned}");
    assert!(warned.contains("passepartout check-config"), "{warned}");

    // An action waits for approval; it is listed and approved from the
    // terminal through the broken file.
    let send = run_cli(&config, &["send", "--timeout-s", "1", "please run it"]).await;
    assert_eq!(
        send.status.code(),
        Some(4),
        "timed out, the approval waiting or still being made: {send:?}"
    );
    // The send's second may run out before the approval is made: it is
    // waited for here.
    let token = first_waiting(&config).await;
    let approved = run_cli(&config, &["approvals", "approve", &token]).await;
    assert!(approved.status.success(), "{}", stderr(&approved));
    let ran = dir.path().join("data").join("workspace").join("ran.txt");
    let until = tokio::time::Instant::now() + WAIT;
    let mut polled = tokio::time::interval(std::time::Duration::from_millis(50));
    while !ran.exists() {
        assert!(tokio::time::Instant::now() < until, "the approved command ran");
        polled.tick().await;
    }

    // Doctor names the file's problems and still reaches the daemon.
    let doctor = run_cli(&config, &["doctor"]).await;
    assert_eq!(doctor.status.code(), Some(1), "{doctor:?}");
    let report = stdout(&doctor);
    assert!(
        report.contains("config") && report.contains("pipeline_typo"),
        "{report}"
    );
    assert!(report.contains("passepartout check-config"), "{report}");
    assert!(
        report
            .lines()
            .any(|line| line.contains("socket") && line.contains("ok")),
        "{report}"
    );

    // Only the commands that need a file that loads refuse it.
    let reload = run_cli(&config, &["reload"]).await;
    assert_eq!(reload.status.code(), Some(2), "{reload:?}");
    assert!(stderr(&reload).contains("not reloaded"), "{}", stderr(&reload));
    daemon.terminate().await;
}

#[tokio::test]
async fn chat_on_a_broken_file_with_no_daemon_says_why_it_cannot_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "http://127.0.0.1:9/v1");
    let mut text = std::fs::read_to_string(&config).unwrap();
    text += "[pipeline_typo]\n";
    std::fs::write(&config, text).unwrap();
    let output = run_cli(&config, &["chat"]).await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let said = stderr(&output);
    assert!(said.contains("not running") && said.contains("pipeline_typo"), "{said}");
    assert!(!dir.path().join("data").join("store").exists(), "no daemon was started");
}

#[tokio::test]
async fn socket_names_the_daemon_whatever_the_file_says() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;
    let socket = support::process::socket_path(dir.path());
    let elsewhere = tempfile::tempdir().unwrap();
    let missing = elsewhere.path().join("none.toml");
    let socket_arg = socket.to_str().unwrap();
    let output = run_with_input(
        &[
            "--config",
            missing.to_str().unwrap(),
            "--socket",
            socket_arg,
            "send",
            "hi",
        ],
        b"",
    )
    .await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stdout(&output).trim(), "echo: hi");
    assert!(stderr(&output).contains("has problems"), "{}", stderr(&output));

    let output = run_with_input(&["--socket", socket_arg, "status", "--json"], b"").await;
    assert!(output.status.success(), "{output:?}");
    daemon.terminate().await;
}

#[tokio::test]
async fn send_reads_the_message_from_standard_input() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;
    let config_arg = config.to_str().unwrap();
    let output = run_with_input(&["--config", config_arg, "send", "-"], b"two\nlines\n").await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(stdout(&output), "echo: two\nlines\n");

    let output = run_with_input(&["--config", config_arg, "send", "-"], b"\xff\xfe").await;
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(stderr(&output).contains("not UTF-8"), "{}", stderr(&output));
    daemon.terminate().await;
}

#[tokio::test]
async fn an_oversized_message_is_refused_in_words_with_its_own_exit_code() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;
    let config_arg = config.to_str().unwrap();
    let huge = vec![b'a'; 5 * 1024 * 1024];
    let output = run_with_input(&["--config", config_arg, "send", "-"], &huge).await;
    assert_eq!(output.status.code(), Some(5), "{output:?}");
    let said = stderr(&output);
    assert!(
        said.contains("messages are limited to 16 KB; this one is 5 MB"),
        "{said}"
    );
    assert!(!said.contains("unreachable") && !said.contains("not running"), "{said}");

    // Just over the limit, as words on the command line.
    let over = "b".repeat(16 * 1024 + 1);
    let output = run_cli(&config, &["send", &over]).await;
    assert_eq!(output.status.code(), Some(5), "{output:?}");
    assert!(
        stderr(&output).contains("messages are limited to 16 KB; this one is 17 KB"),
        "{}",
        stderr(&output)
    );
    assert!(llm.requests().is_empty(), "nothing reached the model");

    // The daemon took nothing and still answers.
    let output = run_cli(&config, &["send", "still there?"]).await;
    assert!(output.status.success(), "{output:?}");
    daemon.terminate().await;
}

#[tokio::test]
async fn send_timeout_bounds_the_wait_for_an_approval() {
    let llm = FakeLlm::start().await;
    llm.set_responder(support::approvals::model);
    let dir = tempfile::tempdir().unwrap();
    let config = support::process::write_config_asking_for_shell(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;

    // Bounded by `run_cli`'s own limit: the approval (900 s) does not
    // extend it. How long making the approval takes depends on the
    // machine's load: a bound that ran out first is doubled, in a chat of
    // its own (the first waits there for its decision), until the approval
    // came within it.
    let mut bound_s = 2;
    let said = loop {
        let chat = format!("bounded-{bound_s}");
        let bound = bound_s.to_string();
        let args = ["send", "--chat", &chat, "--timeout-s", &bound, "please run it"];
        let output = run_cli(&config, &args).await;
        assert_eq!(output.status.code(), Some(4), "{output:?}");
        let said = stderr(&output);
        if !said.contains("no reply within") || bound_s >= 16 {
            break said;
        }
        bound_s *= 2;
    };
    let listed = run_cli(&config, &["approvals", "--json"]).await;
    let listing: serde_json::Value = serde_json::from_str(&stdout(&listed)).unwrap();
    let tokens: Vec<&str> = listing["approvals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|approval| approval["token"].as_str())
        .collect();
    assert!(
        tokens
            .iter()
            .any(|token| said.contains(&format!("approval {token} is still open"))),
        "names the approval still open ({tokens:?}): {said}"
    );
    assert!(!said.contains("waiting up to"), "no longer wait promised: {said}");
    daemon.terminate().await;
}
