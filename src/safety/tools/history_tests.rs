//! `search_history` against a real store: words in any form, dates, the
//! size cap, bad arguments, only the calling conversation's turns by
//! default, and with `scope: "all"` the same person's other conversations,
//! never another person's.

use passepartout_gateway::{ChatId, ConversationKey, GatewayId};
use serde_json::json;

use super::SearchHistory;
use crate::model::llm::ChatMessage;
use crate::safety::tools::{Tool, ToolContext, ToolError, testing};
use crate::store::TurnCommit;
use crate::store::tests_support::conversation;

/// Noon UTC on 2025-03-`day`.
fn march(day: u64) -> u64 {
    1_740_787_200_000 + (day - 1) * 86_400_000 + 12 * 3_600_000
}

fn keep(context: &ToolContext, chat: &str, said: &str, answered: &str, at_ms: Option<u64>) {
    keep_by(context, &conversation(chat), Some("tester"), said, answered, at_ms);
}

/// Keeps a turn started by `by` (the test context's sender is "tester").
fn keep_by(
    context: &ToolContext,
    conversation: &ConversationKey,
    by: Option<&str>,
    said: &str,
    answered: &str,
    at_ms: Option<u64>,
) {
    let mut record = json!({
        "messages": [ChatMessage::user(said), ChatMessage::assistant(answered)],
    });
    if let Some(at) = at_ms {
        record["at_ms"] = json!(at);
    }
    if let Some(by) = by {
        record["by"] = json!(by);
    }
    let turn = TurnCommit {
        history_record: Some(serde_json::to_vec(&record).unwrap()),
        ..TurnCommit::default()
    };
    context.memory.store().commit_turn(conversation, turn).unwrap();
}

async fn search(context: &ToolContext, args: serde_json::Value) -> Result<String, ToolError> {
    SearchHistory.call(context, args).await
}

#[tokio::test]
async fn finds_turns_by_words_in_any_form_with_their_dates() {
    let context = testing::context();
    keep(
        &context,
        "tools",
        "Book the dentist appointment",
        "Done, Friday 10:00",
        Some(march(3)),
    );
    keep(&context, "tools", "How is the weather?", "Sunny", Some(march(4)));
    keep(&context, "tools", "我喜欢喝绿茶", "好的", Some(march(5)));
    let found = search(&context, json!({"query": "appointments"})).await.unwrap();
    assert!(
        found.starts_with("[2025-03-03 12:00 UTC]\nperson: Book the dentist appointment"),
        "{found}"
    );
    assert!(!found.contains("weather"), "{found}");
    let found = search(&context, json!({"query": "我喜欢什么茶"})).await.unwrap();
    assert!(found.contains("绿茶"), "{found}");
    assert_eq!(
        search(&context, json!({"query": "bicycle"})).await.unwrap(),
        "no earlier turns match"
    );
}

#[tokio::test]
async fn another_conversations_turns_are_never_found() {
    let context = testing::context();
    keep(
        &context,
        "someone-else",
        "my secret appointment",
        "noted",
        Some(march(3)),
    );
    keep(&context, "tools", "lunch plans", "noted", Some(march(3)));
    let found = search(&context, json!({"query": "secret appointment"})).await.unwrap();
    assert_eq!(found, "no earlier turns match");
    let newest = search(&context, json!({})).await.unwrap();
    assert!(newest.contains("lunch") && !newest.contains("secret"), "{newest}");
}

#[tokio::test]
async fn scope_all_finds_the_persons_other_conversations_but_never_another_persons() {
    let context = testing::context();
    let telegram = ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new("tester").unwrap());
    keep(&context, "work", "the boat trip is on Sunday", "noted", Some(march(3)));
    keep_by(
        &context,
        &conversation("group"),
        Some("tester"),
        "boat tickets bought",
        "good",
        Some(march(4)),
    );
    keep_by(
        &context,
        &conversation("group"),
        Some("bob"),
        "bob's boat secret",
        "noted",
        Some(march(4)),
    );
    keep_by(
        &context,
        &conversation("bobs"),
        Some("bob"),
        "bob's private boat plan",
        "noted",
        Some(march(5)),
    );
    keep_by(
        &context,
        &conversation("old"),
        None,
        "an unattributed boat turn",
        "noted",
        Some(march(5)),
    );
    keep_by(
        &context,
        &telegram,
        Some("tester"),
        "boat on another gateway",
        "noted",
        Some(march(5)),
    );
    keep_by(
        &context,
        &conversation("tools"),
        Some("bob"),
        "bob's boat turn here",
        "noted",
        Some(march(6)),
    );

    let here = search(&context, json!({"query": "boat", "limit": 20})).await.unwrap();
    assert_eq!(
        here, "[2025-03-06 12:00 UTC]\nperson: bob's boat turn here\nassistant: noted",
        "the default is this conversation, all of it"
    );
    let all = search(&context, json!({"query": "boat", "limit": 20, "scope": "all"}))
        .await
        .unwrap();
    assert!(
        all.contains("[2025-03-03 12:00 UTC, in conversation work]\nperson: the boat trip"),
        "{all}"
    );
    assert!(
        all.contains("[2025-03-04 12:00 UTC, in conversation group]\nperson: boat tickets"),
        "{all}"
    );
    assert!(
        all.contains("bob's boat turn here"),
        "this conversation's turns stay found: {all}"
    );
    for never in [
        "bob's boat secret",
        "private boat plan",
        "unattributed",
        "another gateway",
    ] {
        assert!(!all.contains(never), "{never} found: {all}");
    }
    let refused = search(&context, json!({"scope": "everyone"})).await;
    assert!(matches!(refused, Err(ToolError::InvalidArguments(m)) if m.contains("unknown variant")));
}

#[tokio::test]
async fn scope_all_reaches_the_linked_channels_but_only_what_the_person_said_there() {
    let mut context = testing::context();
    let telegram = GatewayId::new("telegram").unwrap();
    context.memory = context.memory.clone().linked_with(vec![(
        telegram.clone(),
        passepartout_gateway::UserId::new("42").unwrap(),
    )]);
    let theirs = ConversationKey::new(telegram.clone(), ChatId::new("42").unwrap());
    let group = ConversationKey::new(telegram, ChatId::new("-100").unwrap());
    keep_by(
        &context,
        &theirs,
        Some("42"),
        "the boat leaves at nine",
        "noted",
        Some(march(3)),
    );
    keep_by(
        &context,
        &group,
        Some("42"),
        "boat snacks in the group",
        "ok",
        Some(march(4)),
    );
    keep_by(
        &context,
        &group,
        Some("77"),
        "someone else's boat",
        "ok",
        Some(march(4)),
    );
    keep_by(
        &context,
        &theirs,
        Some("tester"),
        "a boat by a same-named id",
        "ok",
        Some(march(5)),
    );

    let here = search(&context, json!({"query": "boat"})).await.unwrap();
    assert_eq!(here, "no earlier turns match", "the default stays in this conversation");
    let all = search(&context, json!({"query": "boat", "limit": 20, "scope": "all"}))
        .await
        .unwrap();
    assert!(
        all.contains("[2025-03-03 12:00 UTC, on telegram]\nperson: the boat leaves"),
        "{all}"
    );
    assert!(
        all.contains("boat snacks in the group"),
        "what they said, wherever: {all}"
    );
    for never in ["someone else's boat", "same-named id"] {
        assert!(!all.contains(never), "{never} found: {all}");
    }
}

#[tokio::test]
async fn dates_bound_the_search_and_undated_turns_only_match_without_them() {
    let context = testing::context();
    keep(&context, "tools", "tea on the third", "ok", Some(march(3)));
    keep(&context, "tools", "tea on the fourth", "ok", Some(march(4)));
    keep(&context, "tools", "tea on the fifth", "ok", Some(march(5)));
    keep(&context, "tools", "tea long ago", "ok", None);
    let found = search(
        &context,
        json!({"query": "tea", "since": "2025-03-04", "until": "2025-03-04"}),
    )
    .await
    .unwrap();
    assert!(
        found.contains("fourth") && !found.contains("third") && !found.contains("fifth"),
        "{found}"
    );
    assert!(!found.contains("long ago"), "{found}");
    let found = search(&context, json!({"query": "tea", "limit": 20})).await.unwrap();
    assert!(found.contains("undated"), "{found}");
    let newest = search(&context, json!({"since": "2025-03-04", "limit": 1}))
        .await
        .unwrap();
    assert!(newest.contains("fifth") && !newest.contains("fourth"), "{newest}");
}

#[tokio::test]
async fn the_answer_is_capped_in_size() {
    let context = testing::context();
    let long = "tea ".repeat(1_000);
    for day in 1..=20 {
        keep(&context, "tools", &long, &long, Some(march(day)));
    }
    let found = search(&context, json!({"query": "tea", "limit": 20})).await.unwrap();
    assert!(found.chars().count() <= 6_100, "{} chars", found.chars().count());
    assert!(found.contains("more matching turns not shown"), "{found}");
}

#[tokio::test]
async fn bad_arguments_are_refused_with_a_reason() {
    let context = testing::context();
    for (args, says) in [
        (json!({"since": "last week"}), "since must be a date"),
        (json!({"until": "2025-02-30"}), "until must be a date"),
        (
            json!({"since": "2025-03-05", "until": "2025-03-01"}),
            "since must not be after until",
        ),
        (json!({"limit": 0}), "limit must be"),
        (json!({"limit": 500}), "limit must be"),
        (json!({"words": "x"}), "unknown field"),
    ] {
        match search(&context, args.clone()).await {
            Err(ToolError::InvalidArguments(message)) => assert!(message.contains(says), "{args}: {message}"),
            other => panic!("{args}: {other:?}"),
        }
    }
}
