//! Approval prompts that tell the truth, on Telegram against the fake Bot
//! API inside the real daemon: a reminder goes out once before the timeout,
//! and every prompt message of an approval (the first and the reminder) is
//! edited when it times out, is cancelled, or is decided elsewhere (from
//! the CLI), its buttons removed; a disguised command is shown with its
//! control and bidirectional characters as escapes, in the prompt and in
//! its edit. Each test waits on the Bot API calls.

use crate::support;

use std::collections::BTreeSet;

use passepartout::config::Config;
use passepartout_socket::Client;
use serde_json::Value;
use support::approvals::{DISGUISED_SHOWN, model, undisguised};
use support::fake_llm::FakeLlm;
use support::fake_telegram::{FakeTelegram, Sent};
use support::gateway_daemons::with_telegram;
use support::harness::{TestDaemon, WAIT};

const TOKEN: &str = "123456:test-token-never-logged";
const OWNER: i64 = 42;

struct Setup {
    telegram: FakeTelegram,
    daemon: TestDaemon,
    _llm: FakeLlm,
    _token_dir: tempfile::TempDir,
}

async fn start(adjust: impl FnOnce(&mut Config)) -> Setup {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let (daemon, token_dir) = with_telegram(&llm, &telegram, TOKEN, OWNER, adjust).await;
    Setup {
        telegram,
        daemon,
        _llm: llm,
        _token_dir: token_dir,
    }
}

impl Setup {
    /// The owner asks for a shell command; the prompt that asks the owner.
    async fn ask(&self) -> Sent {
        let ask = self.telegram.text_message(OWNER, OWNER, "please run it");
        self.telegram.push_update(ask);
        let prompt = self.sent(|s| s.reply_markup.is_some()).await;
        assert!(prompt.text.starts_with("Approval needed ("), "{}", prompt.text);
        prompt
    }

    async fn sent(&self, wanted: impl Fn(&Sent) -> bool) -> Sent {
        let found = self.telegram.sent_matching(WAIT, wanted).await;
        found.unwrap_or_else(|| panic!("not sent; sent: {:#?}", self.telegram.sent()))
    }

    /// Waits for `n` edits of prompts; each must say `outcome` and carry no
    /// buttons. Returns the messages edited.
    async fn edited(&self, n: usize, outcome: &str) -> BTreeSet<i64> {
        let edits = self.telegram.wait_for_calls("editmessagetext", n, WAIT).await;
        for edit in &edits {
            let text = edit["text"].as_str().unwrap_or_default();
            assert!(text.contains(outcome), "{outcome:?} not in {text:?}");
            assert!(edit.get("reply_markup").is_none(), "the buttons go: {edit}");
        }
        edits.iter().map(|edit| edit["message_id"].as_i64().unwrap()).collect()
    }
}

/// The token a prompt's Approve button carries.
fn token_of(prompt: &Sent) -> String {
    let data = &prompt.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["callback_data"];
    data.as_str()
        .and_then(|d| d.strip_prefix("approve:"))
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn a_reminder_goes_out_once_and_every_prompt_says_it_timed_out() {
    let setup = start(|config| {
        config.approvals.expire_after_s = 3;
        config.approvals.remind_before_s = 2;
    })
    .await;
    let prompt = setup.ask().await;
    let token = token_of(&prompt);

    let reminder = setup.sent(|s| s.text.starts_with("Still waiting for approval")).await;
    assert!(reminder.text.contains(&token), "{}", reminder.text);
    assert!(reminder.text.contains("Expires in 2 seconds"), "{}", reminder.text);
    assert_eq!(token_of(&reminder), token, "the reminder has the buttons too");

    let edited = setup.edited(2, "Timed out: nobody answered; it did not run.").await;
    assert_eq!(edited, BTreeSet::from([prompt.message_id, reminder.message_id]));
    let reminders = setup
        .telegram
        .sent()
        .into_iter()
        .filter(|s| s.text.starts_with("Still waiting"))
        .count();
    assert_eq!(reminders, 1, "reminded once");
}

#[tokio::test]
async fn a_cancelled_approval_edits_its_prompt() {
    let setup = start(|_| {}).await;
    let prompt = setup.ask().await;
    let cancel = setup.telegram.text_message(OWNER, OWNER, "/cancel");
    setup.telegram.push_update(cancel);
    let edited = setup
        .edited(1, &format!("Cancelled by User{OWNER} @user{OWNER} (telegram:{OWNER})"))
        .await;
    assert_eq!(edited, BTreeSet::from([prompt.message_id]));
}

#[tokio::test]
async fn an_approval_decided_from_the_cli_edits_its_prompt_in_the_chat() {
    let setup = start(|_| {}).await;
    let prompt = setup.ask().await;
    let mut cli = Client::connect(setup.daemon.config.socket_path(), None)
        .await
        .expect("connect");
    // The listing names who asked as their platform gives them, then the id.
    let listing: Value = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: false })
        .await
        .expect("approvals");
    assert_eq!(
        listing["approvals"][0]["requester_shown"],
        format!("User{OWNER} @user{OWNER} (telegram:{OWNER})"),
        "{listing}"
    );
    let answer: Value = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Decide {
            token: token_of(&prompt).to_string(),
            approve: false,
            always: false,
        })
        .await
        .expect("decide");
    assert_eq!(answer["decided"], true, "{answer}");
    let edited = setup.edited(1, "Denied from the terminal; it did not run.").await;
    assert_eq!(edited, BTreeSet::from([prompt.message_id]));
    assert!(
        setup
            .telegram
            .sent()
            .iter()
            .all(|s| !s.text.starts_with("Still waiting")),
        "no reminder before the default's time"
    );
}

#[tokio::test]
async fn a_disguised_command_is_shown_escaped_in_the_prompt_and_its_edit() {
    let setup = start(|_| {}).await;
    let ask = setup
        .telegram
        .text_message(OWNER, OWNER, "please run the disguised one");
    setup.telegram.push_update(ask);
    let prompt = setup.sent(|s| s.reply_markup.is_some()).await;
    assert!(
        prompt.text.contains(DISGUISED_SHOWN) && undisguised(&prompt.text),
        "{:?}",
        prompt.text
    );
    let press = setup
        .telegram
        .callback_query(OWNER, OWNER, prompt.message_id, &format!("deny:{}", token_of(&prompt)));
    setup.telegram.push_update(press);
    let edits = setup.telegram.wait_for_calls("editmessagetext", 1, WAIT).await;
    let shown = edits[0]["text"].as_str().unwrap();
    assert!(shown.starts_with(&format!("shell: {DISGUISED_SHOWN} (")), "{shown:?}");
    assert!(undisguised(shown), "{shown:?}");
}

/// The prompt as a Telegram user sees it: styled, never a literal backtick
/// or `**`, the command as it will run in a code block, worded for buttons
/// (no "reply to this message", no command to type in a shell); and the
/// outcome that replaces it, styled the same way.
#[tokio::test]
async fn a_prompt_on_telegram_is_formatted_and_worded_for_buttons() {
    let setup = start(|_| {}).await;
    let prompt = setup.ask().await;
    let text = &prompt.text;
    assert!(!text.contains('`') && !text.contains("**"), "{text}");
    for part in [
        "Tap Approve or Deny.",
        "Expires in 15 minutes",
        "Why: shell always needs",
        "Always also lets",
    ] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
    for never in ["reply", "Reply", "passepartout ", "Type "] {
        assert!(!text.contains(never), "{never:?} in {text}");
    }
    let command = "echo ran >> ran.txt";
    let before = &text[..text.find(command).expect("the command is shown")];
    assert!(before.chars().count() <= 250, "{before}");
    let entities = prompt.params["entities"].as_array().expect("the prompt is styled");
    let kinds: Vec<&str> = entities.iter().filter_map(|e| e["type"].as_str()).collect();
    assert!(kinds.contains(&"bold") && kinds.contains(&"pre"), "{kinds:?}");

    let press = setup
        .telegram
        .callback_query(OWNER, OWNER, prompt.message_id, &format!("deny:{}", token_of(&prompt)));
    setup.telegram.push_update(press);
    let edits = setup.telegram.wait_for_calls("editmessagetext", 1, WAIT).await;
    let shown = edits[0]["text"].as_str().unwrap();
    assert!(shown.starts_with(&format!("shell: {command} (")), "{shown}");
    assert!(!shown.contains('`'), "{shown}");
    assert!(
        edits[0]["entities"].as_array().is_some_and(|e| !e.is_empty()),
        "{edits:?}"
    );
    let told = setup.sent(|s| s.text.starts_with("Denied ")).await;
    assert!(!told.text.contains('`') && !told.text.contains("**"), "{}", told.text);
    assert!(
        told.params["entities"].as_array().is_some_and(|e| e.len() >= 2),
        "{:?}",
        told.params
    );
}
