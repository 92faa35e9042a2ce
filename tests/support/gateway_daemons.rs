//! A test daemon with one messenger gateway on, against its fake: Telegram
//! against a [`FakeTelegram`] (the token in a file), or Signal against a
//! [`FakeSignal`] over TCP, each with one allowed person.
#![allow(dead_code)] // every including target uses a different part of it

use std::path::PathBuf;

use passepartout::config::Config;

use super::fake_llm::FakeLlm;
use super::fake_signal::{ACCOUNT, ACCOUNT_UUID, FakeSignal};
use super::fake_telegram::FakeTelegram;
use super::harness::TestDaemon;

/// A daemon with Telegram on, `owner` allowed, then `adjust`ed. The token
/// file's folder goes with the returned guard.
pub async fn with_telegram(
    llm: &FakeLlm,
    telegram: &FakeTelegram,
    token: &str,
    owner: i64,
    adjust: impl FnOnce(&mut Config),
) -> (TestDaemon, tempfile::TempDir) {
    let (token_dir, token_file) = token_file(token);
    let api_url = telegram.base_url();
    let daemon = TestDaemon::start_with(
        llm,
        |config| {
            telegram_on(config, api_url, token_file, owner);
            adjust(config);
        },
        Vec::new(),
    )
    .await;
    (daemon, token_dir)
}

/// A daemon with Signal on, `owner` (a UUID) allowed, then `adjust`ed.
pub async fn with_signal(
    llm: &FakeLlm,
    signal: &FakeSignal,
    owner: &str,
    adjust: impl FnOnce(&mut Config),
) -> TestDaemon {
    let endpoint = signal.tcp_endpoint();
    TestDaemon::start_with(
        llm,
        |config| {
            signal_on(config, endpoint, owner);
            adjust(config);
        },
        Vec::new(),
    )
    .await
}

/// A file holding the bot `token`, and the folder that goes with it.
pub fn token_file(token: &str) -> (tempfile::TempDir, PathBuf) {
    let token_dir = tempfile::tempdir().unwrap();
    let token_file = token_dir.path().join("token");
    std::fs::write(&token_file, token).unwrap();
    (token_dir, token_file)
}

/// Turns Telegram on in `config`, against the fake Bot API at `api_url`,
/// with the token in `token_file` and `owner` allowed.
pub fn telegram_on(config: &mut Config, api_url: String, token_file: PathBuf, owner: i64) {
    let section = &mut config.telegram;
    section.enabled = true;
    section.token_env = None;
    section.token_file = Some(token_file);
    section.api_url = api_url;
    section.allowed_users = vec![owner];
    section.poll_timeout_s = 1;
}

/// Turns Signal on in `config`, against the fake signal-cli at `endpoint`,
/// with `owner` (a UUID) allowed.
pub fn signal_on(config: &mut Config, endpoint: String, owner: &str) {
    let section = &mut config.signal;
    section.enabled = true;
    section.account = ACCOUNT.into();
    section.account_uuid = Some(ACCOUNT_UUID.into());
    section.endpoint = endpoint;
    section.allowed_senders = vec![owner.into()];
}
