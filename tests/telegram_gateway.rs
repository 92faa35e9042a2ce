//! The Telegram gateway against the fake Bot API server: polling, offsets,
//! acknowledgements, refusals, delivery, buttons, failures and shutdown.
//!
//! Each test runs a real [`TelegramGateway`] over HTTP against
//! [`FakeTelegram`], with a real intake whose queue the test answers
//! itself ([`CoreSide`]), playing the core. Every wait is on an event, under
//! a timeout.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::{
    Ack, ApprovalToken, Deliver, GatewayError, HealthState, InboundBody, Listen, Outbound, OutboundBody, Refusal,
    ReplyKind,
};
use passepartout_gateway_testing::{CoreSide, Listening, build};
use passepartout_telegram::{MemoryOffsetStore, OffsetStore, TelegramGateway, TelegramSettings, check, utf16_len};
use serde_json::Value;
use support::fake_telegram::{FakeFailure, FakeTelegram, NOT_JSON_MARKER};
use support::logs::LogCapture;

const TOKEN: &str = "424242:SECRET-tok3n_for-tests";
const WAIT: Duration = Duration::from_secs(5);

fn settings(fake: &FakeTelegram) -> TelegramSettings {
    TelegramSettings {
        poll_timeout_s: 10,
        refusal: "This assistant is private.".to_owned(),
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        conflict_backoff: Duration::from_millis(10),
        busy_backoff: Duration::from_millis(10),
        ..TelegramSettings::new(TOKEN).with_api_url(fake.base_url())
    }
}

/// A running gateway.
type Running = Listening<TelegramGateway>;

fn run(settings: TelegramSettings, store: Arc<MemoryOffsetStore>) -> (Running, CoreSide) {
    let (running, queue) = Listening::start(TelegramGateway::new(settings, store), 4);
    (running, CoreSide::new(queue))
}

fn int(params: &Value, name: &str) -> Option<i64> {
    match &params[name] {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// Waits for a getUpdates call that carries `offset`, which confirms every
/// update before it to Telegram.
async fn wait_for_poll_with_offset(fake: &FakeTelegram, offset: i64) {
    let mut n = 1;
    loop {
        let calls = fake.wait_for_calls("getUpdates", n, WAIT).await;
        if calls.iter().any(|call| int(call, "offset") == Some(offset)) {
            return;
        }
        n = calls.len() + 1;
    }
}

/// Waits until the gateway's health is `state` (health has no change event).
async fn wait_for_health(gateway: &TelegramGateway, state: HealthState) {
    let reached = tokio::time::timeout(WAIT, async {
        while gateway.health().state != state {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    assert!(
        reached.is_ok(),
        "health never became {state:?}; it is {:?}",
        gateway.health()
    );
}

fn message_id_of(update: &Value) -> i64 {
    update["message"]["message_id"].as_i64().unwrap()
}

fn outbound(chat: i64, in_reply_to: Option<i64>, body: OutboundBody) -> Outbound {
    let in_reply_to = in_reply_to.map(|id| id.to_string());
    build::outbound(
        build::conversation("telegram", &chat.to_string()),
        in_reply_to.as_deref(),
        body,
    )
}

#[tokio::test]
async fn a_text_message_is_submitted_and_confirmed_only_after_the_ack() {
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    let update = fake.text_message(42, 7, "hello there");
    let message_id = message_id_of(&update);
    let update_id = fake.push_update(update);
    let (inbound, ack) = core.next().await;

    assert_eq!(inbound.conversation.gateway.as_str(), "telegram");
    assert_eq!(inbound.conversation.chat.as_str(), "42");
    assert_eq!(inbound.sender.id.as_str(), "7");
    assert_eq!(inbound.message_id.as_str(), message_id.to_string());
    assert_eq!(
        inbound.body,
        InboundBody::Text {
            text: "hello there".into()
        }
    );
    // Not acknowledged yet: neither saved nor confirmed to Telegram.
    assert_eq!(store.load(), None);
    assert!(
        fake.calls("getUpdates")
            .iter()
            .all(|call| int(call, "offset").is_none_or(|offset| offset <= update_id)),
        "confirmed before the ack: {:?}",
        fake.calls("getUpdates")
    );

    ack.send(Ack::Accepted).unwrap();
    wait_for_poll_with_offset(&fake, update_id + 1).await;
    assert_eq!(store.load(), Some(update_id + 1));
    wait_for_health(&running.gateway, HealthState::Up).await;
    running.stop().await.unwrap();
}

#[tokio::test]
async fn updates_the_gateway_does_not_handle_are_skipped_without_stalling_the_offset() {
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    fake.push_update(fake.unknown_update());
    fake.push_update(fake.poll_update());
    let last = fake.push_update(fake.text_message(5, 5, "after the odd ones"));
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    let inbound = core.answer(Ack::Accepted).await;
    assert_eq!(
        inbound.body,
        InboundBody::Text {
            text: "after the odd ones".into()
        }
    );
    wait_for_poll_with_offset(&fake, last + 1).await;
    assert_eq!(fake.pending_updates(), 0);
    running.stop().await.unwrap();
}

/// Whether a getUpdates call asked for one update only.
fn asks_for_one(call: &Value) -> bool {
    int(call, "limit") == Some(1)
}

#[tokio::test]
async fn an_update_nested_too_deep_is_skipped_and_counted_not_the_batch() {
    let logs = LogCapture::start();
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    fake.push_update(fake.text_message(5, 5, "before"));
    let poison = fake.push_update(fake.nested_message(5, 5, 200));
    let last = fake.push_update(fake.text_message(5, 5, "after"));
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    let before = core.answer(Ack::Accepted).await;
    assert_eq!(before.body, InboundBody::Text { text: "before".into() });
    let after = core.answer(Ack::Accepted).await;
    assert_eq!(after.body, InboundBody::Text { text: "after".into() });
    wait_for_poll_with_offset(&fake, last + 1).await;
    assert_eq!(store.load(), Some(last + 1));
    assert_eq!(fake.pending_updates(), 0);
    assert!(
        !fake.calls("getUpdates").iter().any(asks_for_one),
        "the update was found without asking one at a time"
    );
    let detail = running.gateway.health().detail.unwrap_or_default();
    assert!(detail.contains("skipped 1 unreadable update"), "{detail}");
    running.stop().await.unwrap();
    assert!(core.is_idle(), "the nested update never reached the core");

    let text = logs.text();
    let skipped: Vec<&str> = text.lines().filter(|line| line.contains("cannot be read")).collect();
    assert_eq!(skipped.len(), 1, "{text}");
    assert!(skipped[0].contains(&format!("update_id={poison}")), "{}", skipped[0]);
    assert!(!text.contains("[[[["), "the update's content was logged:\n{text}");
}

#[tokio::test]
async fn an_answer_that_is_not_json_is_a_passing_failure() {
    let logs = LogCapture::start();
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    fake.fail_next("getUpdates", FakeFailure::NotJson);
    let id = fake.push_update(fake.text_message(6, 6, "through the proxy"));
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    let inbound = core.answer(Ack::Accepted).await;
    assert_eq!(
        inbound.body,
        InboundBody::Text {
            text: "through the proxy".into()
        }
    );
    wait_for_poll_with_offset(&fake, id + 1).await;
    wait_for_health(&running.gateway, HealthState::Up).await;
    assert_eq!(running.gateway.health().detail, None, "nothing was skipped");
    running.stop().await.unwrap();

    let text = logs.text();
    assert!(text.contains("unreadable getUpdates answer"), "{text}");
    assert!(!text.contains(NOT_JSON_MARKER), "the page was logged:\n{text}");
}

#[tokio::test]
async fn an_answer_unreadable_as_a_whole_is_isolated_one_update_at_a_time() {
    let fake = FakeTelegram::start(TOKEN).await;
    let first = fake.push_update(fake.text_message(7, 7, "first"));
    let broken = fake.push_raw_update(r#"{"update_id":{ID},"message":{"message_id":99,"text":"cut off"#);
    let last = fake.push_update(fake.text_message(7, 7, "last"));
    // A gateway that ran before: it knows where the updates start.
    let store = Arc::new(MemoryOffsetStore::new(Some(first)));
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    assert_eq!(
        core.answer(Ack::Accepted).await.body,
        InboundBody::Text { text: "first".into() }
    );
    assert_eq!(
        core.answer(Ack::Accepted).await.body,
        InboundBody::Text { text: "last".into() }
    );
    wait_for_poll_with_offset(&fake, last + 1).await;
    assert_eq!(store.load(), Some(last + 1));

    let calls = fake.calls("getUpdates");
    let single = |offset: i64| {
        calls
            .iter()
            .any(|call| asks_for_one(call) && int(call, "offset") == Some(offset))
    };
    assert!(single(first), "the good update before was asked alone: {calls:?}");
    assert!(single(broken), "the broken update was asked alone: {calls:?}");
    assert!(
        calls
            .iter()
            .any(|call| !asks_for_one(call) && int(call, "offset") == Some(broken + 1)),
        "after skipping it, whole batches again: {calls:?}"
    );
    let detail = running.gateway.health().detail.unwrap_or_default();
    assert!(detail.contains("skipped 1 unreadable update"), "{detail}");
    running.stop().await.unwrap();
    assert!(core.is_idle(), "the broken update never reached the core");
}

#[tokio::test]
async fn a_restart_neither_loses_nor_repeats_an_update() {
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());

    let (first, mut core) = run(settings(&fake), Arc::clone(&store));
    let one = fake.push_update(fake.text_message(3, 3, "one"));
    assert_eq!(
        core.answer(Ack::Accepted).await.body,
        InboundBody::Text { text: "one".into() }
    );
    // The gateway saves before it polls again.
    wait_for_poll_with_offset(&fake, one + 1).await;
    first.stop().await.unwrap();

    // Queued while no gateway runs; "one" may or may not be confirmed to Telegram yet.
    let two = fake.push_update(fake.text_message(3, 3, "two"));
    let (second, mut core) = run(settings(&fake), Arc::clone(&store));
    assert_eq!(
        core.answer(Ack::Accepted).await.body,
        InboundBody::Text { text: "two".into() },
        "the next message after a restart is the one not yet acknowledged"
    );
    wait_for_poll_with_offset(&fake, two + 1).await;
    assert_eq!(store.load(), Some(two + 1));
    second.stop().await.unwrap();
    assert!(core.is_idle(), "nothing was submitted twice");
}

#[tokio::test]
async fn busy_holds_the_offset_until_the_core_takes_the_message() {
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    let first = fake.push_update(fake.text_message(8, 8, "first"));
    let second = fake.push_update(fake.text_message(8, 8, "second"));
    assert_eq!(
        core.answer(Ack::Accepted).await.body,
        InboundBody::Text { text: "first".into() }
    );
    let busy = core.answer(Ack::Busy).await;
    assert_eq!(busy.body, InboundBody::Text { text: "second".into() });

    // The same message comes again; the offset stayed just past "first".
    let again = core.answer(Ack::Accepted).await;
    assert_eq!(again.message_id, busy.message_id);
    assert!(
        fake.calls("getUpdates")
            .iter()
            .all(|call| int(call, "offset").is_none_or(|offset| offset <= second)),
        "the busy message was confirmed: {:?}",
        fake.calls("getUpdates")
    );
    assert!(store.load().is_none_or(|offset| offset <= second));
    assert!(
        fake.calls("getUpdates")
            .iter()
            .any(|call| int(call, "offset") == Some(first + 1))
    );

    wait_for_poll_with_offset(&fake, second + 1).await;
    assert_eq!(store.load(), Some(second + 1));
    running.stop().await.unwrap();
}

#[tokio::test]
async fn someone_not_allowed_is_refused_once_not_once_per_message() {
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));
    let not_allowed = Ack::Refused {
        reason: Refusal::NotAllowed,
    };

    fake.push_update(fake.text_message(99, 99, "hi"));
    fake.push_update(fake.text_message(99, 99, "hello?"));
    let last = fake.push_update(fake.text_message(1, 1, "an allowed one"));
    core.answer(not_allowed.clone()).await;
    core.answer(not_allowed).await;
    // The refusals are sent before the gateway moves on to the next update.
    core.answer(Ack::Accepted).await;

    let sent = fake.sent();
    assert_eq!(sent.len(), 1, "one refusal: {sent:?}");
    assert_eq!(sent[0].chat_id, 99);
    assert_eq!(sent[0].text, "This assistant is private.");
    wait_for_poll_with_offset(&fake, last + 1).await;
    running.stop().await.unwrap();
}

#[tokio::test]
async fn a_message_too_large_is_answered_and_passed() {
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    let update = fake.text_message(12, 12, "a very long paste");
    let message_id = message_id_of(&update);
    let id = fake.push_update(update);
    core.answer(Ack::Refused {
        reason: Refusal::TooLarge,
    })
    .await;
    let sent = fake.wait_for_sent(1, WAIT).await;
    assert_eq!(sent[0].chat_id, 12);
    assert_eq!(sent[0].reply_to_message_id, Some(message_id));
    assert!(sent[0].text.contains("too long"), "{}", sent[0].text);
    wait_for_poll_with_offset(&fake, id + 1).await;
    running.stop().await.unwrap();
}

#[tokio::test]
async fn a_long_reply_is_split_and_the_first_part_quotes_the_question() {
    let fake = FakeTelegram::start(TOKEN).await;
    let question = fake.text_message(21, 21, "tell me everything");
    let question_id = message_id_of(&question);
    fake.push_update(question);
    let gateway = TelegramGateway::new(settings(&fake), Arc::new(MemoryOffsetStore::default()));

    let text: String = (0..1500).map(|i| format!("line {i} é😀\n")).collect();
    assert!(utf16_len(&text) > 2 * 4096);
    let delivered = gateway
        .deliver(&outbound(
            21,
            Some(question_id),
            OutboundBody::Text {
                text: text.clone(),
                kind: ReplyKind::Answer,
            },
        ))
        .await
        .expect("delivered");

    let sent = fake.sent();
    assert!(sent.len() >= 3, "{} parts", sent.len());
    // Each part loses the line break it was cut after (Telegram trims it anyway).
    let rejoined = sent.iter().map(|s| s.text.as_str()).collect::<Vec<_>>().join("\n");
    assert!(
        rejoined == text.trim_end(),
        "the parts, joined at the cuts, are the text"
    );
    assert!(sent.iter().all(|s| utf16_len(&s.text) <= 4096 && s.chat_id == 21));
    assert_eq!(sent[0].reply_to_message_id, Some(question_id));
    assert!(sent[1..].iter().all(|s| s.reply_to_message_id.is_none()));
    assert!(
        sent.iter().all(|s| s.params.get("parse_mode").is_none()),
        "never a parse mode Telegram could refuse"
    );
    let ids: Vec<String> = sent.iter().map(|s| s.message_id.to_string()).collect();
    assert_eq!(
        delivered.message_ids.iter().map(|id| id.as_str()).collect::<Vec<_>>(),
        ids
    );
}

#[tokio::test]
async fn an_approval_prompt_has_approve_always_and_deny_buttons() {
    let fake = FakeTelegram::start(TOKEN).await;
    let gateway = TelegramGateway::new(settings(&fake), Arc::new(MemoryOffsetStore::default()));
    let delivered = gateway
        .deliver(&outbound(
            31,
            None,
            OutboundBody::ApprovalPrompt {
                token: ApprovalToken::new("K7PX2Q").unwrap(),
                action: "shell: rm -rf build".into(),
                text: "Run `rm -rf build`? Approve or deny.".into(),
            },
        ))
        .await
        .expect("delivered");

    let sent = fake.sent();
    assert_eq!(sent.len(), 1);
    assert_eq!(delivered.message_ids[0].as_str(), sent[0].message_id.to_string());
    // The prompt's Markdown is rendered: the command is a code entity.
    assert_eq!(sent[0].text, "Run rm -rf build? Approve or deny.");
    assert_eq!(sent[0].params["entities"][0]["type"], "code", "{:?}", sent[0].params);
    let markup = sent[0].reply_markup.as_ref().expect("a keyboard");
    let buttons: Vec<(String, String)> = markup["inline_keyboard"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().clone())
        .map(|b| {
            (
                b["text"].as_str().unwrap().to_owned(),
                b["callback_data"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        buttons,
        [
            ("Approve".to_owned(), "approve:K7PX2Q".to_owned()),
            ("Always".to_owned(), "always:K7PX2Q".to_owned()),
            ("Deny".to_owned(), "deny:K7PX2Q".to_owned())
        ]
    );
}

#[tokio::test]
async fn a_decided_prompt_is_edited_once_and_a_second_edit_is_no_failure() {
    let fake = FakeTelegram::start(TOKEN).await;
    let gateway = TelegramGateway::new(settings(&fake), Arc::new(MemoryOffsetStore::default()));
    let token = ApprovalToken::new("K7PX2Q").unwrap();
    let prompt = OutboundBody::ApprovalPrompt {
        token: token.clone(),
        action: "shell: ls".into(),
        text: "Run `ls`?".into(),
    };
    let delivered = gateway.deliver(&outbound(31, None, prompt)).await.expect("delivered");
    let decided = OutboundBody::ApprovalDecided {
        token,
        prompt: delivered.message_ids[0].clone(),
        text: "shell: ls (K7PX2Q)\nApproved by telegram:31 (button).".into(),
    };
    for _ in 0..2 {
        // The second time Telegram answers "message is not modified".
        let edited = gateway.deliver(&outbound(31, None, decided.clone())).await;
        assert_eq!(edited.expect("edited").message_ids, []);
    }
    let edits = fake.calls("editmessagetext");
    assert_eq!(edits.len(), 2);
    assert_eq!(
        edits[0]["text"],
        "shell: ls (K7PX2Q)\nApproved by telegram:31 (button)."
    );
    assert!(edits[0].get("reply_markup").is_none(), "the buttons go: {edits:?}");
    let missing = OutboundBody::ApprovalDecided {
        token: ApprovalToken::new("K7PX2Q").unwrap(),
        prompt: passepartout_gateway::MessageId::new("not-a-number").unwrap(),
        text: "x".into(),
    };
    assert!(matches!(
        gateway.deliver(&outbound(31, None, missing)).await,
        Err(GatewayError::Rejected { .. })
    ));
}

#[tokio::test]
async fn a_button_press_becomes_a_button_inbound_and_is_answered() {
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    let gateway_for_prompt = TelegramGateway::new(settings(&fake), Arc::new(MemoryOffsetStore::default()));
    let prompt = gateway_for_prompt
        .deliver(&outbound(
            44,
            None,
            OutboundBody::ApprovalPrompt {
                token: ApprovalToken::new("K7PX2Q").unwrap(),
                action: "x".into(),
                text: "Allow?".into(),
            },
        ))
        .await
        .unwrap();
    let prompt_id: i64 = prompt.message_ids[0].as_str().parse().unwrap();
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    let press = fake.callback_query(44, 44, prompt_id, "approve:K7PX2Q");
    let query_id = press["callback_query"]["id"].as_str().unwrap().to_owned();
    let update_id = fake.push_update(press);
    let inbound = core.answer(Ack::Accepted).await;
    assert_eq!(
        inbound.body,
        InboundBody::Button {
            data: "approve:K7PX2Q".into()
        }
    );
    assert_eq!(inbound.reply_to.unwrap().as_str(), prompt_id.to_string());
    assert_eq!(inbound.sender.id.as_str(), "44");

    let answers = fake.wait_for_calls("answerCallbackQuery", 1, WAIT).await;
    assert_eq!(answers[0]["callback_query_id"], query_id.as_str());
    wait_for_poll_with_offset(&fake, update_id + 1).await;
    running.stop().await.unwrap();
}

#[tokio::test]
async fn a_conflict_is_reported_once_and_polling_recovers() {
    let fake = FakeTelegram::start(TOKEN).await;
    let logs = LogCapture::start();
    fake.fail_next("getUpdates", FakeFailure::Conflict);
    fake.fail_next("getUpdates", FakeFailure::Conflict);
    let store = Arc::new(MemoryOffsetStore::default());
    let slow_conflicts = TelegramSettings {
        conflict_backoff: Duration::from_millis(300),
        ..settings(&fake)
    };
    let (running, mut core) = run(slow_conflicts, Arc::clone(&store));

    fake.wait_for_calls("getUpdates", 1, WAIT).await;
    wait_for_health(&running.gateway, HealthState::Degraded).await;
    let detail = running.gateway.health().detail.unwrap_or_default();
    assert!(detail.contains("another poller or a webhook"), "{detail}");

    let id = fake.push_update(fake.text_message(2, 2, "still there?"));
    core.answer(Ack::Accepted).await;
    wait_for_poll_with_offset(&fake, id + 1).await;
    wait_for_health(&running.gateway, HealthState::Up).await;
    // After a conflict the gateway looks for a webhook again.
    assert!(fake.calls("getWebhookInfo").len() >= 2);
    running.stop().await.unwrap();

    let warnings = logs
        .text()
        .lines()
        .filter(|line| line.contains("WARN") && line.contains("another poller or a webhook"))
        .count();
    assert_eq!(warnings, 1, "{}", logs.text());
}

#[tokio::test]
async fn retry_after_is_honoured_when_polling_and_reported_when_sending() {
    let fake = FakeTelegram::start(TOKEN).await;
    fake.fail_next("getUpdates", FakeFailure::RetryAfter(1));
    let store = Arc::new(MemoryOffsetStore::default());
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    fake.wait_for_calls("getUpdates", 2, WAIT).await;
    // Measured where the fake took the calls: the refusal was answered
    // after the first came, so the second cannot come sooner than the wait
    // after it, however late either is seen here.
    let polls: Vec<_> = fake.timed_calls("getUpdates").into_iter().map(|(at, _)| at).collect();
    let waited = polls[1] - polls[0];
    assert!(waited >= Duration::from_secs(1), "polled again after {waited:?}");
    let id = fake.push_update(fake.text_message(6, 6, "after the pause"));
    core.answer(Ack::Accepted).await;
    wait_for_poll_with_offset(&fake, id + 1).await;
    running.stop().await.unwrap();

    fake.fail_next("sendMessage", FakeFailure::RetryAfter(7));
    let error = running_gateway(&fake)
        .deliver(&outbound(
            6,
            None,
            OutboundBody::Text {
                text: "hi".into(),
                kind: ReplyKind::Answer,
            },
        ))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        GatewayError::RateLimited {
            retry_after: Duration::from_secs(7)
        }
    );
}

fn running_gateway(fake: &FakeTelegram) -> Arc<TelegramGateway> {
    TelegramGateway::new(settings(fake), Arc::new(MemoryOffsetStore::default()))
}

#[tokio::test]
async fn delivery_to_a_missing_chat_is_rejected_for_good() {
    let fake = FakeTelegram::start(TOKEN).await;
    fake.fail_next(
        "sendMessage",
        FakeFailure::BadRequest("Bad Request: chat not found".into()),
    );
    fake.fail_next(
        "sendMessage",
        FakeFailure::BadRequest("Forbidden: bot was blocked by the user".into()),
    );
    let gateway = running_gateway(&fake);
    let hello = outbound(
        77,
        None,
        OutboundBody::Text {
            text: "hi".into(),
            kind: ReplyKind::Answer,
        },
    );
    for _ in 0..2 {
        let error = gateway.deliver(&hello).await.unwrap_err();
        assert!(matches!(error, GatewayError::Rejected { .. }), "{error:?}");
    }
    gateway.typing(&hello.conversation).await.expect("typing works");
    let actions = fake.calls("sendChatAction");
    assert_eq!(actions.len(), 1);
    assert_eq!(actions[0]["action"], "typing");
}

#[tokio::test]
async fn a_refused_token_takes_the_gateway_down() {
    let fake = FakeTelegram::start(TOKEN).await;
    let store = Arc::new(MemoryOffsetStore::default());
    let wrong = TelegramSettings {
        token: "424242:WRONG".into(),
        ..settings(&fake)
    };
    let (running, _core) = run(wrong.clone(), Arc::clone(&store));
    let result = tokio::time::timeout(WAIT, running.task)
        .await
        .expect("listen gives up")
        .unwrap();
    assert!(matches!(result, Err(GatewayError::Unauthorized { .. })), "{result:?}");
    let health = running.gateway.health();
    assert_eq!(health.state, HealthState::Down);
    assert_eq!(health.detail.as_deref(), Some("Telegram refused the token"));

    // A token revoked while polling.
    fake.fail_next("getUpdates", FakeFailure::Unauthorized);
    let (running, _core) = run(settings(&fake), Arc::clone(&store));
    let result = tokio::time::timeout(WAIT, running.task).await.unwrap().unwrap();
    assert!(matches!(result, Err(GatewayError::Unauthorized { .. })), "{result:?}");
    assert_eq!(running.gateway.health().state, HealthState::Down);

    // And what doctor says.
    assert_eq!(check(&settings(&fake)).await, Ok("@fake_bot".to_owned()));
    let refused = check(&wrong).await.unwrap_err();
    assert!(refused.contains("Telegram refused the token"), "{refused}");
    assert!(!refused.contains("WRONG"), "{refused}");
}

#[tokio::test]
async fn a_configured_proxy_carries_the_bot_api_requests() {
    // The fake takes the proxy's part: a request through a plain-HTTP proxy
    // names the whole URL, and the fake answers it by its path.
    let fake = FakeTelegram::start(TOKEN).await;
    let through = TelegramSettings {
        proxy: Some(fake.base_url()),
        ..TelegramSettings::new(TOKEN).with_api_url("http://api.telegram.invalid")
    };
    assert_eq!(check(&through).await, Ok("@fake_bot".to_owned()));
    let bad = TelegramSettings {
        proxy: Some("not a proxy".into()),
        ..through
    };
    let refused = check(&bad).await.unwrap_err();
    assert!(refused.contains("telegram.proxy"), "{refused}");
}

#[tokio::test]
async fn a_webhook_is_deleted_at_start() {
    let fake = FakeTelegram::start(TOKEN).await;
    fake.set_webhook("https://example.com/hook");
    let store = Arc::new(MemoryOffsetStore::default());
    let (running, mut core) = run(settings(&fake), Arc::clone(&store));

    fake.wait_for_calls("deleteWebhook", 1, WAIT).await;
    let id = fake.push_update(fake.text_message(4, 4, "polling now"));
    core.answer(Ack::Accepted).await;
    wait_for_poll_with_offset(&fake, id + 1).await;
    assert_eq!(fake.calls("deleteWebhook").len(), 1);
    let commands = fake.calls("setMyCommands");
    assert_eq!(commands.len(), 1);
    let names: Vec<&str> = commands[0]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "start",
            "help",
            "status",
            "model",
            "usage",
            "tools",
            "new",
            "summary",
            "stop",
            "approvals",
            "rules",
            "loops",
            "forget",
            "link",
            "unlink",
            "handoff",
            "continue",
            "here"
        ]
    );
    running.stop().await.unwrap();
}

#[tokio::test]
async fn shutdown_ends_a_long_poll_promptly() {
    let fake = FakeTelegram::start(TOKEN).await;
    let long = TelegramSettings {
        poll_timeout_s: 30,
        ..settings(&fake)
    };
    let (running, _core) = run(long, Arc::new(MemoryOffsetStore::default()));
    fake.wait_for_calls("getUpdates", 1, WAIT).await;
    let answered = fake.polls_answered();
    running.shutdown.cancel();
    // The poll waits 30 s for updates, longer than the failure bound: a
    // listener that waited for its answer fails here.
    let result = tokio::time::timeout(WAIT, running.task)
        .await
        .expect("listen returns without waiting for the long poll's answer")
        .unwrap();
    assert_eq!(result, Ok(()));
    assert_eq!(
        fake.polls_answered(),
        answered,
        "the long poll under way was given up, not waited for"
    );
}

#[tokio::test]
async fn the_token_never_appears_in_logs_or_errors() {
    let logs = LogCapture::start();
    let fake = FakeTelegram::start(TOKEN).await;
    let settings = settings(&fake);
    assert!(!format!("{settings:?}").contains("SECRET"));

    let store = Arc::new(MemoryOffsetStore::default());
    fake.fail_next("getUpdates", FakeFailure::Conflict);
    let (running, mut core) = run(settings.clone(), Arc::clone(&store));
    fake.push_update(fake.text_message(9, 9, "hi"));
    core.answer(Ack::Accepted).await;
    assert!(!format!("{:?}", running.gateway).contains("SECRET"));

    // Telegram goes away: network errors, whose text names the URL with the token.
    fake.shutdown();
    wait_for_health(&running.gateway, HealthState::Degraded).await;
    let error = running
        .gateway
        .deliver(&outbound(
            9,
            None,
            OutboundBody::Text {
                text: "anyone?".into(),
                kind: ReplyKind::Answer,
            },
        ))
        .await
        .unwrap_err();
    assert!(
        matches!(error, GatewayError::Unreachable { .. }),
        "nothing was sent: {error:?}"
    );
    assert!(!format!("{error} {error:?}").contains("SECRET"), "{error:?}");
    let health = running.gateway.health();
    assert!(!format!("{health:?}").contains("SECRET"), "{health:?}");
    running.stop().await.unwrap();
    let down = check(&settings).await.unwrap_err();
    assert!(!down.contains("SECRET"), "{down}");

    let text = logs.text();
    assert!(text.contains("Telegram poll failed"), "the failure was logged: {text}");
    assert!(!text.contains("SECRET"), "the token leaked into the logs:\n{text}");
}
