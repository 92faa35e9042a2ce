//! What the consensus gate adds to a turn: the same tool-call turn through
//! two daemons, one with three voters on loopback and one without the gate.
//!
//! `cargo bench --bench consensus` prints one JSON line, with the number of
//! cores: the median and 99th percentile, in milliseconds, of
//! - `plain_round`: a turn in which the model calls the built-in
//!   `current_time` and then answers (socket → pipeline → loopback model →
//!   tool → model → reply), each in a new conversation;
//! - `gated_round`: the same turn through a daemon whose gate puts
//!   `current_time` to three loopback voters, each agreeing at once (so the
//!   call runs, as without the gate), taken turn and turn about with the
//!   plain rounds;
//!
//! and `overhead_p50_ms` / `overhead_p99_ms`, the differences: what asking
//! three voters in parallel costs a turn when they answer at once (their
//! own thinking time comes on top). `PP_BENCH_CONSENSUS_TURNS` (default 500)
//! sets how many of each are timed, after a warm-up.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[path = "support/tool_turns.rs"]
mod tool_turns;

use std::path::Path;
use std::time::{Duration, Instant};

use fake_llm::{FakeLlm, Script};
use passepartout::config::{AppliesTo, Config, ProviderConfig};
use passepartout::{Daemon, Extensions};
use passepartout_gateway::{ChatId, ReplyKind};
use passepartout_socket::{Client, ServerFrame};
use tool_turns::{figures, model, percentiles};

const WARM_UP: usize = 20;
const AGREE: &str = r#"{"vote":"agree","reason":"the person asked for the time"}"#;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// A provider named `name` at `llm`.
fn provider(name: &str, llm: &FakeLlm) -> ProviderConfig {
    ProviderConfig {
        name: name.into(),
        base_url: llm.base_url(),
        model: "instant".into(),
        ..ProviderConfig::default()
    }
}

/// A daemon in `dir` whose model is `llm`, with `voters` voting on
/// `current_time` when there are any.
async fn daemon(dir: &Path, llm: &FakeLlm, voters: &[FakeLlm]) -> (Daemon, Config) {
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.store.backup_every_s = 0;
    config.skills.tool_calls_per_minute = 0;
    config.llm.providers = vec![provider("loopback", llm)];
    for (n, voter) in voters.iter().enumerate() {
        let name = format!("voter-{n}");
        config.llm.providers.push(provider(&name, voter));
        config.skills.consensus.voters.push(name);
    }
    config.skills.consensus.applies_to = AppliesTo::Tools(vec!["current_time".into()]);
    let daemon = Daemon::start_with(config.clone(), Extensions::default())
        .await
        .expect("start");
    (daemon, config)
}

/// One turn sending `text` in a conversation of its own (so that no history
/// grows from one to the next), timed from sending to the answer.
async fn turn(socket: &Path, chat: String, text: &str) -> Duration {
    let mut client = Client::connect(socket, Some(ChatId::new(chat).unwrap()))
        .await
        .expect("connect");
    let started = Instant::now();
    let (id, _) = client.send(None, text, None).await.expect("send");
    loop {
        match client.next_event().await.expect("reply") {
            ServerFrame::Reply {
                in_reply_to: Some(to),
                kind: ReplyKind::Answer,
                text,
                ..
            } if to == id => {
                assert_eq!(text, "done", "the call ran and the model answered");
                return started.elapsed();
            }
            ServerFrame::Approval { text, .. } => panic!("agreeing voters sent it to a person: {text}"),
            _ => {}
        }
    }
}

#[tokio::main]
async fn main() {
    let turns = env_number("PP_BENCH_CONSENSUS_TURNS", 500).max(10);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    llm.set_recording(false);
    let mut voters = Vec::new();
    for _ in 0..3 {
        let voter = FakeLlm::start().await;
        voter.set_responder(|_| Script::Reply(AGREE.into()));
        voters.push(voter);
    }
    let (plain_dir, gated_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (plain_daemon, plain_config) = daemon(plain_dir.path(), &llm, &[]).await;
    let (gated_daemon, gated_config) = daemon(gated_dir.path(), &llm, &voters).await;
    let (plain_socket, gated_socket) = (plain_config.socket_path(), gated_config.socket_path());

    // Turn and turn about, so that whatever drifts affects both alike.
    let (mut plain, mut gated) = (Vec::with_capacity(turns), Vec::with_capacity(turns));
    for n in 0..WARM_UP + turns {
        let without = turn(&plain_socket, format!("plain-{n}"), "call current_time {}").await;
        let with = turn(&gated_socket, format!("gated-{n}"), "call current_time {}").await;
        if n >= WARM_UP {
            plain.push(without);
            gated.push(with);
        }
    }
    for voter in &voters {
        assert_eq!(voter.requests().len(), WARM_UP + turns, "every gated call was voted on");
    }
    let (plain, gated) = (percentiles(plain), percentiles(gated));
    println!(
        r#"{{"cores":{cores},"turns":{turns},"voters":3,{},{},"overhead_p50_ms":{:.3},"overhead_p99_ms":{:.3}}}"#,
        figures("plain_round", plain),
        figures("gated_round", gated),
        gated.0 - plain.0,
        gated.1 - plain.1,
    );
    plain_daemon.shutdown().await.expect("shutdown");
    gated_daemon.shutdown().await.expect("shutdown");
}
