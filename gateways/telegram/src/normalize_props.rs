//! Property tests of reading and normalizing updates: whatever JSON comes in
//! an update, however deep, it is read and normalized or skipped with a
//! reason, and nothing panics. The updates are drawn in the Bot API's shapes
//! (messages, button presses, reactions, with their real field names) so
//! that they get past the first checks, and now and then anything at all.

use passepartout_gateway::Normalized;
use passepartout_gateway_testing::json::{any_json, config, deep, object};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::Value;

use super::{GroupMode, normalize};
use crate::updates::{Answer, Item, read_answer};

const BOT: &str = "PassBot";
const NOW: u64 = 1_700_000_000_000;
const PHOTO_MAX: u64 = 100_000;

const KEYS: &[&str] = &[
    "update_id",
    "message",
    "edited_message",
    "channel_post",
    "callback_query",
    "message_reaction",
    "message_id",
    "date",
    "chat",
    "from",
    "text",
    "entities",
    "caption",
    "reply_to_message",
    "photo",
    "id",
    "type",
    "is_bot",
    "first_name",
    "username",
    "data",
    "user",
    "new_reaction",
    "old_reaction",
    "emoji",
];

const WORDS: &[&str] = &[
    "private",
    "group",
    "supergroup",
    "channel",
    "mention",
    "emoji",
    "@PassBot",
    "@PassBot hello",
    "hi @passbot there",
    "👍",
    "approve:K7PX2Q",
    "PassBot",
];

/// Anything at all, sometimes buried past the recursion limit.
fn other() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => any_json(KEYS, WORDS),
        1 => deep(any_json(KEYS, WORDS), "message"),
    ]
    .boxed()
}

fn int(range: std::ops::Range<i64>) -> BoxedStrategy<Value> {
    range.prop_map(Value::from).boxed()
}

fn word(words: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(words).prop_map(Value::from).boxed()
}

fn text() -> BoxedStrategy<Value> {
    prop_oneof![
        "\\PC{0,24}".prop_map(Value::from),
        "(@PassBot |@someone |/start )?[a-zé😀 ]{0,12}( @PassBot)?".prop_map(Value::from),
        word(WORDS),
    ]
    .boxed()
}

fn user() -> BoxedStrategy<Value> {
    object(
        vec![
            ("id", int(1..3000)),
            ("is_bot", any::<bool>().prop_map(Value::from).boxed()),
            ("first_name", text()),
            ("username", word(&["PassBot", "passbot", "ada"])),
        ],
        other(),
    )
}

fn chat() -> BoxedStrategy<Value> {
    object(
        vec![
            (
                "id",
                prop_oneof![int(1..3000), int(-1_000_000_003_000..-1_000_000_000_000)].boxed(),
            ),
            ("type", word(&["private", "group", "supergroup", "channel"])),
            ("title", text()),
            ("first_name", text()),
        ],
        other(),
    )
}

fn entity() -> BoxedStrategy<Value> {
    object(
        vec![
            ("type", word(&["mention", "bot_command", "bold"])),
            ("offset", int(0..30)),
            ("length", int(0..30)),
        ],
        other(),
    )
}

fn message_fields() -> Vec<(&'static str, BoxedStrategy<Value>)> {
    vec![
        ("message_id", int(1..1000)),
        ("date", int(1_600_000_000..1_800_000_000)),
        ("chat", chat()),
        ("from", user()),
        ("text", text()),
        (
            "entities",
            prop::collection::vec(entity(), 0..3).prop_map(Value::Array).boxed(),
        ),
    ]
}

fn message() -> BoxedStrategy<Value> {
    let replied = object(message_fields(), other());
    let mut fields = message_fields();
    fields.push(("reply_to_message", replied));
    object(fields, other())
}

fn callback_query() -> BoxedStrategy<Value> {
    object(
        vec![
            ("id", text()),
            ("from", user()),
            ("message", message()),
            ("chat_instance", text()),
            ("data", text()),
        ],
        other(),
    )
}

fn reaction_types() -> BoxedStrategy<Value> {
    let reaction = object(
        vec![
            ("type", word(&["emoji", "custom_emoji", "paid"])),
            ("emoji", word(&["👍", "🔥", "x"])),
        ],
        other(),
    );
    prop::collection::vec(reaction, 0..3).prop_map(Value::Array).boxed()
}

fn message_reaction() -> BoxedStrategy<Value> {
    object(
        vec![
            ("chat", chat()),
            ("message_id", int(1..1000)),
            ("user", user()),
            ("date", int(1_600_000_000..1_800_000_000)),
            ("old_reaction", reaction_types()),
            ("new_reaction", reaction_types()),
        ],
        other(),
    )
}

/// An update in one of the Bot API's shapes, or anything at all.
fn update() -> BoxedStrategy<Value> {
    let with = |kind: &'static str, payload: BoxedStrategy<Value>| {
        object(vec![("update_id", int(1..1_000_000)), (kind, payload)], other())
    };
    prop_oneof![
        3 => with("message", message()),
        1 => with("edited_message", message()),
        1 => with("channel_post", message()),
        2 => with("callback_query", callback_query()),
        2 => with("message_reaction", message_reaction()),
        1 => other(),
    ]
    .boxed()
}

fn group_mode() -> impl Strategy<Value = GroupMode> {
    prop_oneof![Just(GroupMode::MentionOrReply), Just(GroupMode::All)]
}

/// What came of one update, checked: a message for this gateway, or a reason.
#[derive(Debug, PartialEq)]
enum Outcome {
    Inbound,
    Skipped,
    Unreadable,
}

fn outcome(update: &Value, mode: GroupMode) -> Outcome {
    let text = format!(r#"{{"ok":true,"result":[{update}]}}"#);
    let Answer::Updates(mut items) = read_answer(&text) else {
        panic!("a well-formed answer is readable");
    };
    assert_eq!(items.len(), 1);
    match items.remove(0) {
        Item::Update(update) => match normalize(&update, BOT, mode, PHOTO_MAX, NOW) {
            Normalized::Inbound(inbound) => {
                assert_eq!(inbound.conversation.gateway.as_str(), crate::GATEWAY_ID);
                assert_eq!(inbound.received_at_ms, NOW);
                Outcome::Inbound
            }
            Normalized::Skip { reason } => {
                assert!(!reason.is_empty(), "a skip says why");
                Outcome::Skipped
            }
        },
        Item::Unreadable { reason, .. } => {
            assert!(!reason.is_empty(), "an unreadable update says why");
            Outcome::Unreadable
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_update_is_taken_or_skipped_with_a_reason(update in update(), mode in group_mode()) {
        outcome(&update, mode);
    }

    #[test]
    fn any_answer_is_read_without_panicking(answer in other()) {
        let _ = read_answer(&answer.to_string());
    }
}

#[test]
fn the_drawn_updates_reach_every_outcome() {
    let mut runner = TestRunner::deterministic();
    let strategy = update();
    let outcomes: Vec<Outcome> = (0..CASES_FOR_COVERAGE)
        .map(|_| strategy.new_tree(&mut runner).expect("an update is drawn").current())
        .map(|update| outcome(&update, GroupMode::All))
        .collect();
    for expected in [Outcome::Inbound, Outcome::Skipped, Outcome::Unreadable] {
        assert!(
            outcomes.contains(&expected),
            "no {expected:?} in {} updates",
            outcomes.len()
        );
    }
}

/// Enough draws for each outcome to come up, with a fixed seed.
const CASES_FOR_COVERAGE: usize = 256;
