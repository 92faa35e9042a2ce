//! A bridge across a crash: the real binary, killed with SIGKILL in the
//! middle of relaying a burst from a Signal group to a Telegram group, then
//! started again on the same data. The fake Bot API never answers the send
//! the kill interrupts, so the moment is exact. After the restart every
//! message of the burst reaches the Telegram group once, in order. And
//! `passepartout doctor` on the same configuration says when the bot cannot
//! see what people say in a bridged group.

use crate::support;

use std::path::{Path, PathBuf};

use support::fake_llm::FakeLlm;
use support::fake_signal::{ACCOUNT, ACCOUNT_UUID, FakeSignal, group_text_envelope};
use support::fake_telegram::{FakeFailure, FakeTelegram};
use support::harness::WAIT;
use support::process::{Running, run_cli, write_config};

const TOKEN: &str = "123456:bridge-crash-token";
const GROUP: i64 = -100;
const SIGNAL_GROUP: &str = "ZmFtaWx5LWdyb3Vw";
const BOB: &str = "0b0b0b0b-0000-4000-8000-00000000000b";
const BURST: usize = 60;
/// Sends confirmed before the one the kill interrupts.
const BEFORE_KILL: usize = 25;

/// A config for the binary in `dir`: Telegram and Signal on their fakes,
/// their groups bridged, Telegram's group limit lifted for the burst.
fn bridged_config(dir: &Path, llm: &FakeLlm, telegram: &FakeTelegram, signal: &FakeSignal) -> PathBuf {
    let config = write_config(dir, &llm.base_url());
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[telegram]\nenabled = true\napi_url = {url:?}\nallowed_users = [42]\nallowed_chats = [{GROUP}]\n\
         poll_timeout_s = 1\ngroup_messages_per_minute = 6000\n\
         [signal]\nenabled = true\naccount = {ACCOUNT:?}\naccount_uuid = {ACCOUNT_UUID:?}\nendpoint = {endpoint:?}\n\
         allowed_senders = [{BOB:?}]\nallowed_groups = [{SIGNAL_GROUP:?}]\n\
         [[bridges]]\nname = \"family\"\nchats = [\"telegram:{GROUP}\", \"signal:group:{SIGNAL_GROUP}\"]\n",
        url = telegram.base_url(),
        endpoint = signal.tcp_endpoint(),
    ));
    std::fs::write(&config, text).unwrap();
    config
}

async fn start(config: &Path) -> Running {
    Running::start_with(config, &[("TELEGRAM_BOT_TOKEN", TOKEN)]).await
}

/// Asks the daemon of `dir` for its status until `done` holds, within [`WAIT`].
async fn status_until(dir: &Path, done: impl Fn(&serde_json::Value) -> bool) {
    let socket = support::process::socket_path(dir);
    let mut client = passepartout_socket::Client::connect(&socket, None).await.unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let status = client
            .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status)
            .await
            .unwrap();
        if done(&status) {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not there within {WAIT:?}: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_in_the_middle_of_a_burst_loses_and_repeats_nothing() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = bridged_config(dir.path(), &llm, &telegram, &signal);
    let daemon = start(&config).await;
    telegram.fail_after("sendMessage", BEFORE_KILL, FakeFailure::Hang);
    for n in 0..BURST {
        let at = 1_700_000_000_000 + n as u64;
        signal.push_envelope(group_text_envelope(
            BOB,
            "Bob",
            at,
            SIGNAL_GROUP,
            &format!("message {n}"),
            None,
        ));
    }
    telegram.wait_for_calls("sendMessage", BEFORE_KILL + 1, WAIT).await;
    // Every message of the burst is journaled (signal-cli hands a message
    // over once: one it handed to a daemon killed before journaling it is
    // gone, with or without a bridge).
    status_until(dir.path(), |status| status["intake"]["accepted"] == BURST).await;
    daemon.kill().await;
    assert_eq!(telegram.sent().len(), BEFORE_KILL, "confirmed before the kill");

    let daemon = start(&config).await;
    let sent = telegram.wait_for_sent_to(GROUP, BURST, WAIT).await;
    let texts: Vec<String> = sent.iter().map(|s| s.text.clone()).collect();
    for (n, text) in texts.iter().enumerate() {
        assert!(
            text.ends_with(&format!("(Signal): message {n}")),
            "message {n} is not where it belongs: {texts:#?}"
        );
    }
    // Everything is delivered: nothing more is coming.
    status_until(dir.path(), |status| {
        status["store"]["outbox"] == 0 && status["store"]["pending"] == 0
    })
    .await;
    assert_eq!(telegram.sent().len(), BURST, "each once: {texts:#?}");
    daemon.terminate().await;
}

#[tokio::test]
async fn doctor_says_when_the_bot_cannot_see_a_bridged_group() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = bridged_config(dir.path(), &llm, &telegram, &signal);
    let token_file = dir.path().join("token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("[telegram]\n", &format!("[telegram]\ntoken_file = {:?}\n", token_file));
    std::fs::write(&config, text).unwrap();
    // The fake bot, as a new bot, has its privacy mode on.
    let output = run_cli(&config, &["doctor"]).await;
    let printed = String::from_utf8_lossy(&output.stdout);
    assert!(printed.contains("its privacy mode is on"), "{printed}");
    assert!(printed.contains("/setprivacy"), "{printed}");
}
