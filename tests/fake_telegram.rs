//! Self-test of the fake Telegram Bot API server: the shapes and semantics the
//! Telegram gateway's end-to-end tests rely on, checked over real HTTP.

use crate::support;

use std::time::Duration;

use reqwest::StatusCode;
use serde_json::{Value, json};
use support::fake_telegram::{FakeFailure, FakeTelegram};

const TOKEN: &str = "123456:TEST-token_abc";
const WAIT: Duration = Duration::from_secs(5);

async fn call(fake: &FakeTelegram, method: &str, params: Value) -> (StatusCode, Value) {
    call_as(fake, TOKEN, method, params).await
}

async fn call_as(fake: &FakeTelegram, token: &str, method: &str, params: Value) -> (StatusCode, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/bot{token}/{method}", fake.base_url()))
        .json(&params)
        .send()
        .await
        .expect("request reaches the fake");
    let status = response.status();
    (status, response.json().await.expect("the fake answers JSON"))
}

/// The `result` of a successful call.
async fn ok(fake: &FakeTelegram, method: &str, params: Value) -> Value {
    let (status, body) = call(fake, method, params).await;
    assert_eq!(status, StatusCode::OK, "{method}: {body}");
    assert_eq!(body["ok"], true, "{method}: {body}");
    body["result"].clone()
}

fn update_ids(result: &Value) -> Vec<i64> {
    result
        .as_array()
        .expect("an array of updates")
        .iter()
        .map(|u| u["update_id"].as_i64().unwrap())
        .collect()
}

#[tokio::test]
async fn get_me_has_every_field_teloxide_requires() {
    let fake = FakeTelegram::start(TOKEN).await;
    let me = ok(&fake, "getMe", json!({})).await;
    assert_eq!(me["id"], 123456);
    assert_eq!(me["is_bot"], true);
    assert!(me["first_name"].is_string() && me["username"].is_string(), "{me}");
    for flag in [
        "can_join_groups",
        "can_read_all_group_messages",
        "supports_inline_queries",
        "has_main_web_app",
    ] {
        assert!(me[flag].is_boolean(), "{flag} missing in {me}");
    }
}

#[tokio::test]
async fn a_long_poll_answers_as_soon_as_an_update_is_pushed() {
    let fake = FakeTelegram::start(TOKEN).await;
    let poll = tokio::spawn({
        let fake = fake.clone();
        async move { ok(&fake, "GetUpdates", json!({"timeout": 10})).await }
    });
    fake.wait_for_calls("getUpdates", 1, WAIT).await;
    let id = fake.push_update(fake.text_message(42, 42, "hello"));
    let result = tokio::time::timeout(WAIT, poll)
        .await
        .expect("the poll answers before its timeout")
        .unwrap();
    assert_eq!(update_ids(&result), [id]);
    let message = &result[0]["message"];
    assert_eq!(message["text"], "hello");
    assert_eq!(message["chat"]["type"], "private");
    assert_eq!(message["from"]["id"], 42);
}

#[tokio::test]
async fn an_offset_confirms_and_drops_earlier_updates() {
    let fake = FakeTelegram::start(TOKEN).await;
    let first = fake.push_update(fake.text_message(1, 1, "one"));
    let second = fake.push_update(fake.group_message(-5, 1, "two"));
    let third = fake.push_update(fake.unknown_update());
    assert!(first < second && second < third);

    // Unconfirmed updates come back again.
    for _ in 0..2 {
        assert_eq!(
            update_ids(&ok(&fake, "getUpdates", json!({})).await),
            [first, second, third]
        );
    }
    assert_eq!(
        update_ids(&ok(&fake, "getUpdates", json!({"offset": second, "limit": 1})).await),
        [second]
    );
    assert_eq!(fake.confirmed_offset(), second);
    assert_eq!(update_ids(&ok(&fake, "getUpdates", json!({})).await), [second, third]);
    assert_eq!(
        update_ids(&ok(&fake, "getUpdates", json!({"offset": third + 1})).await),
        Vec::<i64>::new()
    );
    assert_eq!(fake.pending_updates(), 0);
}

#[tokio::test]
async fn a_long_poll_with_nothing_queued_times_out_empty() {
    let fake = FakeTelegram::start(TOKEN).await;
    let started = std::time::Instant::now();
    let result = ok(&fake, "getUpdates", json!({"timeout": 1})).await;
    assert_eq!(result, json!([]));
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(950) && waited < WAIT,
        "waited {waited:?}"
    );
}

#[tokio::test]
async fn a_newer_long_poll_ends_the_older_one_with_a_conflict() {
    let fake = FakeTelegram::start(TOKEN).await;
    let older = tokio::spawn({
        let fake = fake.clone();
        async move { call(&fake, "getUpdates", json!({"timeout": 10})).await }
    });
    fake.wait_for_calls("getUpdates", 1, WAIT).await;
    let newer = tokio::spawn({
        let fake = fake.clone();
        async move { ok(&fake, "getUpdates", json!({"timeout": 10})).await }
    });
    let (status, body) = tokio::time::timeout(WAIT, older).await.unwrap().unwrap();
    assert_eq!(status, StatusCode::CONFLICT, "{body}");
    let id = fake.push_update(fake.poll_update());
    assert_eq!(
        update_ids(&tokio::time::timeout(WAIT, newer).await.unwrap().unwrap()),
        [id]
    );
}

#[tokio::test]
async fn send_message_is_recorded_and_answered_with_a_full_message() {
    let fake = FakeTelegram::start(TOKEN).await;
    let incoming = fake.text_message(77, 77, "question");
    let question_id = incoming["message"]["message_id"].as_i64().unwrap();
    fake.push_update(incoming);
    let keyboard = json!({"inline_keyboard": [[{"text": "Yes", "callback_data": "approve:1"}]]});

    let first = ok(&fake, "sendMessage", json!({"chat_id": 77, "text": "plain"})).await;
    let second = ok(
        &fake,
        "sendMessage",
        json!({"chat_id": 77, "text": "answer", "reply_parameters": {"message_id": question_id},
               "reply_markup": keyboard}),
    )
    .await;

    assert!(
        second["message_id"].as_i64() > first["message_id"].as_i64(),
        "{first} then {second}"
    );
    assert_eq!(
        second["chat"],
        json!({"id": 77, "type": "private", "first_name": "User77", "username": "user77"})
    );
    assert_eq!(second["from"], fake.bot_user());
    assert!(second["date"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(second["reply_to_message"]["text"], "question");
    assert_eq!(second["reply_markup"], keyboard);

    let sent = fake.wait_for_sent(2, WAIT).await;
    assert_eq!(
        sent.iter().map(|s| s.text.as_str()).collect::<Vec<_>>(),
        ["plain", "answer"]
    );
    assert_eq!(sent[1].chat_id, 77);
    assert_eq!(sent[1].message_id, second["message_id"].as_i64().unwrap());
    assert_eq!(sent[1].reply_to_message_id, Some(question_id));
    assert_eq!(sent[1].reply_markup, Some(keyboard));
    assert_eq!(sent[0].reply_to_message_id, None);

    let (status, body) = call(
        &fake,
        "sendMessage",
        json!({"chat_id": 77, "text": "x", "reply_to_message_id": 999}),
    )
    .await;
    assert_eq!(
        (status, body["description"].as_str()),
        (
            StatusCode::BAD_REQUEST,
            Some("Bad Request: message to be replied not found")
        )
    );
    let (status, body) = call(&fake, "sendMessage", json!({"chat_id": 77, "text": "é".repeat(4097)})).await;
    assert_eq!(
        (status, body["description"].as_str()),
        (StatusCode::BAD_REQUEST, Some("Bad Request: message is too long"))
    );
    assert_eq!(fake.sent().len(), 2, "rejected sends are not recorded as sent");
}

#[tokio::test]
async fn method_names_are_case_insensitive_and_bodies_may_be_forms() {
    let fake = FakeTelegram::start(TOKEN).await;
    for method in ["getMe", "GetMe", "GETME", "getme"] {
        assert_eq!(ok(&fake, method, json!({})).await["id"], 123456, "{method}");
    }
    assert_eq!(fake.calls("GetMe").len(), 4);

    let response = reqwest::Client::new()
        .post(format!("{}/bot{TOKEN}/SENDMESSAGE", fake.base_url()))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("chat_id=-100&text=caf%C3%A9+au+lait")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let sent = fake.sent();
    assert_eq!((sent[0].chat_id, sent[0].text.as_str()), (-100, "café au lait"));
}

#[tokio::test]
async fn injected_conflict_and_rate_limit_use_telegram_envelopes() {
    let fake = FakeTelegram::start(TOKEN).await;
    fake.push_update(fake.text_message(1, 1, "kept"));
    fake.fail_next("GetUpdates", FakeFailure::Conflict);
    fake.fail_next("sendMessage", FakeFailure::RetryAfter(7));

    let (status, body) = call(&fake, "getUpdates", json!({"offset": 0})).await;
    assert_eq!(status, StatusCode::CONFLICT);
    assert_eq!(body["ok"], false);
    assert_eq!(body["error_code"], 409);
    assert!(
        body["description"]
            .as_str()
            .unwrap()
            .starts_with("Conflict: terminated by other getUpdates request"),
        "{body}"
    );
    assert_eq!(
        ok(&fake, "getUpdates", json!({})).await.as_array().unwrap().len(),
        1,
        "one-shot failure"
    );

    let (status, body) = call(&fake, "sendMessage", json!({"chat_id": 1, "text": "hi"})).await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 7",
               "parameters": {"retry_after": 7}})
    );
    assert!(fake.sent().is_empty());
    assert_eq!(fake.calls("sendmessage").len(), 1, "failed calls are still recorded");
    ok(&fake, "sendMessage", json!({"chat_id": 1, "text": "hi"})).await;
    assert_eq!(fake.sent().len(), 1);

    fake.fail_next("getMe", FakeFailure::Unauthorized);
    let (status, body) = call(&fake, "getMe", json!({})).await;
    assert_eq!(
        (status, body["error_code"].as_i64()),
        (StatusCode::UNAUTHORIZED, Some(401))
    );
}

#[tokio::test]
async fn a_wrong_token_or_unknown_method_is_refused() {
    let fake = FakeTelegram::start(TOKEN).await;
    let (status, body) = call_as(&fake, "123456:wrong", "getMe", json!({})).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 401, "description": "Unauthorized"})
    );
    assert!(fake.calls("getMe").is_empty());

    let (status, body) = call(&fake, "sendTelepathy", json!({})).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(
        body,
        json!({"ok": false, "error_code": 404, "description": "Not Found"})
    );
}

#[tokio::test]
async fn a_second_identical_edit_is_not_modified() {
    let fake = FakeTelegram::start(TOKEN).await;
    let keyboard = json!({"inline_keyboard": [[{"text": "Yes", "callback_data": "y"}]]});
    let sent = ok(
        &fake,
        "sendMessage",
        json!({"chat_id": 9, "text": "Approve?", "reply_markup": keyboard}),
    )
    .await;
    let id = sent["message_id"].clone();

    let edit = json!({"chat_id": 9, "message_id": id, "text": "Approved"});
    let edited = ok(&fake, "editMessageText", edit.clone()).await;
    assert_eq!(
        (edited["text"].as_str(), edited["message_id"].clone()),
        (Some("Approved"), id.clone())
    );
    assert!(
        edited.get("reply_markup").is_none(),
        "editing text without markup removes the keyboard"
    );
    let (status, body) = call(&fake, "EditMessageText", edit).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        body["description"]
            .as_str()
            .unwrap()
            .starts_with("Bad Request: message is not modified: "),
        "{body}"
    );

    let (status, _) = call(&fake, "editMessageReplyMarkup", json!({"chat_id": 9, "message_id": id})).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "the markup is already gone");
}

#[tokio::test]
async fn callback_queries_carry_the_message_and_are_answered_once() {
    let fake = FakeTelegram::start(TOKEN).await;
    let sent = ok(&fake, "sendMessage", json!({"chat_id": 5, "text": "Approve?"})).await;
    let update = fake.callback_query(5, 5, sent["message_id"].as_i64().unwrap(), "approve:1");
    let query = &update["callback_query"];
    assert_eq!(query["message"]["text"], "Approve?");
    assert!(
        query["chat_instance"].is_string() && query["data"] == "approve:1",
        "{query}"
    );
    fake.push_update(update.clone());

    let answer = json!({"callback_query_id": query["id"]});
    assert_eq!(ok(&fake, "answerCallbackQuery", answer.clone()).await, true);
    let (status, _) = call(&fake, "answerCallbackQuery", answer).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    let photo = fake.photo_message(5, 5, Some("look"));
    assert_eq!(photo["message"]["photo"].as_array().unwrap().len(), 2);
    let reply = fake.reply_to(5, 5, "re", sent["message_id"].as_i64().unwrap());
    assert_eq!(reply["message"]["reply_to_message"]["from"], fake.bot_user());
}

#[tokio::test]
async fn shutdown_cuts_a_waiting_long_poll() {
    let fake = FakeTelegram::start(TOKEN).await;
    let poll = tokio::spawn({
        let fake = fake.clone();
        let url = format!("{}/bot{TOKEN}/getUpdates", fake.base_url());
        async move {
            reqwest::Client::new()
                .post(url)
                .json(&json!({"timeout": 30}))
                .send()
                .await
        }
    });
    fake.wait_for_calls("getUpdates", 1, WAIT).await;
    fake.shutdown();
    let result = tokio::time::timeout(WAIT, poll)
        .await
        .expect("the poll is cut")
        .unwrap();
    assert!(result.is_err(), "{result:?}");
}

#[tokio::test]
async fn entities_are_checked_as_telegram_checks_them() {
    let fake = FakeTelegram::start(TOKEN).await;
    // "😀 bold code": the emoji is two UTF-16 units, so "bold" is at 3.
    let text = "😀 bold code";
    let good = json!([
        {"type": "bold", "offset": 3, "length": 4},
        {"type": "italic", "offset": 3, "length": 2},
        {"type": "code", "offset": 8, "length": 4},
        {"type": "blockquote", "offset": 0, "length": 12},
        {"type": "text_link", "offset": 3, "length": 4, "url": "https://example.com/"},
    ]);
    ok(
        &fake,
        "sendMessage",
        json!({"chat_id": 5, "text": text, "entities": good}),
    )
    .await;
    assert_eq!(fake.sent().len(), 1);

    let refused = [
        ("past the end", json!([{"type": "bold", "offset": 8, "length": 5}])),
        ("empty", json!([{"type": "bold", "offset": 3, "length": 0}])),
        ("half an emoji", json!([{"type": "bold", "offset": 1, "length": 3}])),
        ("unknown type", json!([{"type": "shiny", "offset": 0, "length": 2}])),
        ("no URL", json!([{"type": "text_link", "offset": 3, "length": 4}])),
        (
            "relative URL",
            json!([{"type": "text_link", "offset": 3, "length": 4, "url": "notes.md"}]),
        ),
        (
            "partial overlap",
            json!([{"type": "bold", "offset": 3, "length": 4}, {"type": "italic", "offset": 5, "length": 4}]),
        ),
        (
            "bold inside code",
            json!([{"type": "code", "offset": 3, "length": 9}, {"type": "bold", "offset": 8, "length": 4}]),
        ),
        (
            "code inside a link",
            json!([{"type": "text_link", "offset": 3, "length": 9, "url": "https://e.com"},
                   {"type": "code", "offset": 8, "length": 4}]),
        ),
        (
            "nested quotes",
            json!([{"type": "blockquote", "offset": 0, "length": 12},
                   {"type": "blockquote", "offset": 3, "length": 4}]),
        ),
    ];
    for (case, entities) in refused {
        let (status, body) = call(
            &fake,
            "sendMessage",
            json!({"chat_id": 5, "text": text, "entities": entities}),
        )
        .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{case}: {body}");
        let description = body["description"].as_str().unwrap();
        assert!(
            description.starts_with("Bad Request: can't parse entities"),
            "{case}: {description}"
        );
    }
    assert_eq!(fake.sent().len(), 1, "nothing refused was recorded as sent");
}
