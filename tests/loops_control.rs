//! Stopping, starting again and triggering loops from outside, end to end:
//! a real daemon's loops answer the socket's `stop_loop`, `start_loop` and
//! `trigger_loop` frames and the CLI's `passepartout loops stop|start|run
//! NAME`; and `[[loops.entries]]` from the config are running loops.

use crate::support;

use std::time::Duration;

use passepartout::config::{LoopEntry, LoopTrigger};
use passepartout::engine::loops::spec::{Retrigger, Start};
use passepartout::engine::loops::status::{LoopStatus, State, StopReason, render};
use passepartout_socket::{Client, LoopControl};
use support::fake_llm::FakeLlm;
use support::harness::{TestDaemon, WAIT};
use support::process::{Running, run_cli, write_config};

/// How often a test looks again while it waits for a loop to move on.
const POLL: Duration = Duration::from_millis(50);
/// Long enough that the heartbeat only beats again when triggered.
const SLOW_HEARTBEAT_S: u64 = 3600;

/// The answer to stopping the heartbeat, which warns that backups stop too.
const HEARTBEAT_STOPPED: &str = "loop \"heartbeat\" stopped; warning: periodic backups and the approvals' expiry sweep stop with it until it is started again (loops start heartbeat) or the daemon restarts";

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

/// Polls the loop list until loop `name` satisfies `done`, within [`WAIT`].
async fn loop_until(client: &mut Client, name: &str, done: impl Fn(&LoopStatus) -> bool) -> LoopStatus {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listing = loops(client).await;
        if let Some(status) = listing.iter().find(|s| s.name.as_str() == name)
            && done(status)
        {
            return status.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "loop {name} did not get there within {WAIT:?}: {listing:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

async fn slow_heartbeat(llm: &FakeLlm) -> TestDaemon {
    TestDaemon::start_with(llm, |config| config.loops.heartbeat_s = SLOW_HEARTBEAT_S, Vec::new()).await
}

async fn in_time(answer: impl Future<Output = Result<LoopControl, passepartout_socket::ClientError>>) -> LoopControl {
    tokio::time::timeout(WAIT, answer)
        .await
        .expect("answered in time")
        .expect("answered")
}

#[tokio::test]
async fn the_heartbeat_is_stopped_through_the_socket() {
    let llm = FakeLlm::start().await;
    let mut daemon = slow_heartbeat(&llm).await;
    let mut client = daemon.client("ops").await;
    loop_until(&mut client, "heartbeat", |s| s.iterations >= 1).await;

    let answer = in_time(
        client.ask::<passepartout_socket::LoopControl>(passepartout_socket::AdminRequest::StopLoop {
            name: "heartbeat".into(),
        }),
    )
    .await;
    assert!(answer.ok, "{answer:?}");
    assert_eq!(answer.message, HEARTBEAT_STOPPED);
    let stopped = loop_until(&mut client, "heartbeat", |s| s.state == State::Stopped).await;
    assert_eq!(stopped.stop_reason, Some(StopReason::Requested), "{stopped:?}");
    let text = render(&[stopped], passepartout::foundation::clock::Clock::start().now_ms());
    assert!(text.contains("stopped on request"), "{text}");

    let answer = in_time(client.ask::<passepartout_socket::LoopControl>(
        passepartout_socket::AdminRequest::TriggerLoop {
            name: "heartbeat".into(),
        },
    ))
    .await;
    assert!(!answer.ok, "a stopped loop cannot run: {answer:?}");
    assert!(answer.message.contains("not running"), "{answer:?}");

    let answer = in_time(client.ask::<passepartout_socket::LoopControl>(
        passepartout_socket::AdminRequest::StartLoop {
            name: "heartbeat".into(),
        },
    ))
    .await;
    assert!(answer.ok, "{answer:?}");
    assert_eq!(answer.message, "loop \"heartbeat\" started; it runs next in 1h0m");
    // Sleeping with no run made: it waits its hour rather than beating at once.
    let started = loop_until(&mut client, "heartbeat", |s| s.state == State::Sleeping).await;
    assert_eq!(started.iterations, 0, "{started:?}");
    let answer = in_time(client.ask::<passepartout_socket::LoopControl>(
        passepartout_socket::AdminRequest::StartLoop {
            name: "heartbeat".into(),
        },
    ))
    .await;
    assert!(!answer.ok, "{answer:?}");
    assert_eq!(answer.message, "loop \"heartbeat\" is already running");
    daemon.stop().await;
}

#[tokio::test]
async fn unknown_loops_are_refused_by_name() {
    let llm = FakeLlm::start().await;
    let mut daemon = slow_heartbeat(&llm).await;
    let mut client = daemon.client("ops").await;
    for answer in [
        in_time(
            client.ask::<passepartout_socket::LoopControl>(passepartout_socket::AdminRequest::StopLoop {
                name: "nope".into(),
            }),
        )
        .await,
        in_time(
            client.ask::<passepartout_socket::LoopControl>(passepartout_socket::AdminRequest::StartLoop {
                name: "nope".into(),
            }),
        )
        .await,
        in_time(
            client.ask::<passepartout_socket::LoopControl>(passepartout_socket::AdminRequest::TriggerLoop {
                name: "nope".into(),
            }),
        )
        .await,
    ] {
        assert!(!answer.ok, "{answer:?}");
        assert!(answer.message.contains("there is no loop \"nope\""), "{answer:?}");
    }
    // The connection is still usable, and the heartbeat untouched.
    let heartbeat = loop_until(&mut client, "heartbeat", |_| true).await;
    assert_ne!(heartbeat.state, State::Stopped, "{heartbeat:?}");
    daemon.stop().await;
}

#[tokio::test]
async fn a_triggered_heartbeat_beats_at_once() {
    let llm = FakeLlm::start().await;
    let mut daemon = slow_heartbeat(&llm).await;
    let mut client = daemon.client("ops").await;
    let first = loop_until(&mut client, "heartbeat", |s| {
        s.iterations >= 1 && s.state == State::Sleeping
    })
    .await;
    assert_eq!(first.iterations, 1, "the next beat is an hour away: {first:?}");

    let answer = in_time(client.ask::<passepartout_socket::LoopControl>(
        passepartout_socket::AdminRequest::TriggerLoop {
            name: "heartbeat".into(),
        },
    ))
    .await;
    assert!(answer.ok, "{answer:?}");
    assert_eq!(answer.message, "loop \"heartbeat\" triggered");
    let second = loop_until(&mut client, "heartbeat", |s| s.iterations >= 2).await;
    assert_eq!(second.consecutive_errors, 0, "{second:?}");
    daemon.stop().await;
}

#[tokio::test]
async fn configured_entries_run_as_loops() {
    let llm = FakeLlm::start().await;
    let entry = LoopEntry {
        name: "stretch".into(),
        message: Some("stand up and stretch".into()),
        output: "socket:ops".into(),
        on: Some(LoopTrigger::Heartbeat),
        retrigger: Some(Retrigger::Queue),
        ..LoopEntry::default()
    };
    let mut daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.loops.heartbeat_s = SLOW_HEARTBEAT_S;
            config.loops.entries = vec![entry];
        },
        Vec::new(),
    )
    .await;
    let mut client = daemon.client("ops").await;
    let stretch = loop_until(&mut client, "stretch", |s| s.state == State::Waiting).await;
    assert_eq!(stretch.output.as_deref(), Some("socket:ops"));
    assert_eq!(stretch.start, Start::OnTrigger(Retrigger::Queue));
    let answer = in_time(
        client.ask::<passepartout_socket::LoopControl>(passepartout_socket::AdminRequest::StopLoop {
            name: "stretch".into(),
        }),
    )
    .await;
    assert!(answer.ok, "{answer:?}");
    loop_until(&mut client, "stretch", |s| s.stop_reason == Some(StopReason::Requested)).await;
    daemon.stop().await;
}

#[tokio::test]
async fn the_cli_stops_and_runs_loops() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let running = Running::start(&config).await;

    let output = run_cli(&config, &["loops", "run", "heartbeat"]).await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).trim(),
        "loop \"heartbeat\" triggered"
    );

    let output = run_cli(&config, &["loops", "stop", "nope"]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("there is no loop \"nope\""), "{stderr}");
    assert!(output.stdout.is_empty(), "{output:?}");

    let output = run_cli(&config, &["status"]).await;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("backups  none written yet\n"), "{text}");

    let output = run_cli(&config, &["loops", "stop", "heartbeat"]).await;
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), HEARTBEAT_STOPPED);

    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let output = run_cli(&config, &["loops"]).await;
        assert!(output.status.success(), "{output:?}");
        let text = String::from_utf8(output.stdout).unwrap();
        if text.contains("stopped on request") {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not stopped within {WAIT:?}: {text}"
        );
        tokio::time::sleep(POLL).await;
    }
    let output = run_cli(&config, &["loops", "run", "heartbeat"]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let output = run_cli(&config, &["status"]).await;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("backups  STOPPED"), "{text}");
    let output = run_cli(&config, &["status", "--json"]).await;
    let document: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a status document");
    assert_eq!(document["backups"]["stopped"], true, "{document}");

    let status = running.terminate().await;
    assert!(status.success(), "{status:?}");
}

/// Every loop's status, as `passepartout loops --json` prints it.
async fn cli_loops(config: &std::path::Path) -> Vec<LoopStatus> {
    let output = run_cli(config, &["loops", "--json"]).await;
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).expect("a list of loop statuses")
}

/// Asks the CLI for the loops until loop `name` satisfies `done`, within [`WAIT`].
async fn cli_loop_until(config: &std::path::Path, name: &str, done: impl Fn(&LoopStatus) -> bool) -> LoopStatus {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listing = cli_loops(config).await;
        if let Some(status) = listing.iter().find(|s| s.name.as_str() == name)
            && done(status)
        {
            return status.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "loop {name} did not get there within {WAIT:?}: {listing:?}"
        );
        tokio::time::sleep(POLL).await;
    }
}

#[tokio::test]
async fn the_cli_starts_a_stopped_loop_again_and_it_runs_at_its_next_time() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let mut text = std::fs::read_to_string(&config).unwrap();
    text += "[loops]\nheartbeat_s = 1\n";
    std::fs::write(&config, text).unwrap();
    let running = Running::start(&config).await;

    let output = run_cli(&config, &["loops", "start", "nope"]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("there is no loop \"nope\""), "{stderr}");
    let output = run_cli(&config, &["loops", "start", "heartbeat"]).await;
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("loop \"heartbeat\" is already running"), "{stderr}");
    assert!(output.stdout.is_empty(), "{output:?}");

    let output = run_cli(&config, &["loops", "stop", "heartbeat"]).await;
    assert!(output.status.success(), "{output:?}");
    cli_loop_until(&config, "heartbeat", |s| s.state == State::Stopped).await;

    let output = run_cli(&config, &["loops", "start", "heartbeat"]).await;
    assert!(output.status.success(), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.starts_with("loop \"heartbeat\" started; it runs next in "),
        "{stdout}"
    );
    // A new run of the loop: its status starts afresh, so one iteration is one since the start.
    let beat = cli_loop_until(&config, "heartbeat", |s| s.iterations >= 1).await;
    assert_ne!(beat.state, State::Stopped, "{beat:?}");
    assert_eq!(beat.consecutive_errors, 0, "{beat:?}");
    let output = run_cli(&config, &["status"]).await;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        !text.contains("backups  STOPPED"),
        "the heartbeat's work runs again: {text}"
    );

    let status = running.terminate().await;
    assert!(status.success(), "{status:?}");
}
