//! Property tests of [`normalize`](super::normalize): whatever JSON comes as
//! an envelope, however deep, it is normalized or skipped with a reason, and
//! nothing panics. The envelopes are drawn in signal-cli's shapes (data
//! messages with quotes, mentions, reactions, group info, attachments,
//! stickers and shared contacts, receipts, …, with their real field names) so
//! that they get past the first checks, and now and then anything at all.
//! Media that is taken names files this gateway can fetch.

use passepartout_gateway::{InboundBody, Normalized};
use passepartout_gateway_testing::json::{any_json, config, deep, object};
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::Value;

use super::{BotIdentity, GroupMode, normalize};
use crate::media::SignalFile;

const NOW: u64 = 1_700_000_000_000;
const BOT_UUID: &str = "b0b0b0b0-0000-4000-8000-000000000001";
const BOT_NUMBER: &str = "+15550000001";
const ADA_UUID: &str = "a1a1a1a1-1111-4111-8111-111111111111";

const KEYS: &[&str] = &[
    "sourceUuid",
    "sourceNumber",
    "sourceName",
    "timestamp",
    "dataMessage",
    "editMessage",
    "syncMessage",
    "receiptMessage",
    "message",
    "groupInfo",
    "groupId",
    "type",
    "quote",
    "id",
    "author",
    "authorUuid",
    "reaction",
    "emoji",
    "targetSentTimestamp",
    "mentions",
    "start",
    "length",
    "uuid",
    "attachments",
    "contentType",
    "filename",
    "size",
    "voiceNote",
    "caption",
    "sticker",
    "contacts",
    "phone",
    "value",
    "given",
];

const WORDS: &[&str] = &[
    BOT_UUID, BOT_NUMBER, ADA_UUID, "DELIVER", "UPDATE", "👍", "\u{FFFC}", "hello",
];

/// Anything at all, sometimes buried deep.
fn other() -> BoxedStrategy<Value> {
    prop_oneof![
        4 => any_json(KEYS, WORDS),
        1 => deep(any_json(KEYS, WORDS), "dataMessage"),
    ]
    .boxed()
}

fn int(range: std::ops::Range<i64>) -> BoxedStrategy<Value> {
    range.prop_map(Value::from).boxed()
}

fn timestamp() -> BoxedStrategy<Value> {
    prop_oneof![int(1_700_000_000_000..1_700_000_000_100), int(-5..5)].boxed()
}

fn word(words: &'static [&'static str]) -> BoxedStrategy<Value> {
    prop::sample::select(words).prop_map(Value::from).boxed()
}

fn text() -> BoxedStrategy<Value> {
    prop_oneof![
        "\\PC{0,24}".prop_map(Value::from),
        "(\u{FFFC} )?[a-zé😀 ]{0,12}( \u{FFFC})?".prop_map(Value::from),
        word(WORDS),
    ]
    .boxed()
}

fn address() -> BoxedStrategy<Value> {
    word(&[BOT_UUID, BOT_NUMBER, ADA_UUID, "", "+15559999999"])
}

fn mention() -> BoxedStrategy<Value> {
    object(
        vec![
            ("name", text()),
            ("number", address()),
            ("uuid", address()),
            ("start", int(0..30)),
            ("length", int(0..5)),
        ],
        other(),
    )
}

fn attachment() -> BoxedStrategy<Value> {
    object(
        vec![
            (
                "contentType",
                word(&[
                    "audio/aac",
                    "audio/mpeg",
                    "image/jpeg",
                    "video/mp4",
                    "application/pdf",
                    "",
                    "text/x-signal-plain",
                ]),
            ),
            ("filename", prop_oneof![word(&["a.pdf", ""]), Just(Value::Null)].boxed()),
            (
                "id",
                prop_oneof![4 => word(&["At7x.jpg", "V0ice.aac"]), 1 => word(&["", "{}"]), 1 => Just(Value::Null)]
                    .boxed(),
            ),
            (
                "size",
                prop_oneof![int(0..100_000_000), any::<u64>().prop_map(Value::from)].boxed(),
            ),
            ("voiceNote", any::<bool>().prop_map(Value::from).boxed()),
            ("caption", text()),
        ],
        other(),
    )
}

fn contact() -> BoxedStrategy<Value> {
    let name = object(
        vec![("given", text()), ("family", text()), ("nickname", text())],
        other(),
    );
    let phone = object(vec![("value", text()), ("type", word(&["MOBILE", "HOME"]))], other());
    object(
        vec![
            ("name", name),
            (
                "phone",
                prop::collection::vec(phone, 0..2).prop_map(Value::Array).boxed(),
            ),
        ],
        other(),
    )
}

fn data_message() -> BoxedStrategy<Value> {
    let group_info = object(
        vec![
            ("groupId", word(&["Z3JvdXA=", ""])),
            ("type", word(&["DELIVER", "UPDATE", "QUIT"])),
        ],
        other(),
    );
    let quote = object(
        vec![
            ("id", timestamp()),
            ("author", address()),
            ("authorNumber", address()),
            ("authorUuid", address()),
        ],
        other(),
    );
    let reaction = object(
        vec![
            ("emoji", word(&["👍", "", "🔥"])),
            ("targetAuthor", address()),
            ("targetAuthorUuid", address()),
            ("targetSentTimestamp", timestamp()),
            ("isRemove", any::<bool>().prop_map(Value::from).boxed()),
        ],
        other(),
    );
    let sticker = object(
        vec![
            ("packId", text()),
            ("stickerId", int(0..50)),
            ("emoji", word(&["👍", ""])),
        ],
        other(),
    );
    let some = |strategy: BoxedStrategy<Value>| prop::option::weighted(0.3, strategy);
    let list = |item: BoxedStrategy<Value>| {
        prop_oneof![
            3 => prop::collection::vec(item, 0..3).prop_map(Value::Array),
            1 => prop::collection::vec(other(), 0..2).prop_map(Value::Array),
        ]
        .boxed()
    };
    (
        object(
            vec![
                ("timestamp", timestamp()),
                ("message", text()),
                (
                    "mentions",
                    prop::collection::vec(mention(), 0..3).prop_map(Value::Array).boxed(),
                ),
            ],
            other(),
        ),
        some(group_info),
        some(quote),
        some(reaction),
        prop::option::weighted(0.5, list(attachment())),
        some(sticker),
        some(list(contact())),
    )
        .prop_map(
            |(mut data, group_info, quote, reaction, attachments, sticker, contacts)| {
                let fields = data.as_object_mut().expect("an object");
                for (name, value) in [
                    ("groupInfo", group_info),
                    ("quote", quote),
                    ("reaction", reaction),
                    ("attachments", attachments),
                    ("sticker", sticker),
                    ("contacts", contacts),
                ] {
                    if let Some(value) = value {
                        fields.insert(name.to_owned(), value);
                    }
                }
                data
            },
        )
        .boxed()
}

/// An envelope in one of signal-cli's shapes, or anything at all.
fn envelope() -> BoxedStrategy<Value> {
    let with = |kind: &'static str, content: BoxedStrategy<Value>| {
        object(
            vec![
                ("sourceUuid", address()),
                ("sourceNumber", address()),
                ("sourceName", text()),
                ("timestamp", timestamp()),
                (kind, content),
            ],
            other(),
        )
    };
    prop_oneof![
        6 => with("dataMessage", data_message()),
        1 => with("editMessage", other()),
        1 => with("syncMessage", other()),
        1 => with("receiptMessage", other()),
        1 => other(),
    ]
    .boxed()
}

fn group_mode() -> impl Strategy<Value = GroupMode> {
    prop_oneof![Just(GroupMode::MentionOrReply), Just(GroupMode::All)]
}

fn bot() -> BotIdentity {
    BotIdentity {
        uuid: Some(BOT_UUID.to_owned()),
        number: Some(BOT_NUMBER.to_owned()),
        note_to_self: false,
    }
}

/// What came of one envelope, checked.
#[derive(Debug, PartialEq)]
enum Outcome {
    Media,
    Other,
    Skipped,
}

/// Normalizes `envelope` and checks what came of it: a message for this
/// gateway (media naming files it can fetch, from the chat it came in), or
/// a reason.
fn outcome(envelope: &Value, mode: GroupMode) -> Outcome {
    match normalize(envelope, &bot(), &mode.into(), NOW) {
        Normalized::Inbound(inbound) => {
            assert_eq!(inbound.conversation.gateway.as_str(), crate::GATEWAY_ID);
            assert_eq!(inbound.received_at_ms, NOW);
            let InboundBody::Media { attachments, .. } = &inbound.body else {
                return Outcome::Other;
            };
            assert!(!attachments.is_empty(), "media has attachments");
            for attachment in attachments {
                let file = SignalFile::from_ref(&attachment.file).expect("a file this gateway can fetch");
                let chat = match &file.group_id {
                    Some(group) => format!("group:{group}"),
                    None => file.recipient.clone().expect("a sender when no group"),
                };
                assert_eq!(
                    chat,
                    inbound.conversation.chat.as_str(),
                    "fetched from the chat it came in"
                );
                assert_eq!(file.size, attachment.size);
            }
            Outcome::Media
        }
        Normalized::Skip { reason } => {
            assert!(!reason.is_empty(), "a skip says why");
            Outcome::Skipped
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_envelope_is_taken_or_skipped_with_a_reason(envelope in envelope(), mode in group_mode()) {
        outcome(&envelope, mode);
    }
}

#[test]
fn the_drawn_envelopes_reach_every_outcome() {
    let mut runner = TestRunner::deterministic();
    let strategy = envelope();
    let outcomes: Vec<Outcome> = (0..256)
        .map(|_| strategy.new_tree(&mut runner).expect("an envelope is drawn").current())
        .map(|envelope| outcome(&envelope, GroupMode::All))
        .collect();
    for expected in [Outcome::Media, Outcome::Other, Outcome::Skipped] {
        assert!(
            outcomes.contains(&expected),
            "no {expected:?} in {} envelopes",
            outcomes.len()
        );
    }
}
