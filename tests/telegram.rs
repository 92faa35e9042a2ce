//! The Telegram gateway inside the real daemon: a fake Bot API server and a
//! fake model, the real gateway, intake, pipeline and approvals between them.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use support::approvals::model;
use support::fake_llm::{FakeLlm, last_user_text};
use support::fake_telegram::{FakeTelegram, Sent};
use support::gateway_daemons::{telegram_on, token_file};
use support::harness::{TestDaemon, WAIT};
use support::tools::Record;

const TOKEN: &str = "123456:test-token-never-logged";
const OWNER: i64 = 42;
const FRIEND: i64 = 7;
const GROUP: i64 = -1_000_000_000_100;

struct Setup {
    telegram: FakeTelegram,
    llm: FakeLlm,
    record: Record,
    _daemon: TestDaemon,
}

async fn start() -> Setup {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let record = Record::default();
    let (token_dir, token_file) = token_file(TOKEN);
    let api_url = telegram.base_url();
    let daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.tools.require_approval = vec!["record".into()];
            // The flat refusal of strangers; pairing has tests/pairing.rs.
            config.pairing.enabled = false;
            telegram_on(config, api_url, token_file, OWNER);
            config.telegram.allowed_chats = vec![GROUP];
        },
        vec![Arc::new(record.clone())],
    )
    .await;
    // The token was read at start; the file may go.
    drop(token_dir);
    Setup {
        telegram,
        llm,
        record,
        _daemon: daemon,
    }
}

/// Waits until a message satisfying `wanted` was sent, and returns it.
async fn sent_where(telegram: &FakeTelegram, wanted: impl Fn(&Sent) -> bool) -> Sent {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut seen = 0;
    loop {
        let sent = telegram
            .wait_for_sent(
                seen + 1,
                deadline.saturating_duration_since(tokio::time::Instant::now()),
            )
            .await;
        if let Some(found) = sent.iter().find(|s| wanted(s)) {
            return found.clone();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no such message within {WAIT:?}; sent: {sent:#?}"
        );
        seen = sent.len();
    }
}

fn message_id(update: &Value) -> i64 {
    update["message"]["message_id"].as_i64().unwrap()
}

#[tokio::test]
async fn a_message_from_an_allowed_user_is_answered_quoting_it() {
    let setup = start().await;
    let update = setup.telegram.text_message(OWNER, OWNER, "hello there");
    let asked = message_id(&update);
    setup.telegram.push_update(update);
    let reply = sent_where(&setup.telegram, |s| s.chat_id == OWNER).await;
    assert_eq!(reply.text, "echo: hello there");
    assert_eq!(reply.reply_to_message_id, Some(asked));
}

/// `/status` in a chat is a few short lines for a proportional font (the
/// aligned table is the terminal's), and `/help` and `/tools` show no
/// literal markup: every notice goes through the renderer.
#[tokio::test]
async fn status_help_and_tools_in_a_chat_read_well_and_show_no_markup() {
    let setup = start().await;
    setup
        .telegram
        .push_update(setup.telegram.text_message(OWNER, OWNER, "/status"));
    let status = sent_where(&setup.telegram, |s| s.text.starts_with("passepartout ")).await;
    let text = &status.text;
    for part in ["Gateways: ", "Models: ", "Waiting: nothing", "Loops: "] {
        assert!(text.contains(part), "{part} missing from {text}");
    }
    assert!(
        !text.contains("gateway  ") && !text.contains("passepartout approvals"),
        "{text}"
    );
    assert!(
        text.lines().count() <= 6 && text.lines().all(|l| l.chars().count() <= 100),
        "{text}"
    );
    assert!(!text.contains('`') && !text.contains("**"), "{text}");
    for (command, starts) in [("/help", "Commands:"), ("/tools", "Tools (")] {
        setup
            .telegram
            .push_update(setup.telegram.text_message(OWNER, OWNER, command));
        let told = sent_where(&setup.telegram, |s| s.text.starts_with(starts)).await;
        assert!(!told.text.contains('`') && !told.text.contains("**"), "{}", told.text);
        assert!(
            told.params["entities"].as_array().is_some_and(|e| !e.is_empty()),
            "{command}: styled"
        );
    }
}

#[tokio::test]
async fn a_stranger_is_refused_once_and_nothing_reaches_the_model() {
    let setup = start().await;
    let stranger = 999;
    for text in ["hi", "hello?"] {
        setup
            .telegram
            .push_update(setup.telegram.text_message(stranger, stranger, text));
    }
    // Then the owner: once that is answered, both strangers' messages were handled.
    setup
        .telegram
        .push_update(setup.telegram.text_message(OWNER, OWNER, "ping"));
    sent_where(&setup.telegram, |s| s.chat_id == OWNER).await;
    let refusals: Vec<_> = setup
        .telegram
        .sent()
        .into_iter()
        .filter(|s| s.chat_id == stranger)
        .collect();
    assert_eq!(
        refusals.len(),
        1,
        "one short refusal, not one per message: {refusals:?}"
    );
    let asked: Vec<String> = setup.llm.requests().iter().map(last_user_text).collect();
    assert_eq!(asked, ["ping"], "the stranger's words never reached the model");
}

#[tokio::test]
async fn an_approver_presses_approve_and_the_action_runs_once() {
    let setup = start().await;
    setup
        .telegram
        .push_update(setup.telegram.text_message(OWNER, OWNER, "please record the milk"));
    let prompt = sent_where(&setup.telegram, |s| s.reply_markup.is_some()).await;
    let buttons = &prompt.reply_markup.as_ref().unwrap()["inline_keyboard"][0];
    let approve = buttons[0]["callback_data"].as_str().unwrap().to_owned();
    assert!(approve.starts_with("approve:"), "{buttons}");
    assert!(buttons[1]["callback_data"].as_str().unwrap().starts_with("always:"));
    assert!(buttons[2]["callback_data"].as_str().unwrap().starts_with("deny:"));
    assert_eq!(setup.record.calls(), 0, "nothing runs before approval");

    let press = setup.telegram.callback_query(OWNER, OWNER, prompt.message_id, &approve);
    setup.telegram.push_update(press);
    let done = sent_where(&setup.telegram, |s| s.text.starts_with("final: ")).await;
    assert!(done.text.contains("and it ran"), "{}", done.text);
    assert_eq!(setup.record.calls(), 1);
    // The press was answered (waits for the call, or fails).
    setup.telegram.wait_for_calls("answercallbackquery", 1, WAIT).await;
    // The prompt now says who decided, and its buttons are gone.
    let edits = setup.telegram.wait_for_calls("editmessagetext", 1, WAIT).await;
    assert_eq!(edits[0]["message_id"], prompt.message_id, "{edits:?}");
    let shown = edits[0]["text"].as_str().unwrap();
    assert!(
        shown.contains(&format!("Approved by User{OWNER} @user{OWNER} (telegram:{OWNER})")),
        "{shown}"
    );
    assert!(edits[0].get("reply_markup").is_none(), "{edits:?}");
}

#[tokio::test]
async fn a_press_by_someone_who_may_not_approve_is_refused_and_it_keeps_waiting() {
    let setup = start().await;
    // In the group everyone may talk, but only the owner approves.
    let ask = setup
        .telegram
        .group_message(GROUP, FRIEND, "@fake_bot please record the eggs");
    setup.telegram.push_update(ask);
    let prompt = sent_where(&setup.telegram, |s| s.reply_markup.is_some()).await;
    let approve = prompt.reply_markup.as_ref().unwrap()["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    let press = setup
        .telegram
        .callback_query(FRIEND, GROUP, prompt.message_id, &approve);
    setup.telegram.push_update(press);
    // The refusal is on the button, as an alert to the presser alone.
    let answers = setup.telegram.wait_for_calls("answercallbackquery", 1, WAIT).await;
    assert!(
        answers[0]["text"]
            .as_str()
            .unwrap_or_default()
            .contains("not allowed to approve"),
        "{answers:?}"
    );
    assert_eq!(answers[0]["show_alert"], true, "{answers:?}");
    // A forged button naming no approval is answered alike.
    let forged = setup
        .telegram
        .callback_query(FRIEND, GROUP, prompt.message_id, "approve:ZZZZZZZZ");
    setup.telegram.push_update(forged);
    let answers = setup.telegram.wait_for_calls("answercallbackquery", 2, WAIT).await;
    assert_eq!(answers[1]["text"], answers[0]["text"], "{answers:?}");
    assert_eq!(answers[1]["show_alert"], true, "{answers:?}");
    assert_eq!(setup.record.calls(), 0);
    // The owner pressing it in her own chat is told why it is not taken there.
    let press = setup.telegram.callback_query(OWNER, OWNER, prompt.message_id, &approve);
    setup.telegram.push_update(press);
    let told = sent_where(&setup.telegram, |s| s.chat_id == OWNER).await;
    assert!(
        told.text
            .contains("was asked for in another conversation; answer it there"),
        "{}",
        told.text
    );
    let answers = setup.telegram.wait_for_calls("answercallbackquery", 3, WAIT).await;
    assert_eq!(answers[2].get("text"), None, "no alert: {answers:?}");
    assert_eq!(setup.record.calls(), 0);
    // The owner's press still decides.
    let press = setup.telegram.callback_query(OWNER, GROUP, prompt.message_id, &approve);
    setup.telegram.push_update(press);
    sent_where(&setup.telegram, |s| s.text.starts_with("final: ")).await;
    assert_eq!(setup.record.calls(), 1);
}

#[tokio::test]
async fn in_a_group_only_messages_that_mention_the_bot_are_taken() {
    let setup = start().await;
    setup.telegram.push_update(
        setup
            .telegram
            .group_message(GROUP, FRIEND, "just chatting among ourselves"),
    );
    setup
        .telegram
        .push_update(setup.telegram.group_message(GROUP, FRIEND, "@fake_bot what time is it"));
    let reply = sent_where(&setup.telegram, |s| s.chat_id == GROUP).await;
    assert_eq!(reply.text, "echo: what time is it", "the mention is taken out");
    let asked: Vec<String> = setup.llm.requests().iter().map(last_user_text).collect();
    assert_eq!(asked, ["what time is it"], "the other message never reached the model");
}

#[tokio::test]
async fn a_refused_token_shows_in_status_and_the_socket_goes_on() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let (_token_dir, token_file) = token_file("999:revoked");
    let api_url = telegram.base_url();
    let daemon = TestDaemon::start_with(
        &llm,
        |config| telegram_on(config, api_url, token_file, OWNER),
        Vec::new(),
    )
    .await;
    let status = || daemon.daemon.as_ref().unwrap().status();
    let telegram_state = |status: &Value| {
        status["gateways"]
            .as_array()
            .and_then(|all| all.iter().find(|g| g["name"] == "telegram").cloned())
            .unwrap_or_default()
    };
    let deadline = tokio::time::Instant::now() + WAIT;
    // Health is a state, not an event: look until it turns, within the limit.
    while telegram_state(&status())["state"] != "down" {
        assert!(tokio::time::Instant::now() < deadline, "{:#}", status());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let state = telegram_state(&status());
    assert!(
        state["detail"].as_str().unwrap().contains("refused the token"),
        "{state}"
    );
    assert!(
        !status().to_string().contains("999:revoked"),
        "the token is never shown"
    );
    let mut client = daemon.client("still-here").await;
    let (_, text) = support::harness::ask(&mut client, "hello").await;
    assert_eq!(text, "echo: hello", "the other gateways go on");
}

/// The approval tests' model, which once a tool answered says what it returned.
fn model_telling_tool_results(request: &Value) -> support::fake_llm::Script {
    let last = support::fake_llm::last_message(request);
    if last["role"] == "tool" {
        return support::fake_llm::Script::Reply(format!(
            "tool said: {}",
            last["content"].as_str().unwrap_or_default()
        ));
    }
    model(request)
}

#[tokio::test]
async fn always_on_the_button_runs_it_and_the_same_call_then_runs_without_a_prompt() {
    let setup = start().await;
    setup.llm.set_responder(model_telling_tool_results);
    setup
        .telegram
        .push_update(setup.telegram.text_message(OWNER, OWNER, "please record the milk"));
    let prompt = sent_where(&setup.telegram, |s| s.reply_markup.is_some()).await;
    assert!(prompt.text.contains("Always also lets record "), "{}", prompt.text);
    let always = prompt.reply_markup.as_ref().unwrap()["inline_keyboard"][0][1]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(always.starts_with("always:"), "{always}");
    let press = setup.telegram.callback_query(OWNER, OWNER, prompt.message_id, &always);
    setup.telegram.push_update(press);
    sent_where(&setup.telegram, |s| s.text.starts_with("final: ")).await;
    let made = sent_where(&setup.telegram, |s| s.text.contains("Standing rule ")).await;
    assert!(
        made.text.contains(&format!("run without asking in telegram:{OWNER}")),
        "{}",
        made.text
    );
    assert_eq!(setup.record.calls(), 1);

    setup
        .telegram
        .push_update(setup.telegram.text_message(OWNER, OWNER, "please record the milk"));
    let ran = sent_where(&setup.telegram, |s| s.text.starts_with("tool said: ")).await;
    assert!(ran.text.contains("recorded #2"), "{}", ran.text);
    let prompts = setup
        .telegram
        .sent()
        .iter()
        .filter(|s| s.reply_markup.is_some())
        .count();
    assert_eq!(prompts, 1, "no second prompt");
}

#[tokio::test]
async fn always_pressed_by_someone_who_may_not_approve_is_refused_like_approve() {
    let setup = start().await;
    let ask = setup
        .telegram
        .group_message(GROUP, FRIEND, "@fake_bot please record the eggs");
    setup.telegram.push_update(ask);
    let prompt = sent_where(&setup.telegram, |s| s.reply_markup.is_some()).await;
    let buttons = &prompt.reply_markup.as_ref().unwrap()["inline_keyboard"][0];
    for (n, button) in [1, 0].into_iter().enumerate() {
        let data = buttons[button]["callback_data"].as_str().unwrap();
        let press = setup.telegram.callback_query(FRIEND, GROUP, prompt.message_id, data);
        setup.telegram.push_update(press);
        let answers = setup.telegram.wait_for_calls("answercallbackquery", n + 1, WAIT).await;
        assert!(
            answers[n]["text"]
                .as_str()
                .unwrap_or_default()
                .contains("not allowed to approve"),
            "{data}: {answers:?}"
        );
        assert_eq!(answers[n]["show_alert"], true, "{answers:?}");
    }
    let answers = setup.telegram.wait_for_calls("answercallbackquery", 2, WAIT).await;
    assert_eq!(
        answers[0]["text"], answers[1]["text"],
        "Always is refused as Approve is"
    );
    let mut cli = setup._daemon.client("cli").await;
    assert_eq!(
        cli.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Rules)
            .await
            .expect("rules"),
        serde_json::json!({ "rules": [] })
    );
    assert_eq!(setup.record.calls(), 0);
}
