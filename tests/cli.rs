//! The command line, run as a real process: what a person types and sees.

use crate::support;

use support::chat::Chat;
use support::fake_llm::{FakeLlm, Script, Streamed};
use support::process::{Running, run_cli, socket_path, write_config};

fn stdout(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &std::process::Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[tokio::test]
async fn check_config_reports_every_problem_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.toml");
    std::fs::write(
        &path,
        "[pipeline]\nmax_depth = 0\nqueue_capacity = 0\n[socket]\nmax_clients = 0\n\
         [[llm.providers]]\nname = \"x\"\nbase_url = \"not a url\"\nmodel = \"m\"\n",
    )
    .unwrap();
    let output = run_cli(&path, &["check-config"]).await;
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    for key in ["max_depth", "queue_capacity", "max_clients", "base_url"] {
        assert!(text.contains(key), "{key} missing from: {text}");
    }
    assert!(text.contains("4 problem(s)"), "{text}");
}

#[tokio::test]
async fn check_config_accepts_the_example_file() {
    let example = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml");
    let output = run_cli(&example, &["check-config"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).starts_with("ok:"));
}

#[tokio::test]
async fn config_example_prints_the_documented_example_a_binary_alone_can_give() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.toml");
    let output = run_cli(&missing, &["config", "example"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let example =
        std::fs::read_to_string(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml")).unwrap();
    assert_eq!(stdout(&output), example);
    // What it prints is a file the daemon takes.
    let written = dir.path().join("from-example.toml");
    std::fs::write(&written, stdout(&output)).unwrap();
    let checked = run_cli(&written, &["check-config"]).await;
    assert!(checked.status.success(), "{}", stderr(&checked));

    let output = run_cli(&missing, &["config", "path"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let shown = stdout(&output);
    assert!(
        shown.contains("none.toml") && shown.contains("passepartout setup"),
        "{shown}"
    );
}

#[tokio::test]
async fn check_config_names_an_unknown_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("typo.toml");
    std::fs::write(&path, "[socket]\nenabeld = true\n").unwrap();
    let output = run_cli(&path, &["check-config"]).await;
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("enabeld"), "{}", stderr(&output));
}

/// Writes a config for a daemon in `dir` whose model is at `llm_url`, with
/// `more` appended, and returns its path.
fn config_with(dir: &std::path::Path, llm_url: &str, more: &str) -> std::path::PathBuf {
    let path = write_config(dir, llm_url);
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{text}{more}")).unwrap();
    path
}

#[tokio::test]
async fn check_config_names_a_misspelt_tool_or_argument_and_the_closest_one() {
    let cases = [
        (
            "[tools]\nrequire_approval = [\"shel\", \"write_file\", \"schedule\"]\n",
            "tools.require_approval[0]: there is no tool \"shel\"; did you mean \"shell\"?",
        ),
        (
            "[[skills.rules]]\ntool = \"shel\"\nargument = \"command\"\npattern = \"id\"\nverdict = \"deny\"\n",
            "skills.rules[0].tool: there is no tool \"shel\"; did you mean \"shell\"?",
        ),
        (
            "[[skills.rules]]\ntool = \"shell\"\nargument = \"cmd\"\npattern = \"id\"\nverdict = \"deny\"\n",
            "skills.rules[0].argument: tool \"shell\" has no argument \"cmd\"; did you mean \"command\"?",
        ),
        (
            "[[skills.allowlists]]\nconversation = \"socket:kids\"\ntools = [\"current_time\", \"shel\"]\n",
            "skills.allowlists[0].tools[1]: there is no tool \"shel\"; did you mean \"shell\"?",
        ),
    ];
    for (more, problem) in cases {
        let dir = tempfile::tempdir().unwrap();
        let config = config_with(dir.path(), "http://127.0.0.1:9/v1", more);
        let output = run_cli(&config, &["check-config"]).await;
        assert_eq!(output.status.code(), Some(2), "{more}: {}", stderr(&output));
        assert!(
            stderr(&output).contains(&format!("1 problem(s) in the configuration:\n  - {problem}\n")),
            "{more}: {}",
            stderr(&output)
        );
        assert!(!dir.path().join("data").exists(), "checking created nothing");
    }
    // With the rest of the file's problems, all at once.
    let dir = tempfile::tempdir().unwrap();
    let config = config_with(dir.path(), "http://127.0.0.1:9/v1", cases[0].0);
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("shutdown_grace_s = 5", "max_depth = 0");
    std::fs::write(&config, text).unwrap();
    let output = run_cli(&config, &["check-config"]).await;
    let text = stderr(&output);
    assert!(
        text.contains("2 problem(s)") && text.contains("max_depth") && text.contains("\"shel\""),
        "{text}"
    );
}

#[tokio::test]
async fn a_misspelt_tool_in_require_approval_stops_the_daemon_and_the_corrected_one_gates_the_shell() {
    let llm = FakeLlm::start().await;
    llm.set_responder(support::approvals::model);
    let dir = tempfile::tempdir().unwrap();
    let typo = "[tools]\nrequire_approval = [\"shel\", \"write_file\", \"schedule\"]\n";
    let config = config_with(dir.path(), &llm.base_url(), typo);
    let output = run_cli(&config, &["run"]).await;
    assert_eq!(
        output.status.code(),
        Some(2),
        "refused like a bad config: {}",
        stderr(&output)
    );
    assert!(
        stderr(&output).contains("tools.require_approval[0]: there is no tool \"shel\"; did you mean \"shell\"?"),
        "{}",
        stderr(&output)
    );
    assert!(!dir.path().join("data").exists(), "refused before anything was created");

    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("\"shel\"", "\"shell\"");
    std::fs::write(&config, text).unwrap();
    let output = run_cli(&config, &["check-config"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let daemon = Running::start(&config).await;
    let mut chat = Chat::connect(&socket_path(dir.path()), "typo").await;
    let original = chat.send("please run it").await;
    let prompt = chat.prompt(&original).await;
    assert_eq!(prompt.action, "shell: echo ran >> ran.txt");
    let ran = dir.path().join("data").join("workspace").join("ran.txt");
    assert!(!ran.exists(), "the shell waits for approval");
    daemon.terminate().await;
}

#[tokio::test]
async fn send_without_a_daemon_says_so_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "http://127.0.0.1:9/v1");
    let output = run_cli(&config, &["send", "hello"]).await;
    assert_eq!(output.status.code(), Some(3));
    assert!(stderr(&output).contains("not running"), "{}", stderr(&output));
    assert!(stderr(&output).contains("passepartout run"), "{}", stderr(&output));
}

#[tokio::test]
async fn send_prints_the_reply_and_status_reports_the_daemon() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;

    let output = run_cli(&config, &["send", "hello", "there"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(stdout(&output).trim(), "echo: hello there");

    let output = run_cli(&config, &["status", "--json"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let status: serde_json::Value = serde_json::from_str(&stdout(&output)).expect("status is JSON");
    assert_eq!(status["intake"]["accepted"], 1);

    let output = run_cli(&config, &["status"]).await;
    assert!(stdout(&output).contains("gateway  socket"), "{}", stdout(&output));

    // The daemon's own notices print rendered: no backtick, no `**`.
    for command in ["/approvals", "/rules", "/tools", "/nope_*x*"] {
        let output = run_cli(&config, &["send", command]).await;
        assert!(output.status.success(), "{}", stderr(&output));
        let printed = stdout(&output);
        assert!(
            !printed.contains('`') && !printed.contains("**"),
            "{command}: {printed}"
        );
    }
    let output = run_cli(&config, &["send", "/nope_*x*"]).await;
    assert!(
        stdout(&output).contains("I don't know the command /nope_*x*."),
        "{}",
        stdout(&output)
    );

    let exit = daemon.terminate().await;
    assert!(exit.success(), "SIGTERM exits 0: {exit:?}");
    assert!(!socket_path(dir.path()).exists(), "socket removed");
}

#[tokio::test]
async fn send_stream_prints_the_reply_as_it_is_written_and_once() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| {
        Script::Stream(
            Streamed::text(&["It ", "is ", "**four** ", "o'clock."]).spaced(std::time::Duration::from_millis(20)),
        )
    });
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;

    let output = run_cli(&config, &["send", "--stream", "what time is it?"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert_eq!(
        stdout(&output),
        "It is four o'clock.\n",
        "as written, rendered, and not again"
    );
    // Without it, the finished reply, rendered alike.
    let output = run_cli(&config, &["send", "and now?"]).await;
    assert_eq!(stdout(&output), "It is four o'clock.\n");
    daemon.terminate().await;
}

#[tokio::test]
async fn send_fails_clearly_when_no_model_answers() {
    let llm = FakeLlm::start().await;
    let url = llm.base_url();
    llm.shutdown();
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &url);
    let daemon = Running::start(&config).await;
    let output = run_cli(&config, &["send", "hello"]).await;
    assert_eq!(output.status.code(), Some(1));
    let text = stderr(&output);
    assert!(text.contains(&url), "{text}");
    // What to do, with what the installed binary has: the setup command
    // and the file it changes, not a file of the source tree.
    assert!(text.contains("passepartout setup --only model"), "{text}");
    assert!(text.contains(&config.display().to_string()), "{text}");
    assert!(!text.contains("config.example.toml"), "{text}");
    daemon.terminate().await;
}

#[tokio::test]
async fn doctor_reports_each_part_on_its_own_line() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let output = run_cli(&config, &["doctor"]).await;
    let text = stdout(&output);
    assert!(output.status.success(), "nothing failed: {text}");
    assert!(
        text.lines().any(|l| l.starts_with("ok") && l.contains("config")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("degraded") && l.contains("socket") && l.contains("passepartout run")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("ok") && l.contains("store")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("ok") && l.contains("model fake")),
        "{text}"
    );
    let line_of = |part: &str| text.lines().position(|l| l.contains(part)).unwrap();
    assert!(
        line_of("config") < line_of("socket")
            && line_of("socket") < line_of("store")
            && line_of("store") < line_of("model fake"),
        "config, the socket, the store, then the models: {text}"
    );

    llm.shutdown();
    let daemon = Running::start(&config).await;
    let output = run_cli(&config, &["doctor"]).await;
    let text = stdout(&output);
    assert_eq!(output.status.code(), Some(1), "a failed provider fails doctor: {text}");
    assert!(
        text.lines().any(|l| l.starts_with("ok") && l.contains("socket")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("failed") && l.contains("model fake") && l.contains("base_url")),
        "{text}"
    );
    daemon.terminate().await;
}

/// A gateway's folder beside the store, as a backup copies it: one file.
struct KeysFolder;

impl passepartout::store::KeptBeside for KeysFolder {
    fn name(&self) -> &'static str {
        "matrix"
    }

    fn snapshot(&self, into: &std::path::Path) -> std::io::Result<bool> {
        std::fs::write(into.join("session.json"), "the backed-up session").map(|()| true)
    }
}

#[tokio::test]
async fn restore_rebuilds_the_store_from_the_newest_backup_and_keeps_the_old_one() {
    use passepartout::config::StoreConfig;
    use passepartout::store::{KeptBeside, Store};

    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;
    assert!(run_cli(&config, &["send", "remember me"]).await.status.success());
    let output = run_cli(&config, &["restore"]).await;
    assert_eq!(output.status.code(), Some(1), "refused while the daemon runs");
    assert!(stderr(&output).contains("stop it"), "{}", stderr(&output));
    daemon.terminate().await;

    let store_dir = dir.path().join("data").join("store");
    let backups = dir.path().join("data").join("backups");
    let history_before = {
        let store = Store::open(&store_dir, &StoreConfig::default()).unwrap();
        let beside: Vec<std::sync::Arc<dyn KeptBeside>> = vec![std::sync::Arc::new(KeysFolder)];
        store
            .backup_with(&backups, 3, &passepartout::foundation::clock::Clock::start(), &beside)
            .unwrap();
        store.size_on_disk().unwrap()
    };
    // The gateway's folder changed since: restore puts the copy back.
    let keys = dir.path().join("data").join("matrix");
    std::fs::create_dir_all(&keys).unwrap();
    std::fs::write(keys.join("session.json"), "a newer session").unwrap();
    assert!(history_before > 0);
    std::fs::write(store_dir.join("db"), b"garbage: the store no longer opens").unwrap();
    assert!(
        Store::open(&store_dir, &StoreConfig::default()).is_err(),
        "the damage is real"
    );

    let output = run_cli(&config, &["restore"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(
        stdout(&output).contains("previous store is kept"),
        "{}",
        stdout(&output)
    );
    let kept = std::fs::read_dir(dir.path().join("data"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("store.before-restore-"));
    assert!(kept, "the damaged store is kept aside");
    assert_eq!(
        std::fs::read_to_string(keys.join("session.json")).unwrap(),
        "the backed-up session",
        "{}",
        stdout(&output)
    );
    let keys_kept = std::fs::read_dir(dir.path().join("data"))
        .unwrap()
        .filter_map(|e| e.ok())
        .any(|e| e.file_name().to_string_lossy().starts_with("matrix.before-restore-"));
    assert!(keys_kept, "the folder that was there is kept aside");

    let daemon = Running::start(&config).await;
    let output = run_cli(&config, &["send", "what did I ask you?"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let last = llm.requests().pop().unwrap();
    let users: Vec<_> = last["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        users,
        ["remember me", "what did I ask you?"],
        "history came back from the backup"
    );
    daemon.terminate().await;
}

#[tokio::test]
async fn the_api_key_is_sent_but_never_logged() {
    const KEY: &str = "sk-test-3f9a61c2d4e8";
    let llm = FakeLlm::start().await;
    llm.require_api_key(KEY);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let text = std::fs::read_to_string(&config).unwrap().replace(
        "model = \"fake-model\"",
        "model = \"fake-model\"\napi_key_env = \"PP_TEST_MODEL_KEY\"",
    );
    std::fs::write(&config, text).unwrap();
    // The most verbose logging there is, our crates and the HTTP stack alike.
    let daemon = Running::start_with(&config, &[("RUST_LOG", "trace"), ("PP_TEST_MODEL_KEY", KEY)]).await;
    let output = run_cli(&config, &["send", "hello"]).await;
    assert!(output.status.success(), "the key was sent: {}", stderr(&output));
    let logs = daemon.logs.clone();
    daemon.terminate().await;
    let logs = logs.lock().unwrap();
    assert!(logs.len() > 20, "trace logging was on: {} lines", logs.len());
    let leaks: Vec<_> = logs.iter().filter(|line| line.contains(&KEY[3..])).collect();
    assert!(leaks.is_empty(), "the key appears in the log: {leaks:?}");
}

#[tokio::test]
async fn doctor_makes_the_daemon_recheck_a_provider_whose_key_was_refused() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;
    llm.push(Script::status(401));
    let output = run_cli(&config, &["send", "hello"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("refused our credentials"),
        "{}",
        stderr(&output)
    );

    let state = |output: std::process::Output| {
        let status: serde_json::Value = serde_json::from_slice(&output.stdout).expect("status --json");
        status["providers"][0]["state"].as_str().unwrap_or_default().to_owned()
    };
    assert_eq!(state(run_cli(&config, &["status", "--json"]).await), "unhealthy");
    let output = run_cli(&config, &["send", "hello again"]).await;
    assert_eq!(output.status.code(), Some(1), "skipped while unhealthy");
    assert_eq!(llm.requests().len(), 1, "an unhealthy provider is not asked");

    // The key works again (the fake now accepts any): doctor finds it healthy.
    let output = run_cli(&config, &["doctor"]).await;
    let text = stdout(&output);
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok") && l.contains("model fake") && l.contains("answers the daemon")),
        "{text}"
    );
    assert_eq!(state(run_cli(&config, &["status", "--json"]).await), "ok");
    let output = run_cli(&config, &["send", "third time"]).await;
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    daemon.terminate().await;
}

#[tokio::test]
async fn status_shows_a_provider_that_refused_the_connection_as_unreachable() {
    // Nothing listens there: every connection is refused.
    let base_url = format!("http://{}/v1", crate::support::closed::address());
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &base_url);
    let daemon = Running::start(&config).await;
    let output = run_cli(&config, &["send", "hello"]).await;
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));

    let output = run_cli(&config, &["status", "--json"]).await;
    let status: serde_json::Value = serde_json::from_slice(&output.stdout).expect("status --json");
    assert_eq!(status["providers"][0]["state"], "unreachable", "{status}");
    assert!(status["providers"][0]["last_error"].as_str().is_some(), "{status}");
    let text = stdout(&run_cli(&config, &["status"]).await);
    assert!(text.contains("unreachable at the last call"), "{text}");
    daemon.terminate().await;
}

#[tokio::test]
async fn send_refuses_an_empty_message_at_once() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;
    for empty in ["", "  \n\t"] {
        let output = tokio::time::timeout(std::time::Duration::from_secs(30), run_cli(&config, &["send", empty]))
            .await
            .expect("refused at once, not after waiting for a reply");
        assert_eq!(output.status.code(), Some(2), "{output:?}");
        assert!(stderr(&output).contains("the message is empty"), "{}", stderr(&output));
        assert!(output.stdout.is_empty(), "{output:?}");
    }
    assert!(llm.requests().is_empty(), "nothing reached the model");
    daemon.terminate().await;
}

#[tokio::test]
async fn send_waits_for_an_approval_as_long_as_it_stays_open() {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

    let llm = FakeLlm::start().await;
    llm.set_responder(support::approvals::model);
    let dir = tempfile::tempdir().unwrap();
    let config = support::process::write_config_asking_for_shell(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;

    // Without --timeout-s, send waits for the approval as long as it stays open.
    let mut send = tokio::process::Command::new(support::process::binary())
        .arg("--config")
        .arg(&config)
        .args(["send", "please run it"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(send.stderr.take().unwrap()).lines();
    let mut token = None;
    let waiting = tokio::time::timeout(support::harness::WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.split("approvals approve ").nth(1) {
                token = rest.split_whitespace().next().map(str::to_owned);
            }
            if line.contains("waiting up to 900 s") {
                return line;
            }
        }
        panic!("send ended without saying it waits for the approval");
    })
    .await
    .expect("send says it waits for the approval");
    assert!(waiting.contains("approval"), "{waiting}");
    let token = token.expect("the prompt names its token");

    let decided = run_cli(&config, &["approvals", "approve", &token]).await;
    assert!(decided.status.success(), "{decided:?}");
    let status = tokio::time::timeout(support::harness::WAIT, send.wait())
        .await
        .expect("send ends once the approved turn answers")
        .unwrap();
    let mut out = String::new();
    send.stdout.take().unwrap().read_to_string(&mut out).await.unwrap();
    assert!(status.success(), "{status:?}: {out}");
    assert!(out.contains("final:"), "{out}");
    daemon.terminate().await;
}

#[tokio::test]
async fn ctrl_c_in_chat_stops_its_in_process_daemon_cleanly() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let mut chat = tokio::process::Command::new(support::process::binary())
        .arg("--config")
        .arg(&config)
        .arg("chat")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut errors = BufReader::new(chat.stderr.take().unwrap()).lines();
    let mut replies = BufReader::new(chat.stdout.take().unwrap()).lines();
    let wait = support::harness::WAIT;
    tokio::time::timeout(wait, async {
        while let Some(line) = errors.next_line().await.unwrap() {
            if line.starts_with("chatting in") {
                return;
            }
        }
        panic!("chat ended before it was ready");
    })
    .await
    .expect("chat ready");
    let mut input = chat.stdin.take().unwrap();
    input.write_all(b"hello\n").await.unwrap();
    let reply = tokio::time::timeout(wait, replies.next_line())
        .await
        .expect("a reply in time")
        .unwrap();
    assert!(reply.is_some(), "answered before the interrupt");

    let pid = chat.id().expect("running") as i32;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::INT,
    )
    .expect("send SIGINT");
    let status = tokio::time::timeout(wait, chat.wait())
        .await
        .expect("chat ends after Ctrl-C")
        .unwrap();
    let mut rest = Vec::new();
    while let Ok(Some(line)) = tokio::time::timeout(wait, errors.next_line()).await.unwrap_or(Ok(None)) {
        rest.push(line);
    }
    assert_eq!(status.code(), Some(130), "stopped, not killed: {status:?} {rest:?}");
    assert!(rest.iter().any(|l| l.contains("stopping the daemon")), "{rest:?}");
    drop(input);
}

#[tokio::test]
async fn send_prints_markdown_as_plain_readable_text_when_piped() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let daemon = Running::start(&config).await;

    // The fake model echoes the message: Markdown comes back.
    let output = run_cli(&config, &["send", "**bold**, `code` and [docs](https://e.com)"]).await;
    assert!(output.status.success(), "{}", stderr(&output));
    let printed = stdout(&output);
    assert_eq!(printed.trim_end(), "echo: bold, code and docs (https://e.com)");
    assert!(
        !printed.contains('\u{1b}'),
        "no escape codes when stdout is not a terminal"
    );
    assert!(daemon.terminate().await.success());
}

#[tokio::test]
async fn completions_a_manual_page_and_the_version_with_its_commit_are_printed() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), "http://127.0.0.1:9");
    for (shell, mark) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef passepartout"),
        ("fish", "complete -c passepartout"),
    ] {
        let output = run_cli(&config, &["completions", shell]).await;
        assert!(output.status.success(), "{shell}: {}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains(mark), "{shell}: {script}");
        assert!(script.contains("check-config"), "every command is there: {shell}");
    }
    let output = run_cli(&config, &["completions", "tcsh"]).await;
    assert_eq!(output.status.code(), Some(2), "an unknown shell is refused");

    let output = run_cli(&config, &["man"]).await;
    assert!(output.status.success());
    let page = stdout(&output);
    assert!(page.contains(".TH passepartout 1"), "{page}");
    assert!(page.contains("check\\-config"), "the commands are listed: {page}");

    let output = run_cli(&config, &["--version"]).await;
    let version = stdout(&output);
    assert!(
        version.starts_with(&format!("passepartout {}", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    let head = std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output();
    if let Some(head) = head.ok().filter(|h| h.status.success()) {
        let commit = String::from_utf8_lossy(&head.stdout).trim().to_owned();
        assert!(
            version.contains(&format!("(commit {commit})")),
            "{version} built at {commit}"
        );
    }
}

#[tokio::test]
async fn log_format_json_writes_one_json_object_a_line() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    // An unknown variable: its warning comes before logging starts, and is
    // a JSON line too.
    let env = [
        ("PASSEPARTOUT_LOG__FORMAT", "json"),
        ("PASSEPARTOUT_NO_SUCH_THING", "1"),
    ];
    let daemon = Running::start_with(&config, &env).await;
    let ready = daemon.wait_for_log(&["passepartout ready"]).await;
    let line: serde_json::Value = serde_json::from_str(&ready).expect("a JSON line");
    assert_eq!(line["level"], "INFO", "{line}");
    assert!(
        line["fields"]["message"]
            .as_str()
            .unwrap()
            .contains("passepartout ready"),
        "{line}"
    );
    let warned = daemon.wait_for_log(&["PASSEPARTOUT_NO_SUCH_THING"]).await;
    let warned: serde_json::Value = serde_json::from_str(&warned).expect("a JSON line");
    assert_eq!(warned["level"], "WARN", "{warned}");
    let logs = daemon.logs.clone();
    assert!(daemon.terminate().await.success());
    for logged in logs.lock().unwrap().iter() {
        let parsed = serde_json::from_str::<serde_json::Value>(logged);
        assert!(parsed.is_ok_and(|line| line.is_object()), "not a JSON object: {logged}");
    }
}

#[tokio::test]
async fn under_systemd_the_daemon_says_ready_feeds_the_watchdog_and_says_it_stops() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let path = dir.path().join("notify");
    let manager = tokio::net::UnixDatagram::bind(&path).unwrap();
    let socket = path.display().to_string();
    let daemon = Running::start_with(&config, &[("NOTIFY_SOCKET", &socket), ("WATCHDOG_USEC", "200000")]).await;
    let mut buffer = vec![0u8; 512];
    let mut next = async || {
        let n = tokio::time::timeout(support::harness::WAIT, manager.recv(&mut buffer))
            .await
            .expect("a notification in time")
            .unwrap();
        String::from_utf8_lossy(&buffer[..n]).into_owned()
    };
    assert_eq!(next().await, "READY=1\nSTATUS=ready");
    assert_eq!(next().await, "WATCHDOG=1");
    assert_eq!(next().await, "WATCHDOG=1", "fed again and again");
    assert!(daemon.terminate().await.success());
    let mut last = next().await;
    while last == "WATCHDOG=1" {
        last = next().await;
    }
    assert_eq!(last, "STOPPING=1\nSTATUS=stopping");
}

#[tokio::test]
async fn a_daemon_that_cannot_start_says_why_once_as_text_or_as_one_json_line() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    // The data folder is held by a first daemon: the second cannot start.
    let first = Running::start(&config).await;
    for (format, env) in [("text", vec![]), ("json", vec![("PASSEPARTOUT_LOG__FORMAT", "json")])] {
        let output = tokio::process::Command::new(support::process::binary())
            .args(["--config", config.to_str().unwrap(), "run"])
            .env("RUST_LOG", "info")
            .envs(env)
            .stdin(std::process::Stdio::null())
            .output();
        let output = tokio::time::timeout(support::harness::WAIT, output)
            .await
            .expect("the second daemon gives up")
            .expect("it runs");
        assert_eq!(output.status.code(), Some(1), "{format}: {}", stderr(&output));
        let text = stderr(&output);
        let data = dir.path().join("data").display().to_string();
        let told: Vec<&str> = text.lines().filter(|line| line.contains(&data)).collect();
        assert_eq!(told.len(), 1, "{format}: said once: {text}");
        if format == "json" {
            for line in text.lines() {
                let parsed = serde_json::from_str::<serde_json::Value>(line);
                assert!(parsed.is_ok_and(|line| line.is_object()), "not a JSON object: {line}");
            }
        }
    }
    assert!(first.terminate().await.success());
}
