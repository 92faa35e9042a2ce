//! A daemon with one person, Ada, on two channels: her private Telegram
//! chat (beside Bob's, and a group with both) and her Signal account,
//! against the fake Bot API and the fake signal-cli; with the helpers the
//! linking tests share to talk on either side and read what came back.

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::Value;

use super::fake_llm::{FakeLlm, Script};
use super::fake_signal::{FakeSignal, text_envelope};
use super::fake_telegram::{FakeTelegram, Sent};
use super::gateway_daemons::{signal_on, telegram_on, token_file};
use super::harness::{TestDaemon, WAIT};
use super::process::run_cli;
use super::tools::Record;

pub const TOKEN: &str = "123456:test-token-never-logged";
pub const ADA_TELEGRAM: i64 = 42;
pub const BOB_TELEGRAM: i64 = 43;
/// A Telegram group both Ada and Bob are in.
pub const GROUP: i64 = -100;
pub const ADA_SIGNAL: &str = "0a0a0a0a-0000-4000-8000-00000000000a";

pub struct Setup {
    pub telegram: FakeTelegram,
    pub signal: FakeSignal,
    pub llm: FakeLlm,
    pub record: Record,
    pub daemon: TestDaemon,
    pub cli_config: PathBuf,
    _token_dir: tempfile::TempDir,
    /// The next Signal timestamp.
    clock: std::sync::atomic::AtomicU64,
}

/// The daemon with Ada on Telegram (and Bob, and a group with both) and
/// on Signal, `record` needing approval, answered by `model`.
pub async fn start(model: fn(&Value) -> Script) -> Setup {
    // Every group message reaches the core: `/link` there is refused by it.
    start_in(model, passepartout_gateway::GroupMode::All).await
}

/// The same, the groups read in `group_mode`.
pub async fn start_in(model: fn(&Value) -> Script, group_mode: passepartout_gateway::GroupMode) -> Setup {
    let telegram = FakeTelegram::start(TOKEN).await;
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let record = Record::default();
    let (token_dir, token_file) = token_file(TOKEN);
    let (api_url, endpoint) = (telegram.base_url(), signal.tcp_endpoint());
    let daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.tools.require_approval = vec!["record".into()];
            telegram_on(config, api_url, token_file, ADA_TELEGRAM);
            let section = &mut config.telegram;
            section.allowed_users.push(BOB_TELEGRAM);
            section.allowed_chats = vec![GROUP];
            section.approvers = Some(vec![ADA_TELEGRAM, BOB_TELEGRAM]);
            section.group_mode = group_mode;
            signal_on(config, endpoint, ADA_SIGNAL);
        },
        vec![Arc::new(record.clone())],
    )
    .await;
    let cli_config = daemon.cli_config(&llm);
    Setup {
        telegram,
        signal,
        llm,
        record,
        daemon,
        cli_config,
        _token_dir: token_dir,
        clock: std::sync::atomic::AtomicU64::new(1_700_000_000_000),
    }
}

impl Setup {
    /// `text` from `user` in their private Telegram chat, and the bot's next
    /// message there.
    pub async fn on_telegram(&self, user: i64, text: &str) -> Sent {
        let before = self.sent_to(user).len();
        let id = self.telegram.push_update(self.telegram.text_message(user, user, text));
        self.telegram.wait_for_confirmed(id, WAIT).await;
        self.telegram.wait_for_sent_to(user, before + 1, WAIT).await[before].clone()
    }

    /// `text` from Ada in the Telegram group, and the bot's first message there.
    pub async fn in_group(&self, text: &str) -> String {
        let id = self
            .telegram
            .push_update(self.telegram.group_message(GROUP, ADA_TELEGRAM, text));
        self.telegram.wait_for_confirmed(id, WAIT).await;
        self.telegram.wait_for_sent_to(GROUP, 1, WAIT).await[0].text.clone()
    }

    pub fn sent_to(&self, chat: i64) -> Vec<Sent> {
        self.telegram.sent().into_iter().filter(|s| s.chat_id == chat).collect()
    }

    /// `text` from Ada on Signal, and the account's next message to her.
    pub async fn on_signal(&self, text: &str) -> String {
        let before = self.signal_texts().len();
        let at = self.clock.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.signal.push_envelope(text_envelope(ADA_SIGNAL, at, text));
        self.signal_text(before + 1).await
    }

    /// The `n`th message the account sent Ada, once it is sent.
    pub async fn signal_text(&self, n: usize) -> String {
        let to_ada = |sent: &super::fake_signal::Sent| sent.recipients == [ADA_SIGNAL] && sent.message.is_some();
        let sent = self.signal.nth_sent(n, WAIT, to_ada).await;
        sent.message.unwrap_or_default()
    }

    pub fn signal_texts(&self) -> Vec<String> {
        self.signal
            .sent()
            .into_iter()
            .filter(|s| s.recipients == [ADA_SIGNAL])
            .filter_map(|s| s.message)
            .collect()
    }

    pub async fn cli(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let output = run_cli(&self.cli_config, args).await;
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        (output.status.code(), text(output.stdout), text(output.stderr))
    }

    /// Every text the model was ever sent.
    pub fn model_saw(&self) -> String {
        self.llm.requests().iter().map(|r| r["messages"].to_string()).collect()
    }
}

/// Ada's Telegram chat and Signal linked, both sides told.
pub async fn linked(model: fn(&Value) -> Script) -> Setup {
    let setup = start(model).await;
    let code = code_in(&setup.on_telegram(ADA_TELEGRAM, "/link").await.text);
    let told = setup.on_signal(&format!("/link {code}")).await;
    assert!(told.starts_with("Linked:"), "{told}");
    setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 2, WAIT).await;
    setup
}

/// The code in a message.
pub fn code_in(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.len() == 8 && w.chars().all(|c| passepartout_gateway::TOKEN_ALPHABET.contains(c)))
        .unwrap_or_else(|| panic!("no code in {text:?}"))
        .to_owned()
}
