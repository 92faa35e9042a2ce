//! A reply's latency over Matrix beside Telegram's, through the whole
//! daemon: on Matrix, a real homeserver (Synapse, on loopback) and a
//! person's end-to-end encrypting client (matrix-nio) in an encrypted
//! direct chat, each message sent once the answer to the one before came
//! back, timed by the client from its send to the answer decrypted; on
//! Telegram, the fake Bot API, timed from the update's arrival to the
//! answer's send, with Telegram's message a second per chat lifted (as
//! `telegram.group_messages_per_minute` does for a Bot API server of one's
//! own), or each round would wait for it. The model answers at once in both. The Matrix figure
//! holds two homeserver round trips, the client's sync and both
//! encryptions, which Telegram's fake has none of: it says what a person
//! waits, not what the gateway costs.
//!
//! `cargo bench --bench matrix` prints one JSON line with the core count.
//! `PP_BENCH_ROUNDS` (default 100) sets the messages timed on each. It
//! installs Synapse as the tests do, where it is missing.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[path = "../tests/support/fake_telegram/mod.rs"]
mod fake_telegram;
// Their own tests are not this benchmark's.
#[allow(dead_code, unused_imports)]
#[path = "../tests/support/skip.rs"]
mod skip;
#[allow(dead_code, unused_imports)]
#[path = "../tests/support/synapse.rs"]
mod synapse;
#[path = "support/telegram_daemon.rs"]
mod telegram_daemon;
#[allow(dead_code)]
#[path = "support/tool_turns.rs"]
mod tool_turns;

use std::time::{Duration, Instant};

use fake_llm::{FakeLlm, Script, last_user_text};
use fake_telegram::FakeTelegram;

const TOKEN: &str = "123456:bench-token";
const ADA: i64 = 42;
const PASSWORD: &str = "bench-assistant-password";
const PATIENCE: Duration = Duration::from_secs(60);

fn main() {
    let rounds = std::env::var("PP_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100usize)
        .max(1);
    // The fakes run on a runtime of their own, so that they never take a
    // turn from the daemon's tasks, nor the daemon from theirs.
    let fakes = tokio::runtime::Runtime::new().expect("fakes' runtime");
    let (llm, telegram) = fakes.block_on(async {
        let llm = FakeLlm::start().await;
        llm.set_recording(false);
        llm.set_responder(|request| Script::Reply(format!("echo: {}", last_user_text(request))));
        (llm, FakeTelegram::start(TOKEN).await)
    });
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let telegram_ms = telegram_round_trips(&llm, &telegram, rounds).await;
        let Some(matrix_ms) = matrix_round_trips(&llm, rounds).await else {
            println!(r#"{{"bench":"matrix","skipped":"Synapse cannot be installed here"}}"#);
            return;
        };
        println!(
            r#"{{"bench":"matrix","cores":{},"rounds":{rounds},{},{}}}"#,
            std::thread::available_parallelism().map_or(0, usize::from),
            tool_turns::figures("telegram_reply", tool_turns::percentiles(telegram_ms)),
            tool_turns::figures("matrix_reply", tool_turns::percentiles(matrix_ms)),
        );
    });
}

/// Each of `rounds` messages on the fake Bot API, from its update to the
/// answer's send.
async fn telegram_round_trips(llm: &FakeLlm, telegram: &FakeTelegram, rounds: usize) -> Vec<Duration> {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config =
        telegram_daemon::telegram_config(dir.path(), "fake", llm.base_url(), TOKEN, telegram.base_url(), ADA);
    // A Bot API server of one's own: a chat's message a second is no limit
    // here, or every round would wait for it.
    config.telegram.group_messages_per_minute = 1_000_000;
    let daemon = passepartout::Daemon::start(config).await.expect("daemon");
    let mut took = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let started = Instant::now();
        telegram.push_update(telegram.text_message(ADA, ADA, &format!("ping {n}")));
        telegram.wait_for_sent_to(ADA, n + 1, PATIENCE).await;
        took.push(started.elapsed());
    }
    daemon.shutdown().await.expect("shutdown");
    took
}

/// Each of `rounds` messages in an encrypted direct chat on Synapse, as
/// the person's client timed it; `None` where Synapse cannot run.
async fn matrix_round_trips(llm: &FakeLlm, rounds: usize) -> Option<Vec<Duration>> {
    let synapse = synapse::Synapse::start("bench matrix").await?;
    let assistant = synapse.register("assistant", PASSWORD, false).await;
    let ada = synapse.register("ada", "ada-password", false).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = telegram_daemon::telegram_config(dir.path(), "fake", llm.base_url(), TOKEN, String::new(), ADA);
    config.telegram.enabled = false;
    let password_file = dir.path().join("matrix.password");
    std::fs::write(&password_file, PASSWORD).expect("password file");
    config.matrix.enabled = true;
    config.matrix.homeserver = synapse.url().to_owned();
    config.matrix.user = assistant.id.clone();
    config.matrix.password_file = Some(password_file);
    config.matrix.allowed_users = vec![ada.id.clone()];
    let daemon = passepartout::Daemon::start(config).await.expect("daemon");
    let count = rounds.to_string();
    let args = ["--to", assistant.id.as_str(), "--count", count.as_str(), "--encrypted"];
    let output = synapse
        .client(&ada)
        .run("pingpong", &args, PATIENCE * (rounds as u32 + 1))
        .await;
    assert!(
        output.status.success(),
        "the client failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    let round_trips = stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .find(|line| line["kind"] == "round_trips")
        .expect("the client timed its messages");
    daemon.shutdown().await.expect("shutdown");
    let ms = round_trips["ms"].as_array().expect("a list of times");
    Some(
        ms.iter()
            .map(|ms| Duration::from_secs_f64(ms.as_f64().unwrap_or_default() / 1000.0))
            .collect(),
    )
}
