//! Delivery that follows a linked person, end to end through the real
//! daemon, against the fake Bot API and the fake signal-cli: a reminder
//! Ada sets on Telegram comes to Signal once she said `/here` there; with
//! the Bot API down, one set on Telegram goes on to Signal, says once where
//! it was meant to go, and is delivered there once.

use crate::support;

use serde_json::{Value, json};
use support::fake_llm::{Script, last_message, last_user_text};
use support::harness::WAIT;
use support::linked_pair::{ADA_TELEGRAM, BOB_TELEGRAM, Setup, linked};

/// Sets a reminder on "remind me soon", due long after any test ends: the
/// test makes it fire ([`fire`]) once it has set up what it checks.
fn model(request: &Value) -> Script {
    if last_message(request)["role"] == "tool" {
        return Script::Reply("I will remind you.".into());
    }
    match last_user_text(request).as_str() {
        "remind me soon" => Script::ToolCall {
            name: "remind".into(),
            arguments: json!({ "name": "tea", "when": "in 6 hours", "message": "Tea is ready" }).to_string(),
        },
        other => Script::Reply(format!("echo: {other}")),
    }
}

/// Ada asks for the reminder on Telegram.
async fn remind_on_telegram(setup: &Setup) {
    let asked = setup.on_telegram(ADA_TELEGRAM, "remind me soon").await;
    assert_eq!(asked.text, "I will remind you.");
}

/// Runs the reminder now, as `passepartout loops run` does.
async fn fire(setup: &Setup) {
    let (code, stdout, stderr) = setup.cli(&["loops", "run", "tea"]).await;
    assert_eq!(code, Some(0), "{stdout}{stderr}");
}

/// Waits until nothing waits in the outbox, within [`WAIT`].
async fn outbox_empties(setup: &mut Setup) {
    let mut client = setup.daemon.client("ops").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let status = client
            .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status)
            .await
            .unwrap();
        if status["store"]["outbox"] == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the outbox stays full: {status}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

fn teas(texts: &[String]) -> usize {
    texts.iter().filter(|text| text.contains("Tea is ready")).count()
}

#[tokio::test]
async fn a_reminder_set_on_telegram_comes_to_the_chat_chosen_with_here() {
    let mut setup = linked(model).await;
    let bobs = setup.on_telegram(BOB_TELEGRAM, "/here").await;
    assert!(bobs.text.contains("send /link here"), "not linked: {}", bobs.text);
    let here = setup.on_signal("/here").await;
    assert_eq!(
        here,
        "Reminders and background results come here now. When Signal cannot deliver them, they go to your next \
         linked chat."
    );
    remind_on_telegram(&setup).await;
    let before = setup.signal_texts().len();
    fire(&setup).await;
    assert_eq!(setup.signal_text(before + 1).await, "Tea is ready");
    outbox_empties(&mut setup).await;
    let on_telegram: Vec<String> = setup.sent_to(ADA_TELEGRAM).into_iter().map(|s| s.text).collect();
    assert_eq!(teas(&on_telegram), 0, "not on Telegram too: {on_telegram:?}");
    assert_eq!(teas(&setup.signal_texts()), 1);
    setup.daemon.stop().await;
}

#[tokio::test]
async fn with_the_bot_api_down_a_telegram_reminder_goes_on_to_signal_once() {
    let mut setup = linked(model).await;
    remind_on_telegram(&setup).await;
    let before = setup.signal_texts().len();
    setup.telegram.shutdown();
    fire(&setup).await;
    let tea = setup.signal_text(before + 1).await;
    assert_eq!(
        tea,
        "(Telegram could not deliver this, so it comes here.)\n\nTea is ready"
    );
    outbox_empties(&mut setup).await;
    assert_eq!(teas(&setup.signal_texts()), 1, "{:?}", setup.signal_texts());
    setup.daemon.stop().await;
}
