//! Property tests of reading and normalizing updates: whatever JSON comes in
//! an update, however deep, it is read and normalized or skipped with a
//! reason, and nothing panics. The updates are drawn in the Bot API's shapes
//! (messages with text or media, button presses, reactions, with their real
//! field names) so that they get past the first checks, and now and then
//! anything at all. A photo taken names a size under the cap whenever the
//! update offered one.

use passepartout_gateway::{InboundBody, MediaKind, Normalized};
use passepartout_gateway_testing::json::{any_json, config, deep, object, object_with_odds};
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
    "voice",
    "audio",
    "document",
    "video",
    "video_note",
    "animation",
    "sticker",
    "location",
    "venue",
    "contact",
    "file_id",
    "file_unique_id",
    "file_size",
    "duration",
    "mime_type",
    "width",
    "height",
    "latitude",
    "longitude",
    "phone_number",
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

fn size() -> BoxedStrategy<Value> {
    prop_oneof![4 => int(0..200_000), 1 => any::<u64>().prop_map(Value::from)].boxed()
}

/// How seldom a field of media is missing or odd: media sits deep in a
/// message, whose every other field may be odd already.
const MEDIA_ODDS: u32 = 30;

/// A file's fields (`file_id`, `file_unique_id`, `file_size`) and `extra`.
fn file(extra: Vec<(&'static str, BoxedStrategy<Value>)>) -> BoxedStrategy<Value> {
    let mut fields = vec![
        ("file_id", word(&["AwACfile", "AgACphoto", ""])),
        ("file_unique_id", word(&["AQADu"])),
        ("file_size", size()),
    ];
    fields.extend(extra);
    object_with_odds(fields, other(), MEDIA_ODDS)
}

/// The field a message carries its media in, drawn in that kind's shape.
fn media() -> BoxedStrategy<(&'static str, Value)> {
    let seconds = || int(0..4_000);
    let mime = || {
        word(&[
            "audio/ogg",
            "video/mp4",
            "image/png",
            "application/pdf",
            "audio/ogg",
            "x",
        ])
    };
    let side = || int(1..3_000);
    let location = || {
        let degrees = || {
            prop_oneof![
                (-90.0f64..90.0).prop_map(Value::from),
                any::<f64>().prop_map(Value::from)
            ]
        };
        object_with_odds(
            vec![("latitude", degrees().boxed()), ("longitude", degrees().boxed())],
            other(),
            MEDIA_ODDS,
        )
    };
    let tagged = |name: &'static str, value: BoxedStrategy<Value>| value.prop_map(move |value| (name, value)).boxed();
    prop_oneof![
        tagged("voice", file(vec![("duration", seconds()), ("mime_type", mime())])),
        tagged(
            "audio",
            file(vec![
                ("duration", seconds()),
                ("mime_type", mime()),
                ("file_name", text())
            ])
        ),
        tagged(
            "photo",
            prop::collection::vec(file(vec![("width", side()), ("height", side())]), 0..4)
                .prop_map(Value::Array)
                .boxed()
        ),
        tagged("document", file(vec![("file_name", text()), ("mime_type", mime())])),
        tagged(
            "video",
            file(vec![
                ("width", side()),
                ("height", side()),
                ("duration", seconds()),
                ("mime_type", mime())
            ])
        ),
        tagged("video_note", file(vec![("length", side()), ("duration", seconds())])),
        tagged(
            "sticker",
            file(vec![
                ("type", word(&["regular", "mask"])),
                ("width", side()),
                ("height", side()),
                ("is_animated", any::<bool>().prop_map(Value::from).boxed()),
                ("is_video", any::<bool>().prop_map(Value::from).boxed()),
                ("emoji", word(&["😀", ""])),
            ])
        ),
        tagged("location", location()),
        tagged(
            "venue",
            object_with_odds(
                vec![("location", location()), ("title", text()), ("address", text())],
                other(),
                MEDIA_ODDS
            )
        ),
        tagged(
            "contact",
            object_with_odds(
                vec![("phone_number", text()), ("first_name", text()), ("last_name", text())],
                other(),
                MEDIA_ODDS
            )
        ),
    ]
    .boxed()
}

/// A message carrying media, with a caption, and no text; mostly from a
/// person in a private chat, so that the media's own shapes are what varies.
fn media_message() -> BoxedStrategy<Value> {
    let person = object_with_odds(
        vec![
            ("id", int(1..3000)),
            ("is_bot", Just(Value::Bool(false)).boxed()),
            ("first_name", text()),
        ],
        other(),
        MEDIA_ODDS,
    );
    let private = object_with_odds(
        vec![
            ("id", int(1..3000)),
            ("type", Just(Value::from("private")).boxed()),
            ("first_name", text()),
        ],
        other(),
        MEDIA_ODDS,
    );
    let mut fields = message_fields();
    fields.retain(|(name, _)| !matches!(*name, "text" | "entities" | "chat" | "from"));
    fields.push(("chat", prop_oneof![3 => private, 1 => chat()].boxed()));
    fields.push(("from", prop_oneof![3 => person, 1 => user()].boxed()));
    fields.push(("caption", text()));
    fields.push((
        "caption_entities",
        prop::collection::vec(entity(), 0..2).prop_map(Value::Array).boxed(),
    ));
    (object_with_odds(fields, other(), MEDIA_ODDS), media())
        .prop_map(|(mut message, (name, value))| {
            if let Some(fields) = message.as_object_mut() {
                fields.insert(name.to_owned(), value);
            }
            message
        })
        .boxed()
}

/// A message with text or media, now and then replying to another: one
/// field off its shape anywhere makes the whole update unreadable, so the
/// reply, which doubles the fields, comes seldom.
fn message() -> BoxedStrategy<Value> {
    let replied = prop::option::weighted(0.3, object(message_fields(), other()));
    let message = prop_oneof![object(message_fields(), other()), media_message()];
    (message, replied)
        .prop_map(|(mut message, replied)| {
            if let (Some(fields), Some(replied)) = (message.as_object_mut(), replied) {
                fields.insert("reply_to_message".to_owned(), replied);
            }
            message
        })
        .boxed()
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
    Media,
    Skipped,
    Unreadable,
}

/// Checks the media `body` made of `update`: attachments there are, and a
/// photo's size is under the cap whenever the update offered one that was.
fn media_outcome(update: &Value, body: &InboundBody) -> Outcome {
    let InboundBody::Media { attachments, caption } = body else {
        return Outcome::Inbound;
    };
    assert_eq!(attachments.len(), 1, "one file per message");
    assert!(
        caption.as_ref().is_none_or(|caption| !caption.is_empty()),
        "no empty caption"
    );
    let attachment = &attachments[0];
    if attachment.kind == MediaKind::Photo {
        let offered = update["message"]["photo"].as_array().into_iter().flatten();
        let one_fits = offered
            .filter_map(|size| size["file_size"].as_u64())
            .any(|bytes| bytes <= PHOTO_MAX && bytes < u64::from(u32::MAX));
        if one_fits {
            assert!(
                attachment.size.is_some_and(|bytes| bytes <= PHOTO_MAX),
                "{attachment:?}"
            );
        }
    }
    Outcome::Media
}

fn outcome(update: &Value, mode: GroupMode) -> Outcome {
    let text = format!(r#"{{"ok":true,"result":[{update}]}}"#);
    let Answer::Updates(mut items) = read_answer(&text) else {
        panic!("a well-formed answer is readable");
    };
    assert_eq!(items.len(), 1);
    match items.remove(0) {
        Item::Update(parsed) => match normalize(&parsed, BOT, mode, &std::collections::BTreeSet::new(), PHOTO_MAX, NOW)
        {
            Normalized::Inbound(inbound) => {
                assert_eq!(inbound.conversation.gateway.as_str(), crate::GATEWAY_ID);
                assert_eq!(inbound.received_at_ms, NOW);
                media_outcome(update, &inbound.body)
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

#[test]
fn the_drawn_media_messages_are_taken_as_media() {
    let mut runner = TestRunner::deterministic();
    let strategy = object(
        vec![("update_id", int(1..1_000_000)), ("message", media_message())],
        other(),
    );
    let outcomes: Vec<Outcome> = (0..CASES_FOR_COVERAGE)
        .map(|_| strategy.new_tree(&mut runner).expect("an update is drawn").current())
        .map(|update| outcome(&update, GroupMode::All))
        .collect();
    let media = outcomes.iter().filter(|outcome| **outcome == Outcome::Media).count();
    assert!(media >= 10, "only {media} media in {} updates", outcomes.len());
}

/// Enough draws for each outcome to come up, with a fixed seed.
const CASES_FOR_COVERAGE: usize = 512;
