//! MCP tool servers end to end: a real daemon, the real socket client, a
//! fake model, and real servers — the reference `server-everything` (Node)
//! and `mcp-server-time` (Python), installed by `.ci/install-mcp-servers`
//! when missing — plus a small fixture server for what they cannot be made
//! to do on demand (crash mid-call, hang, change its tools, tell its
//! environment). Each test waits on events (the servers' changes, the
//! socket's frames, the daemon's log lines), never on the clock.

use crate::support;

use std::path::Path;
use std::time::{Duration, Instant};

use passepartout::config::McpTrust;
use passepartout::safety::mcp::Phase;
use passepartout_gateway::ReplyKind;
use support::chat::Chat;
use support::fake_llm::{FakeLlm, Script};
use support::harness::{TestDaemon, WAIT};
use support::mcp::{SERVERS_WAIT, everything, filesystem, fixture, model, server, time, wait_for_servers};
use support::skip::Need;

/// A daemon with `servers` configured and the calling model.
async fn start(servers: Vec<passepartout::config::McpServerConfig>) -> (FakeLlm, TestDaemon) {
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let daemon = TestDaemon::start_with(&llm, |config| config.mcp.servers = servers, Vec::new()).await;
    (llm, daemon)
}

fn running(daemon: &TestDaemon) -> &passepartout::Daemon {
    daemon.daemon.as_ref().expect("running")
}

/// Waits until every server named is connected.
async fn connected(daemon: &TestDaemon, names: &[&str]) -> Vec<passepartout::safety::mcp::ServerStatus> {
    wait_for_servers(running(daemon), |servers| {
        names.iter().all(|name| server(servers, name).state == Phase::Connected)
    })
    .await
}

/// The answer (not a notice) to message `id`.
async fn answer(chat: &mut Chat, id: &str) -> String {
    loop {
        let (kind, text) = chat.reply(id).await;
        if kind == ReplyKind::Answer {
            return text;
        }
    }
}

#[tokio::test]
async fn a_reference_servers_tool_needs_approval_and_its_result_reaches_the_model() {
    let (llm, daemon) = start(vec![everything(McpTrust::Ask)]).await;
    let servers = connected(&daemon, &["everything"]).await;
    assert!(server(&servers, "everything").tools >= 10, "{servers:?}");

    let mut chat = Chat::open(&daemon, "alice").await;
    let listing = chat.answer("/tools", None).await;
    assert!(
        listing.lines().any(|l| l.starts_with("• everything__echo ")
            && l.contains("mcp:everything")
            && l.ends_with("needs approval")),
        "{listing}"
    );
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with("• current_time ") && l.ends_with("allowed")),
        "{listing}"
    );

    let original = chat
        .send(r#"call everything__echo {"message":"hello from the daemon"}"#)
        .await;
    let prompt = chat.prompt(&original).await;
    assert!(prompt.action.starts_with("everything__echo "), "{prompt:?}");
    assert!(prompt.action.contains("hello from the daemon"), "{prompt:?}");
    assert!(
        prompt.text.contains("\"everything\""),
        "the server is named: {prompt:?}"
    );
    // The schema offered is the server's own.
    let offered = &llm.requests()[0]["tools"];
    let echo = offered
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["function"]["name"] == "everything__echo")
        .expect("offered");
    assert_eq!(
        echo["function"]["parameters"]["properties"]["message"]["type"],
        "string"
    );

    chat.answer("yes", Some(&prompt.id)).await;
    let text = answer(&mut chat, &original).await;
    assert!(text.starts_with("final: [passepartout] "), "{text}");
    assert!(text.contains("Echo: hello from the daemon"), "{text}");
}

#[tokio::test]
async fn a_trusted_python_servers_tool_runs_without_approval() {
    let (_llm, daemon) = start(vec![time(McpTrust::Allow), everything(McpTrust::Ask)]).await;
    connected(&daemon, &["time", "everything"]).await;
    let mut chat = Chat::open(&daemon, "bob").await;
    let listing = chat.answer("/tools", None).await;
    assert!(
        listing
            .lines()
            .any(|l| l.starts_with("• time__get_current_time ") && l.ends_with("allowed")),
        "{listing}"
    );
    let id = chat
        .send(r#"call time__get_current_time {"timezone":"Europe/Paris"}"#)
        .await;
    let text = answer(&mut chat, &id).await;
    assert!(text.starts_with("done: "), "{text}");
    assert!(text.contains("Europe/Paris") && text.contains("datetime"), "{text}");
    // The untrusted server's tool still asks.
    let original = chat.send(r#"call everything__get-sum {"a":1,"b":2}"#).await;
    let prompt = chat.prompt(&original).await;
    assert!(prompt.action.starts_with("everything__get-sum"), "{prompt:?}");
}

#[tokio::test]
async fn a_changed_tool_list_is_offered_and_odd_answers_become_text() {
    let (_llm, daemon) = start(vec![fixture(10)]).await;
    let servers = connected(&daemon, &["fixture"]).await;
    let before = server(&servers, "fixture").tools;
    let mut chat = Chat::open(&daemon, "carol").await;
    let listing = chat.answer("/tools", None).await;
    assert!(listing.contains("fixture__bad_name "), "a dot is mapped: {listing}");

    let id = chat.send("call fixture__grow {}").await;
    assert_eq!(answer(&mut chat, &id).await, "done: grown");
    wait_for_servers(running(&daemon), |servers| {
        server(servers, "fixture").tools == before + 1
    })
    .await;
    let id = chat.send("call fixture__extra {}").await;
    assert_eq!(answer(&mut chat, &id).await, "done: extra ran");

    let id = chat.send("call fixture__picture {}").await;
    let text = answer(&mut chat, &id).await;
    assert_eq!(
        text, "done: a dot:\n[an image (image/png) from fixture__picture that this model cannot see]",
        "an image is a note for a model without vision"
    );
    let id = chat.send("call fixture__fail {}").await;
    let text = answer(&mut chat, &id).await;
    assert!(text.contains("no such city"), "the error reaches the model: {text}");
}

#[tokio::test]
async fn a_reference_servers_image_reaches_a_vision_model_as_an_image_part_in_that_turn_only() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request: &serde_json::Value| {
        let after_tool = request["messages"]
            .as_array()
            .is_some_and(|messages| messages.iter().any(|m| m["role"] == "tool"))
            && !support::fake_llm::last_user_text(request).starts_with("and");
        if after_tool {
            Script::Reply("seen".into())
        } else {
            model(request)
        }
    });
    let daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.mcp.servers = vec![everything(McpTrust::Allow)];
            config.llm.providers[0].vision = true;
        },
        Vec::new(),
    )
    .await;
    connected(&daemon, &["everything"]).await;
    let mut chat = Chat::open(&daemon, "erin").await;

    let id = chat.send("call everything__get-tiny-image {}").await;
    assert_eq!(answer(&mut chat, &id).await, "seen");
    let requests = llm.requests();
    let messages = requests.last().unwrap()["messages"].as_array().unwrap().clone();
    let result = messages
        .iter()
        .position(|m| m["role"] == "tool")
        .expect("a tool result");
    let text = messages[result]["content"].as_str().unwrap();
    assert!(text.starts_with("Here's the image you requested:"), "{text}");
    assert!(
        text.contains("[an image (image/png) from everything__get-tiny-image: shown after the results]"),
        "{text}"
    );
    let shown = &messages[result + 1];
    assert_eq!(shown["role"], "user", "{shown}");
    let url = shown["content"][1]["image_url"]["url"].as_str().unwrap();
    assert!(url.starts_with("data:image/png;base64,iVBORw0KGgo"), "{shown}");

    // The next turn reads the same result from the history, the image as a note.
    let id = chat.send("and what was it?").await;
    answer(&mut chat, &id).await;
    let requests = llm.requests();
    let later = requests.last().unwrap().to_string();
    assert!(!later.contains("image_url"), "{later}");
    assert!(
        later.contains("[an image (image/png) everything__get-tiny-image returned earlier; not shown again]"),
        "{later}"
    );
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_is_restarted() {
    let (_llm, daemon) = start(vec![fixture(10)]).await;
    connected(&daemon, &["fixture"]).await;
    let mut chat = Chat::open(&daemon, "dave").await;
    let id = chat.send("call fixture__crash {}").await;
    let text = answer(&mut chat, &id).await;
    assert!(text.contains("did not answer"), "the model hears of it: {text}");
    let servers = wait_for_servers(running(&daemon), |servers| {
        let fixture = server(servers, "fixture");
        fixture.restarts >= 1 && fixture.state == Phase::Connected
    })
    .await;
    assert!(server(&servers, "fixture").last_error.is_some(), "{servers:?}");
    let id = chat.send(r#"call fixture__echo {"message":"again"}"#).await;
    assert_eq!(answer(&mut chat, &id).await, "done: echo: again");
}

#[tokio::test]
async fn a_hung_call_is_cut_at_the_timeout_and_holds_up_no_other_conversation() {
    // Told apart from the other tests' servers by an argument of its own.
    let tag = format!("--tag=hung-{}", std::process::id());
    // The call's timeout is long enough for the other conversation to be
    // answered within it on a loaded machine: only the hung call reaches it.
    let mut server = fixture(8);
    server.args.push(tag.clone());
    let (_llm, mut daemon) = start(vec![server]).await;
    connected(&daemon, &["fixture"]).await;
    let mut hung = Chat::open(&daemon, "erin").await;
    let mut other = Chat::open(&daemon, "frank").await;
    let started = Instant::now();
    let id = hung.send("call fixture__hang {}").await;
    // Another conversation is answered while the call hangs.
    let echo = other.send("still there?").await;
    assert_eq!(answer(&mut other, &echo).await, "echo: still there?");
    let other_took = started.elapsed();
    assert!(other_took < Duration::from_secs(8), "not held up: {other_took:?}");
    let text = answer(&mut hung, &id).await;
    assert!(text.contains("timed out after 8 s"), "{text}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(8) && took < WAIT,
        "cut at the timeout: {took:?}"
    );
    // The server still sleeps in the call; stopping the daemon ends it.
    let server = process_with(&tag).expect("the hung server runs until the daemon stops");
    daemon.stop().await;
    let ended = tokio::task::spawn_blocking(move || {
        use rustix::event::{PollFd, PollFlags, Timespec, poll};
        let mut watched = [PollFd::new(&server, PollFlags::IN)];
        let limit = Timespec::try_from(WAIT).expect("a short wait");
        poll(&mut watched, Some(&limit)).expect("watch the server") == 1
    });
    assert!(ended.await.unwrap(), "a hung server does not outlive the daemon");
}

/// The running process that has `arg` among its arguments, as a descriptor
/// that turns readable when the process ends (its `pidfd`).
fn process_with(arg: &str) -> Option<std::os::fd::OwnedFd> {
    let dir = std::fs::read_dir("/proc").ok()?;
    dir.flatten().find_map(|entry| {
        let pid: i32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
        if !cmdline.split(|b| *b == 0).any(|part| part == arg.as_bytes()) {
            return None;
        }
        let pid = rustix::process::Pid::from_raw(pid)?;
        rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::NONBLOCK).ok()
    })
}

#[tokio::test]
async fn a_server_sees_only_its_own_environment_and_the_cli_shows_it() {
    use support::process::{Running, run_cli, socket_path, write_config};
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let server = fixture(10);
    let entry = format!(
        "[[mcp.servers]]\nname = \"fixture\"\ncommand = \"python3\"\nargs = [{:?}]\ntrust = \"allow\"\nenv = {{ GREETING = \"hi\" }}\n",
        server.args[0]
    );
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&entry);
    std::fs::write(&config, text).unwrap();

    // With no daemon, doctor starts the server itself, confined as the
    // daemon would, in a home that goes with it.
    let doctor = run_cli(&config, &["doctor"]).await;
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        doctor
            .lines()
            .any(|l| l.contains("mcp fixture") && l.contains("answers, 11 tools")),
        "{doctor}"
    );
    assert!(
        !dir.path().join("data/mcp/fixture").exists(),
        "doctor made no home in the data directory"
    );

    let secret = "sk-do-not-leak-4711";
    let daemon = Running::start_with(&config, &[("RUST_LOG", "info"), ("PP_TEST_API_KEY", secret)]).await;
    daemon.wait_for_log(&["mcp server connected", "fixture"]).await;
    daemon.wait_for_log(&["fixture server started"]).await;

    let mut chat = Chat::connect(&socket_path(dir.path()), "grace").await;
    let id = chat.send("call fixture__env {}").await;
    let env = answer(&mut chat, &id).await;
    assert!(env.contains("GREETING=hi"), "{env}");
    assert!(
        env.contains(&format!("PATH={}", passepartout::safety::mcp::MINIMAL_PATH)),
        "{env}"
    );
    let home = dir.path().join("data").join("mcp").join("fixture");
    assert!(
        env.contains(&format!("HOME={}", home.display())),
        "a home of its own: {env}"
    );
    // Writable (confined or not) and kept from one call to the next, as a
    // package runner's cache is.
    for expected in ["cached 1", "cached 2"] {
        let id = chat.send("call fixture__cache {}").await;
        let cached = answer(&mut chat, &id).await;
        assert!(cached.contains(expected), "{cached}");
    }
    assert!(!env.contains(secret) && !env.contains("PP_TEST_API_KEY"), "{env}");
    assert!(!env.contains("RUST_LOG"), "nothing of the daemon's: {env}");

    let tools = run_cli(&config, &["tools"]).await;
    let tools = String::from_utf8_lossy(&tools.stdout);
    assert!(
        tools
            .lines()
            .any(|l| l.starts_with("fixture__env ") && l.contains("mcp:fixture") && l.ends_with("allowed")),
        "{tools}"
    );
    assert!(
        tools
            .lines()
            .any(|l| l.starts_with("shell ") && l.ends_with("needs approval")),
        "{tools}"
    );
    let status = run_cli(&config, &["status"]).await;
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status
            .lines()
            .any(|l| l.starts_with("mcp      fixture") && l.contains("connected, 11 tools")),
        "{status}"
    );
    let doctor = run_cli(&config, &["doctor"]).await;
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(
        doctor
            .lines()
            .any(|l| l.contains("mcp fixture") && l.contains("connected, 11 tools")),
        "{doctor}"
    );
    let logs = daemon.logs.lock().unwrap().join("\n");
    assert!(!logs.contains(secret), "no secret in the log");
}

/// A free TCP port on 127.0.0.1, chosen by the system.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

#[tokio::test]
async fn a_server_at_a_url_is_reached_over_streamable_http() {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let port = free_port();
    let local = everything(McpTrust::Allow);
    let mut child = tokio::process::Command::new("node")
        .args([local.args[0].as_str(), "streamableHttp"])
        .env("PORT", port.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start server-everything over HTTP");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // Node's start on a loaded machine is a server's start like any other.
    let listening = tokio::time::timeout(SERVERS_WAIT, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if line.contains("listening on port") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(listening, Ok(true), "the server listens");
    // Keep reading what it writes, so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    let web = passepartout::config::McpServerConfig {
        name: "web".into(),
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        trust: McpTrust::Allow,
        ..Default::default()
    };
    let (_llm, daemon) = start(vec![web]).await;
    let servers = connected(&daemon, &["web"]).await;
    assert!(server(&servers, "web").tools >= 10, "{servers:?}");
    let mut chat = Chat::open(&daemon, "heidi").await;
    let id = chat.send(r#"call web__echo {"message":"over http"}"#).await;
    assert_eq!(answer(&mut chat, &id).await, "done: Echo: over http");
}

#[tokio::test]
async fn a_server_that_cannot_start_is_shown_failed_and_the_daemon_runs_on() {
    let missing = passepartout::config::McpServerConfig {
        name: "missing".into(),
        command: Some("/nonexistent/mcp-server".into()),
        ..Default::default()
    };
    let off = passepartout::config::McpServerConfig {
        enabled: false,
        ..fixture(10)
    };
    let (_llm, daemon) = start(vec![missing, off]).await;
    let servers = wait_for_servers(running(&daemon), |servers| {
        server(servers, "missing").state == Phase::Failed
    })
    .await;
    let error = server(&servers, "missing").last_error.clone().unwrap_or_default();
    assert!(error.contains("cannot start \"/nonexistent/mcp-server\""), "{error}");
    assert_eq!(server(&servers, "fixture").state, Phase::Disabled);
    let status = passepartout::operator::status::render(&running(&daemon).status());
    assert!(
        status.contains("mcp      missing      failed, 0 tools; last error: cannot start"),
        "{status}"
    );
    let mut chat = Chat::open(&daemon, "ivan").await;
    let id = chat.send("hello").await;
    assert_eq!(answer(&mut chat, &id).await, "echo: hello");
}

#[tokio::test]
async fn the_filesystem_servers_tools_read_inside_its_root_only() {
    let root = tempfile::tempdir().unwrap();
    let root_path = root.path().canonicalize().unwrap();
    std::fs::write(root_path.join("notes.txt"), "buy milk").unwrap();
    let (_llm, daemon) = start(vec![filesystem(&root_path)]).await;
    connected(&daemon, &["files"]).await;
    let mut chat = Chat::open(&daemon, "judy").await;
    let inside = serde_json::json!({ "path": root_path.join("notes.txt") });
    let id = chat.send(&format!("call files__read_text_file {inside}")).await;
    assert_eq!(answer(&mut chat, &id).await, "done: buy milk");
    let id = chat.send(r#"call files__read_text_file {"path":"/etc/passwd"}"#).await;
    let text = answer(&mut chat, &id).await;
    assert!(!text.contains("root:"), "{text}");
    assert!(
        text.to_lowercase().contains("denied"),
        "the server's refusal reaches the model: {text}"
    );
}

#[tokio::test]
async fn a_server_writes_its_own_home_and_cannot_read_another_servers_or_the_store() {
    if !passepartout::safety::sandbox::Support::probe().filesystem() {
        support::skip::skipped(
            "a_server_writes_its_own_home_and_cannot_read_another_servers_or_the_store",
            Need::Landlock,
            "this kernel offers no Landlock",
        );
        return;
    }
    let named = |name: &str| passepartout::config::McpServerConfig {
        name: name.into(),
        ..fixture(10)
    };
    let (_llm, daemon) = start(vec![named("alpha"), named("beta")]).await;
    connected(&daemon, &["alpha", "beta"]).await;
    let mut chat = Chat::open(&daemon, "kim").await;
    let id = chat.send("call alpha__cache {}").await;
    assert!(answer(&mut chat, &id).await.contains("cached 1"));
    let data = daemon.config.data_dir();
    let alphas = data.join("mcp/alpha/.cache/fixture/calls");
    assert!(alphas.exists(), "alpha wrote in its own home");
    for path in [alphas, data.join("store/db")] {
        let call = serde_json::json!({ "path": path });
        let id = chat.send(&format!("call beta__read {call}")).await;
        let text = answer(&mut chat, &id).await;
        assert!(text.contains("Permission denied"), "{}: {text}", path.display());
    }
}

#[tokio::test]
async fn the_filesystem_server_pointed_at_the_root_cannot_read_a_secret() {
    if !passepartout::safety::sandbox::Support::probe().filesystem() {
        support::skip::skipped(
            "the_filesystem_server_pointed_at_the_root_cannot_read_a_secret",
            Need::Landlock,
            "this kernel offers no Landlock",
        );
        return;
    }
    let canary = "canary-for-the-files-server-3302";
    let elsewhere = tempfile::tempdir().unwrap();
    let secret = elsewhere.path().canonicalize().unwrap().join("token");
    std::fs::write(&secret, canary).unwrap();
    let mut server = filesystem(Path::new("/"));
    // Its root is everything; only the sandbox stands in the way.
    server.allow_write.clear();
    let (llm, daemon) = start(vec![server]).await;
    connected(&daemon, &["files"]).await;
    let mut chat = Chat::open(&daemon, "judy").await;
    let call = serde_json::json!({ "path": secret });
    let id = chat.send(&format!("call files__read_text_file {call}")).await;
    let text = answer(&mut chat, &id).await;
    assert!(!text.contains(canary), "{text}");
    assert!(text.to_lowercase().contains("denied"), "{text}");
    assert!(
        text.contains("[[mcp.servers]] entry can add a folder"),
        "the refusal names the rule: {text}"
    );
    let id = chat
        .send(r#"call files__read_text_file {"path":"/etc/hostname"}"#)
        .await;
    let text = answer(&mut chat, &id).await;
    assert!(
        !text.to_lowercase().contains("denied"),
        "the system stays readable: {text}"
    );
    assert!(
        llm.requests()
            .iter()
            .all(|request| !request.to_string().contains(canary)),
        "the secret reached the model"
    );
}
