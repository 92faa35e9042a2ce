//! Background loops end to end: a real daemon runs its built-in heartbeat,
//! and the loops are visible through the socket (`loops` frame), the CLI
//! (`passepartout loops`), the `/loops` chat command and the status document.

use crate::support;

use std::time::Duration;

use passepartout::config::{LoopEntry, LoopTrigger};
use passepartout::engine::loops::status::{LoopStatus, State};
use passepartout_gateway::ReplyKind;
use passepartout_socket::{Client, ServerFrame};
use serde_json::json;
use support::fake_llm::{FakeLlm, Script};
use support::harness::{TestDaemon, WAIT, ask};
use support::process::{Running, run_cli, write_config};

/// How often a test looks again while it waits for a loop to move on.
const POLL: Duration = Duration::from_millis(50);

async fn loops(client: &mut Client) -> Vec<LoopStatus> {
    let listing = tokio::time::timeout(
        WAIT,
        client.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Loops),
    )
    .await
    .expect("loops in time")
    .expect("loops");
    serde_json::from_value(listing).expect("a list of loop statuses")
}

/// Polls the loop list until `done` holds for the heartbeat, within [`WAIT`].
async fn heartbeat_until(client: &mut Client, done: impl Fn(&LoopStatus) -> bool) -> LoopStatus {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listing = loops(client).await;
        if let Some(heartbeat) = listing.iter().find(|s| s.name.as_str() == "heartbeat")
            && done(heartbeat)
        {
            return heartbeat.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the heartbeat did not get there within {WAIT:?}: {listing:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test]
async fn the_heartbeat_runs_and_is_listed() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start_with(&llm, |config| config.loops.heartbeat_s = 1, Vec::new()).await;
    let mut client = daemon.client("ops").await;
    let first = heartbeat_until(&mut client, |s| s.iterations >= 1).await;
    assert_eq!(first.handler.as_deref(), Some("heartbeat"));
    assert_eq!(first.consecutive_errors, 0, "{first:?}");
    assert_eq!(first.sleep_ms, 1000);
    let later = heartbeat_until(&mut client, |s| s.iterations > first.iterations).await;
    assert!(matches!(later.state, State::Sleeping | State::Processing), "{later:?}");
    assert!(later.last_error.is_none(), "{later:?}");

    let status = tokio::time::timeout(
        WAIT,
        client.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status["loops"]["running"], 1, "{status}");
    assert!(status["loops"]["heartbeats"].as_u64().unwrap() >= 2, "{status}");
    assert_eq!(status["loops"]["failing"], serde_json::json!([]), "{status}");
    daemon.stop().await;
}

#[tokio::test]
async fn heartbeat_s_zero_runs_no_heartbeat() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start_with(&llm, |config| config.loops.heartbeat_s = 0, Vec::new()).await;
    let mut client = daemon.client("ops").await;
    assert_eq!(loops(&mut client).await, Vec::new());
    let status = tokio::time::timeout(
        WAIT,
        client.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(status["loops"]["running"], 0, "{status}");
    daemon.stop().await;
}

#[tokio::test]
async fn the_heartbeat_writes_the_periodic_backups() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.loops.heartbeat_s = 1;
            config.store.backup_every_s = 1;
        },
        Vec::new(),
    )
    .await;
    let backups = daemon.config.backup_dir();
    let deadline = tokio::time::Instant::now() + WAIT;
    while std::fs::read_dir(&backups).map_or(0, |entries| entries.count()) == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no backup in {} within {WAIT:?}",
            backups.display()
        );
        tokio::time::sleep(POLL).await;
    }
    daemon.stop().await;
}

#[tokio::test]
async fn slash_loops_in_chat_lists_the_heartbeat() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start_with(&llm, |config| config.loops.heartbeat_s = 1, Vec::new()).await;
    let mut client = daemon.client("ops").await;
    heartbeat_until(&mut client, |s| s.iterations >= 1).await;
    let (kind, text) = ask(&mut client, "/loops").await;
    assert_eq!(kind, ReplyKind::Notice);
    // A code block, so the columns stay aligned wherever it is shown.
    let text = passepartout_gateway::markup::render(&text, passepartout_gateway::markup::Flavor::SPELLED).text;
    assert!(text.starts_with("heartbeat "), "{text}");
    assert!(text.contains("handler heartbeat"), "{text}");
    assert!(llm.requests().is_empty(), "a command never reaches the model");
    daemon.stop().await;
}

#[tokio::test]
async fn the_cli_lists_the_loops_of_a_running_daemon() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let running = Running::start(&config).await;
    let deadline = tokio::time::Instant::now() + WAIT;
    let heartbeat = loop {
        let output = run_cli(&config, &["loops", "--json"]).await;
        assert!(output.status.success(), "{output:?}");
        let listing: Vec<LoopStatus> = serde_json::from_slice(&output.stdout).expect("JSON loop statuses");
        assert_eq!(listing.len(), 1, "{listing:?}");
        if listing[0].iterations >= 1 {
            break listing[0].clone();
        }
        assert!(tokio::time::Instant::now() < deadline, "no heartbeat within {WAIT:?}");
        tokio::time::sleep(POLL).await;
    };
    assert_eq!(heartbeat.name.as_str(), "heartbeat");
    assert_eq!(heartbeat.sleep_ms, 60_000, "the default heartbeat_s");

    let output = run_cli(&config, &["loops"]).await;
    assert!(output.status.success(), "{output:?}");
    let text = String::from_utf8(output.stdout).unwrap();
    assert!(text.starts_with("heartbeat "), "{text}");
    assert!(text.contains("1 ok of 1 attempts"), "{text}");

    let logs = running.logs.clone();
    let status = running.terminate().await;
    assert!(status.success(), "{status:?}");
    let logs = logs.lock().unwrap();
    let stopped = logs.iter().position(|line| line.contains("loops stopped"));
    let flushed = logs.iter().position(|line| line.contains("store flushed"));
    assert!(
        stopped.is_some() && stopped < flushed,
        "loops stop before the store is flushed: {logs:?}"
    );
    assert!(
        logs.iter()
            .any(|line| line.contains("loops stopped") && line.contains("aborted=0")),
        "{logs:?}"
    );
}

/// The next reply in the conversation that answers no message: what a
/// loop says.
async fn next_unprompted(client: &mut Client) -> (ReplyKind, String) {
    let wait = async {
        loop {
            if let ServerFrame::Reply {
                in_reply_to: None,
                text,
                kind,
                ..
            } = client.next_event().await.expect("connection stays up")
            {
                return (kind, text);
            }
        }
    };
    tokio::time::timeout(WAIT, wait)
        .await
        .expect("a loop's message in time")
}

#[tokio::test]
async fn a_reminder_asked_for_in_chat_survives_a_restart_and_arrives() {
    let llm = FakeLlm::start().await;
    llm.push(Script::ToolCall {
        name: "remind".into(),
        // Far enough ahead that asking, listing and a restart fit before it
        // on a loaded machine.
        arguments: json!({ "name": "tea", "when": "in 15 seconds", "message": "Tea is ready" }).to_string(),
    });
    llm.push(Script::Reply("I will remind you.".into()));
    let mut daemon = TestDaemon::start_with(&llm, |config| config.loops.heartbeat_s = 0, Vec::new()).await;
    let mut client = daemon.client("kitchen").await;
    let asked = std::time::Instant::now();
    let (kind, text) = ask(&mut client, "remind me in 15 seconds that the tea is ready").await;
    assert_eq!((kind, text.as_str()), (ReplyKind::Answer, "I will remind you."));
    let listed = loops(&mut client).await;
    let tea = listed.iter().find(|s| s.name.as_str() == "tea").expect("tea is listed");
    assert_eq!(tea.output.as_deref(), Some("socket:kitchen"));
    assert_eq!(tea.state, State::Sleeping);

    drop(client);
    daemon.restart(Vec::new()).await;
    let mut client = daemon.client("kitchen").await;
    let resumed = loops(&mut client).await;
    let tea = resumed.iter().find(|s| s.name.as_str() == "tea");
    assert!(
        tea.is_some_and(|s| s.state == State::Sleeping),
        "the restarted daemon waits for the reminder's time (was the first one too slow?): {resumed:?}"
    );
    let (kind, text) = next_unprompted(&mut client).await;
    assert_eq!((kind, text.as_str()), (ReplyKind::Notice, "Tea is ready"));
    assert!(asked.elapsed() >= Duration::from_secs(14), "not before its time");
    assert_eq!(llm.requests().len(), 2, "a reminder needs no model");
    let done = loops(&mut client)
        .await
        .into_iter()
        .find(|s| s.name.as_str() == "tea")
        .unwrap();
    assert_eq!(done.iterations, 1, "{done:?}");
    let status = tokio::time::timeout(
        WAIT,
        client.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(
        status["store"]["outbox"], 0,
        "delivered once, nothing left to send: {status}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_loop_on_the_heartbeat_speaks_at_every_beat() {
    let llm = FakeLlm::start().await;
    let entry = LoopEntry {
        name: "stretch".into(),
        message: Some("Stand up and stretch".into()),
        output: "socket:ops".into(),
        on: Some(LoopTrigger::Heartbeat),
        ..LoopEntry::default()
    };
    let mut daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.loops.heartbeat_s = 1;
            config.loops.entries = vec![entry];
        },
        Vec::new(),
    )
    .await;
    let mut client = daemon.client("ops").await;
    for _ in 0..2 {
        let (kind, text) = next_unprompted(&mut client).await;
        assert_eq!((kind, text.as_str()), (ReplyKind::Notice, "Stand up and stretch"));
    }
    let stretch = loops(&mut client)
        .await
        .into_iter()
        .find(|s| s.name.as_str() == "stretch")
        .unwrap();
    assert!(stretch.iterations >= 2, "{stretch:?}");
    assert!(llm.requests().is_empty(), "a reminder needs no model");
    daemon.stop().await;
}
