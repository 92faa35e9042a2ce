//! Linking end to end, against the fake Bot API and the fake signal-cli
//! inside the real daemon: `/link` on Telegram answers a code, `/link CODE`
//! on Signal makes the two accounts one person and both sides are told; a
//! wrong code is refused; a fact told on Telegram is recalled on Signal,
//! and one told on Signal is not recalled in a Telegram group;
//! the person's own Telegram approval is answered from Signal while someone
//! else's is not; a conversation handed off from Telegram goes on on
//! Signal, and `/continue` brings it back; `/link` in a group is refused; `passepartout people`,
//! `link` and `people unlink` work from the terminal; no code ever reaches
//! the model.

use crate::support;

use std::path::PathBuf;
use std::sync::Arc;

use serde_json::{Value, json};
use support::fake_llm::{FakeLlm, Script, last_message, last_user_text};
use support::fake_signal::{FakeSignal, text_envelope};
use support::fake_telegram::{FakeTelegram, Sent};
use support::gateway_daemons::{signal_on, telegram_on, token_file};
use support::harness::{TestDaemon, WAIT};
use support::process::run_cli;
use support::tools::Record;

const TOKEN: &str = "123456:test-token-never-logged";
const ADA_TELEGRAM: i64 = 42;
const BOB_TELEGRAM: i64 = 43;
/// A Telegram group both Ada and Bob are in.
const GROUP: i64 = -100;
const ADA_SIGNAL: &str = "0a0a0a0a-0000-4000-8000-00000000000a";

struct Setup {
    telegram: FakeTelegram,
    signal: FakeSignal,
    llm: FakeLlm,
    record: Record,
    daemon: TestDaemon,
    cli_config: PathBuf,
    _token_dir: tempfile::TempDir,
    /// The next Signal timestamp.
    clock: std::sync::atomic::AtomicU64,
}

/// Remembers and recalls when told to, asks for `record` on "please record",
/// reports what a tool said, and echoes the rest.
fn model(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply(format!("done: {}", last["content"].as_str().unwrap_or_default()));
    }
    let tool = |name: &str, arguments: Value| Script::ToolCall {
        name: name.into(),
        arguments: arguments.to_string(),
    };
    match last_user_text(request).as_str() {
        "remember the locker" => tool("remember", json!({"fact": "the locker code is 4711"})),
        "remember the bike" => tool("remember", json!({"fact": "the bike is blue"})),
        "what is my locker code?" => tool("recall", json!({})),
        _ => support::approvals::model(request),
    }
}

async fn start() -> Setup {
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
            // Every group message reaches the core: `/link` there is refused by it.
            section.group_mode = passepartout_gateway::GroupMode::All;
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
    async fn on_telegram(&self, user: i64, text: &str) -> Sent {
        let before = self.sent_to(user).len();
        let id = self.telegram.push_update(self.telegram.text_message(user, user, text));
        self.telegram.wait_for_confirmed(id, WAIT).await;
        self.telegram.wait_for_sent_to(user, before + 1, WAIT).await[before].clone()
    }

    /// `text` from Ada in the Telegram group, and the bot's first message there.
    async fn in_group(&self, text: &str) -> String {
        let id = self
            .telegram
            .push_update(self.telegram.group_message(GROUP, ADA_TELEGRAM, text));
        self.telegram.wait_for_confirmed(id, WAIT).await;
        self.telegram.wait_for_sent_to(GROUP, 1, WAIT).await[0].text.clone()
    }

    fn sent_to(&self, chat: i64) -> Vec<Sent> {
        self.telegram.sent().into_iter().filter(|s| s.chat_id == chat).collect()
    }

    /// `text` from Ada on Signal, and the account's next message to her.
    async fn on_signal(&self, text: &str) -> String {
        let before = self.signal_texts().len();
        let at = self.clock.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.signal.push_envelope(text_envelope(ADA_SIGNAL, at, text));
        self.signal_text(before + 1).await
    }

    /// The `n`th message the account sent Ada, once it is sent.
    async fn signal_text(&self, n: usize) -> String {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let texts = self.signal_texts();
            if texts.len() >= n {
                return texts[n - 1].clone();
            }
            let seen = self.signal.sent().len();
            tokio::time::timeout_at(deadline, self.signal.wait_for_sent(seen + 1))
                .await
                .unwrap_or_else(|_| panic!("no message {n} to Ada on Signal; sent: {:#?}", self.signal.sent()));
        }
    }

    fn signal_texts(&self) -> Vec<String> {
        self.signal
            .sent()
            .into_iter()
            .filter(|s| s.recipients == [ADA_SIGNAL])
            .filter_map(|s| s.message)
            .collect()
    }

    async fn cli(&self, args: &[&str]) -> (Option<i32>, String, String) {
        let output = run_cli(&self.cli_config, args).await;
        let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
        (output.status.code(), text(output.stdout), text(output.stderr))
    }

    /// Every text the model was ever sent.
    fn model_saw(&self) -> String {
        self.llm.requests().iter().map(|r| r["messages"].to_string()).collect()
    }
}

/// Ada's Telegram chat and Signal linked, both sides told.
async fn linked() -> Setup {
    let setup = start().await;
    let code = code_in(&setup.on_telegram(ADA_TELEGRAM, "/link").await.text);
    let told = setup.on_signal(&format!("/link {code}")).await;
    assert!(told.starts_with("Linked:"), "{told}");
    setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 2, WAIT).await;
    setup
}

/// The code in a message.
fn code_in(text: &str) -> String {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .find(|w| w.len() == 8 && w.chars().all(|c| passepartout_gateway::TOKEN_ALPHABET.contains(c)))
        .unwrap_or_else(|| panic!("no code in {text:?}"))
        .to_owned()
}

#[tokio::test]
async fn a_telegram_and_a_signal_account_linked_share_memory_and_the_persons_approvals() {
    let mut setup = start().await;
    let asked = setup.on_telegram(ADA_TELEGRAM, "/link").await;
    assert!(asked.text.starts_with("Your link code is"), "{}", asked.text);
    let code = code_in(&asked.text);

    let wrong = setup.on_signal("/link ABCDEFGH").await;
    assert_eq!(wrong, "Not linked: no such link code (or it expired).");
    let told_here = setup.on_signal(&format!("/link {}", code.to_lowercase())).await;
    assert!(told_here.starts_with("Linked: this chat and User42"), "{told_here}");
    let told_there = setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 2, WAIT).await[1]
        .text
        .clone();
    assert!(
        told_there.starts_with("Linked: this chat and Ada (signal:"),
        "{told_there}"
    );

    let remembered = setup.on_telegram(ADA_TELEGRAM, "remember the locker").await;
    assert!(remembered.text.starts_with("done: remembered"), "{}", remembered.text);
    let recalled = setup.on_signal("what is my locker code?").await;
    assert!(
        recalled.contains("the locker code is 4711"),
        "recalled on Signal: {recalled}"
    );

    let remembered = setup.on_signal("remember the bike").await;
    assert!(remembered.starts_with("done: remembered"), "{remembered}");
    let in_group = setup.in_group("what is my locker code?").await;
    assert!(
        in_group.contains("4711"),
        "her own Telegram facts, as before: {in_group}"
    );
    assert!(
        !in_group.contains("bike"),
        "nothing from her other channels in a group: {in_group}"
    );

    // Ada's own approval, asked on Telegram, answered from Signal.
    let prompt = setup.on_telegram(ADA_TELEGRAM, "please record the milk").await;
    let token = code_in(&prompt.text);
    let approved = setup.on_signal(&format!("approve {token}")).await;
    assert!(approved.starts_with("Approved"), "{approved}");
    // Bob's, asked in his chat, is not Ada's to answer from Signal.
    let bobs = setup.on_telegram(BOB_TELEGRAM, "please record the eggs").await;
    let bobs = code_in(&bobs.text);
    let refused = setup.on_signal(&format!("approve {bobs}")).await;
    assert!(refused.starts_with("No approval has the token"), "{refused}");
    let outcome = setup
        .telegram
        .sent_matching(WAIT, |s| s.chat_id == ADA_TELEGRAM && s.text.starts_with("final: "))
        .await;
    assert!(outcome.is_some(), "the outcome settles on Telegram, where it was asked");
    assert_eq!(setup.record.calls(), 1, "only Ada's own ran");

    let saw = setup.model_saw();
    assert!(
        !saw.contains(&code) && !saw.contains("/link"),
        "no code reaches the model"
    );
    setup.daemon.stop().await;
}

#[tokio::test]
async fn link_in_a_group_is_refused_and_the_terminal_links_lists_and_unlinks() {
    let mut setup = start().await;
    let refused = setup.in_group("/link").await;
    assert!(refused.contains("not from a group"), "{refused}");
    assert!(!refused.contains("link code is"), "{refused}");

    let (status, nobody, _) = setup.cli(&["people"]).await;
    assert_eq!(status, Some(0));
    assert!(nobody.starts_with("Nobody is linked."), "{nobody}");
    let (status, _, wrong) = setup.cli(&["link", "ABCDEFGH"]).await;
    assert_eq!(
        (status, wrong.as_str()),
        (Some(1), "passepartout: no such link code (or it expired)\n")
    );

    let code = code_in(&setup.on_telegram(ADA_TELEGRAM, "/link").await.text);
    let (status, linked, _) = setup.cli(&["link", &code]).await;
    assert_eq!(status, Some(0), "{linked}");
    assert!(linked.starts_with("Linked: this terminal and User42"), "{linked}");
    let told = setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 2, WAIT).await[1]
        .text
        .clone();
    assert!(told.starts_with("Linked: this chat and socket:"), "{told}");

    let (_, listed, _) = setup.cli(&["people"]).await;
    assert!(listed.starts_with("person "), "{listed}");
    assert!(
        listed.contains("(telegram:42)") && listed.contains("socket:"),
        "{listed}"
    );
    let number = listed["person ".len()..].split(':').next().unwrap().to_owned();

    let (status, _, unknown) = setup.cli(&["people", "unlink", "999"]).await;
    assert_eq!(status, Some(1), "{unknown}");
    let (status, unlinked, _) = setup.cli(&["people", "unlink", &number]).await;
    assert_eq!(status, Some(0), "{unlinked}");
    let told = setup.telegram.wait_for_sent_to(ADA_TELEGRAM, 3, WAIT).await[2]
        .text
        .clone();
    assert!(
        told.starts_with("Unlinked: this chat is no longer one person"),
        "{told}"
    );
    let (_, nobody, _) = setup.cli(&["people"]).await;
    assert!(nobody.starts_with("Nobody is linked."), "{nobody}");
    setup.daemon.stop().await;
}

#[tokio::test]
async fn a_conversation_handed_off_from_telegram_goes_on_on_signal_and_continue_brings_it_back() {
    let mut setup = linked().await;
    let bobs = setup.on_telegram(BOB_TELEGRAM, "/handoff signal").await;
    assert!(bobs.text.contains("send /link here"), "not linked: {}", bobs.text);

    let said = setup.on_telegram(ADA_TELEGRAM, "the fence gets painted green").await;
    assert!(said.text.contains("fence"), "{}", said.text);
    let nowhere = setup.on_telegram(ADA_TELEGRAM, "/handoff web").await;
    assert!(
        nowhere.text.starts_with("You have no linked chat on web"),
        "{}",
        nowhere.text
    );
    assert!(nowhere.text.contains("/handoff signal"), "{}", nowhere.text);

    let signal_before = setup.signal_texts().len();
    let handed = setup.on_telegram(ADA_TELEGRAM, "/handoff signal").await;
    assert!(
        handed.text.starts_with("Handing this conversation over to Signal"),
        "{}",
        handed.text
    );
    let carried = setup.signal_text(signal_before + 1).await;
    assert_eq!(carried, "Carried over from Telegram: the last turn. Go on here.",);
    setup.on_signal("what colour was it?").await;
    let asked = setup.llm.requests().last().unwrap()["messages"].to_string();
    assert!(
        asked.contains("Carried over from our conversation on Telegram")
            && asked.contains("the fence gets painted green"),
        "the Telegram turn is in the Signal conversation's context: {asked}"
    );

    let continued = setup.on_telegram(ADA_TELEGRAM, "/continue").await;
    assert!(
        continued.text.starts_with("Carried over from Signal: the last 2 turns"),
        "{}",
        continued.text
    );
    setup.on_telegram(ADA_TELEGRAM, "and the gate?").await;
    let asked = setup.llm.requests().last().unwrap()["messages"].to_string();
    assert!(
        asked.contains("what colour was it?"),
        "the Signal turn came back: {asked}"
    );
    assert!(
        !setup.model_saw().contains("/handoff"),
        "the commands never reach the model"
    );
    setup.daemon.stop().await;
}
