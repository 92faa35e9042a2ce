//! A bridge between a Telegram group and a Signal group, through the whole
//! daemon against the fake Bot API and the fake signal-cli on loopback:
//! the relay latency, from a message reaching the daemon's gateway to its
//! copy's send reaching the other platform (each way, one message at a
//! time: median and 99th percentile), and the throughput of a burst from
//! Telegram to Signal. Signal sets no pace; what goes to Telegram keeps to
//! its 30 messages a second overall (a message at most every 33 ms), here
//! with the group's own limit lifted as for a Bot API server of one's own,
//! so a burst to Telegram would measure Telegram.
//!
//! `cargo bench --bench bridge` prints one JSON line with the core count.
//! `PP_BENCH_RELAYS` (default 200) sets the messages timed each way,
//! `PP_BENCH_BURST` (default 500) the burst.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[path = "../tests/support/fake_signal.rs"]
mod fake_signal;
#[path = "../tests/support/fake_telegram/mod.rs"]
mod fake_telegram;
// Only its figures: the fake model is for the benchmarks of tool turns.
#[path = "support/telegram_daemon.rs"]
mod telegram_daemon;
#[allow(dead_code)]
#[path = "support/tool_turns.rs"]
mod tool_turns;

use std::time::{Duration, Instant};

use fake_signal::{ACCOUNT, ACCOUNT_UUID, FakeSignal, group_text_envelope};
use fake_telegram::FakeTelegram;

const TOKEN: &str = "123456:bench-token";
const ADA: i64 = 42;
const GROUP: i64 = -100;
const SIGNAL_GROUP: &str = "YmVuY2gtZ3JvdXA=";
const BOB: &str = "0b0b0b0b-0000-4000-8000-00000000000b";
const PATIENCE: Duration = Duration::from_secs(120);

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let relays = env_number("PP_BENCH_RELAYS", 200).max(1);
    let burst = env_number("PP_BENCH_BURST", 500).max(1);
    // The fakes run on a runtime of their own, so that they never take a
    // turn from the daemon's tasks, nor the daemon from theirs.
    let fakes = tokio::runtime::Runtime::new().expect("fakes' runtime");
    let (llm, telegram, signal) = fakes.block_on(async {
        let llm = fake_llm::FakeLlm::start().await;
        llm.set_recording(false);
        (llm, FakeTelegram::start(TOKEN).await, FakeSignal::start().await)
    });
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config =
            telegram_daemon::telegram_config(dir.path(), "fake", llm.base_url(), TOKEN, telegram.base_url(), ADA);
        config.telegram.allowed_chats = vec![GROUP];
        // A Bot API server of one's own: the group's minute is no limit here.
        config.telegram.group_messages_per_minute = 1_000_000;
        config.signal.enabled = true;
        config.signal.account = ACCOUNT.into();
        config.signal.account_uuid = Some(ACCOUNT_UUID.into());
        config.signal.endpoint = signal.tcp_endpoint();
        config.signal.allowed_senders = vec![BOB.into()];
        config.signal.allowed_groups = vec![SIGNAL_GROUP.into()];
        config.bridges = vec![passepartout::config::BridgeConfig {
            name: "bench".into(),
            chats: vec![format!("telegram:{GROUP}"), format!("signal:group:{SIGNAL_GROUP}")],
        }];
        let daemon = passepartout::Daemon::start(config).await.expect("daemon");

        let mut to_telegram = Vec::with_capacity(relays);
        for n in 0..relays {
            let started = Instant::now();
            let at = 1_700_000_000_000 + n as u64;
            signal.push_envelope(group_text_envelope(BOB, "Bob", at, SIGNAL_GROUP, &format!("s{n}"), None));
            telegram.wait_for_sent_to(GROUP, n + 1, PATIENCE).await;
            to_telegram.push(started.elapsed());
        }
        let mut to_signal = Vec::with_capacity(relays);
        for n in 0..relays {
            let started = Instant::now();
            telegram.push_update(telegram.group_message(GROUP, ADA, &format!("t{n}")));
            tokio::time::timeout(PATIENCE, signal.wait_for_sent(n + 1))
                .await
                .expect("relayed to Signal");
            to_signal.push(started.elapsed());
        }
        let started = Instant::now();
        for n in 0..burst {
            telegram.push_update(telegram.group_message(GROUP, ADA, &format!("b{n}")));
        }
        tokio::time::timeout(PATIENCE, signal.wait_for_sent(relays + burst))
            .await
            .expect("the burst relayed");
        let burst_s = started.elapsed().as_secs_f64();
        let sent = signal.sent();
        let in_order = sent[relays..]
            .iter()
            .enumerate()
            .all(|(n, s)| s.message.as_deref().is_some_and(|m| m.ends_with(&format!(": b{n}"))));
        assert!(in_order, "the burst arrived out of order");
        daemon.shutdown().await.expect("shutdown");
        println!(
            r#"{{"bench":"bridge","cores":{},"relays_each_way":{relays},{},{},"burst":{burst},"burst_s":{burst_s:.3},"burst_per_s":{:.1}}}"#,
            std::thread::available_parallelism().map_or(0, usize::from),
            tool_turns::figures("signal_to_telegram", tool_turns::percentiles(to_telegram)),
            tool_turns::figures("telegram_to_signal", tool_turns::percentiles(to_signal)),
            burst as f64 / burst_s,
        );
    });
}
