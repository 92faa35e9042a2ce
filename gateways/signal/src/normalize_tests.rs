//! Tests of [`normalize`](super::normalize) on envelopes shaped like signal-cli's JSON.

use passepartout_gateway::InboundBody;
use passepartout_gateway_testing::normalize::{inbound, skip_reason, with_fields};
use serde_json::{Value, json};

use super::*;

const NOW: u64 = 1_700_000_000_000;
const BOT_UUID: &str = "b0b0b0b0-0000-4000-8000-000000000001";
const BOT_NUMBER: &str = "+15550000001";
const ADA_UUID: &str = "a1a1a1a1-1111-4111-8111-111111111111";
const GROUP: &str = "Z3JvdXAtaWQtMTIzNDU2Nzg5MA==";
const TS: u64 = 1_700_000_123_456;

fn bot() -> BotIdentity {
    BotIdentity {
        uuid: Some(BOT_UUID.to_owned()),
        number: Some(BOT_NUMBER.to_owned()),
        note_to_self: false,
    }
}

/// An envelope from Ada (with no phone number, as for privacy-minded users)
/// carrying `content` (`{"dataMessage": …}`, `{"receiptMessage": …}`, …).
fn envelope(content: Value) -> Value {
    let envelope = json!({
        "source": ADA_UUID,
        "sourceNumber": null,
        "sourceUuid": ADA_UUID,
        "sourceName": "Ada",
        "sourceDevice": 1,
        "timestamp": TS,
        "serverReceivedTimestamp": TS + 5,
        "serverDeliveredTimestamp": TS + 6,
    });
    with_fields(envelope, content)
}

fn data(message: Value) -> Value {
    let data = json!({ "timestamp": TS, "message": null, "expiresInSeconds": 0, "viewOnce": false });
    envelope(json!({ "dataMessage": with_fields(data, message) }))
}

fn group_info() -> Value {
    json!({ "groupId": GROUP, "groupName": "Team", "revision": 3, "type": "DELIVER" })
}

fn run(envelope: &Value) -> Normalized {
    normalize(envelope, &bot(), &GroupMode::MentionOrReply.into(), NOW)
}

fn text(body: &str) -> InboundBody {
    InboundBody::Text { text: body.to_owned() }
}

#[test]
fn a_profile_name_is_cleaned_before_the_core_sees_it() {
    let mut envelope = data(json!({ "message": "hello" }));
    envelope["sourceName"] = json!("Ada\u{202E} (signal:someone-else)\n*bold*");
    let got = inbound(run(&envelope));
    assert_eq!(got.sender.display_name.as_deref(), Some("Ada signalsomeone-else bold"));
    assert_eq!(got.sender.username, None);
    envelope["sourceName"] = json!("\u{7}");
    assert_eq!(inbound(run(&envelope)).sender.display_name, None, "nothing showable");
}

#[test]
fn one_to_one_text_becomes_a_text_inbound() {
    let got = inbound(run(&data(json!({ "message": "hello" }))));
    assert_eq!(got.conversation.gateway.as_str(), "signal");
    assert_eq!(got.conversation.chat.as_str(), ADA_UUID);
    assert_eq!(got.sender.id.as_str(), ADA_UUID);
    assert_eq!(got.sender.display_name.as_deref(), Some("Ada"));
    assert_eq!(
        got.message_id.as_str(),
        format!("{TS}:{ADA_UUID}"),
        "the id names the author"
    );
    assert!(got.sender.aliases.is_empty(), "no number, no alias");
    assert_eq!(got.reply_to, None);
    assert_eq!(got.body, text("hello"));
    assert_eq!(got.received_at_ms, NOW);
}

#[test]
fn a_link_code_said_in_a_group_unaddressed_is_taken_overheard() {
    let envelope = data(json!({ "message": "/link ABCD2345", "groupInfo": group_info() }));
    let got = inbound(run(&envelope));
    assert!(got.overheard, "for the core to void, never to answer");
    assert_eq!(got.body, text("/link ABCD2345"));
}

#[test]
fn group_message_without_mention_or_quote_is_skipped_unless_all() {
    let envelope = data(json!({ "message": "just chatting", "groupInfo": group_info() }));
    assert_eq!(skip_reason(run(&envelope)), "group message not addressed to the bot");
    let got = inbound(normalize(&envelope, &bot(), &GroupMode::All.into(), NOW));
    assert_eq!(got.conversation.chat.as_str(), format!("group:{GROUP}"));
    assert_eq!(got.sender.id.as_str(), ADA_UUID);
    assert_eq!(got.body, text("just chatting"));
}

#[test]
fn group_mention_of_the_bot_is_taken_without_the_mention() {
    // signal-cli leaves U+FFFC where each mention is; offsets count UTF-16 units.
    let envelope = data(json!({
        "message": "😀 \u{FFFC} ask \u{FFFC} the time",
        "groupInfo": group_info(),
        "mentions": [
            { "name": BOT_NUMBER, "number": BOT_NUMBER, "uuid": BOT_UUID, "start": 3, "length": 1 },
            { "name": "Bob", "number": null, "uuid": "c2c2c2c2-2222-4222-8222-222222222222", "start": 9, "length": 1 },
        ],
    }));
    let got = inbound(run(&envelope));
    assert_eq!(got.conversation.chat.as_str(), format!("group:{GROUP}"));
    assert_eq!(got.body, text("😀  ask @Bob the time"));
}

#[test]
fn in_a_bridged_group_every_message_is_taken_and_only_an_addressed_one_is_for_the_assistant() {
    for mode in [GroupMode::MentionOrReply, GroupMode::All] {
        let groups = Groups {
            mode,
            bridged: [GROUP.to_owned()].into(),
        };
        let taken = |extra: Value| inbound(normalize(&data(extra), &bot(), &groups, NOW));
        let chat = taken(json!({ "message": "just chatting", "groupInfo": group_info() }));
        assert!(chat.overheard, "relayed, not answered, under {mode:?}");
        assert_eq!(chat.body, text("just chatting"));
        assert!(!taken(json!({ "message": "/status", "groupInfo": group_info() })).overheard);
        let mention = json!({
            "message": "\u{FFFC} hi",
            "groupInfo": group_info(),
            "mentions": [{ "number": BOT_NUMBER, "start": 0, "length": 1 }],
        });
        let mention = taken(mention);
        assert!(!mention.overheard && !mention.by_reply_only);
        let quote =
            json!({ "id": 5, "author": BOT_NUMBER, "authorNumber": BOT_NUMBER, "authorUuid": BOT_UUID, "text": "…" });
        let reply = taken(json!({ "message": "nice", "groupInfo": group_info(), "quote": quote }));
        assert!(
            !reply.overheard && reply.by_reply_only,
            "a reply to the bot's (perhaps a copy)"
        );
        assert!(
            !taken(json!({ "message": "hello" })).overheard,
            "a direct chat is as before"
        );
    }
}

#[test]
fn edits_and_deletions_are_taken_only_in_a_bridged_group() {
    let groups = Groups {
        mode: GroupMode::MentionOrReply,
        bridged: [GROUP.to_owned()].into(),
    };
    let mut edit = data(json!({}));
    edit.as_object_mut().unwrap().remove("dataMessage");
    edit["editMessage"] = json!({ "targetSentTimestamp": 5, "dataMessage": { "timestamp": TS, "message": "later", "groupInfo": group_info() } });
    assert_eq!(skip_reason(run(&edit)), "edited message");
    let got = inbound(normalize(&edit, &bot(), &groups, NOW));
    assert!(got.overheard);
    assert_eq!(
        got.body,
        InboundBody::Edited {
            target: MessageId::new(format!("5:{ADA_UUID}")).unwrap(),
            text: "later".into()
        }
    );
    let deletion = data(json!({ "remoteDelete": { "timestamp": 5 }, "groupInfo": group_info() }));
    assert_eq!(skip_reason(run(&deletion)), "remote deletion");
    let got = inbound(normalize(&deletion, &bot(), &groups, NOW));
    assert_eq!(
        got.body,
        InboundBody::Deleted {
            target: MessageId::new(format!("5:{ADA_UUID}")).unwrap()
        }
    );
}

#[test]
fn a_mention_by_number_only_also_addresses_the_bot() {
    let envelope = data(json!({
        "message": "\u{FFFC} hi",
        "groupInfo": group_info(),
        "mentions": [{ "number": BOT_NUMBER, "start": 0, "length": 1 }],
    }));
    assert_eq!(inbound(run(&envelope)).body, text("hi"));
}

#[test]
fn mentioning_someone_else_does_not_address_the_bot() {
    let envelope = data(json!({
        "message": "\u{FFFC} hi",
        "groupInfo": group_info(),
        "mentions": [{ "name": "Bob", "uuid": "c2c2c2c2-2222-4222-8222-222222222222", "start": 0, "length": 1 }],
    }));
    assert_eq!(skip_reason(run(&envelope)), "group message not addressed to the bot");
}

#[test]
fn a_quote_becomes_reply_to_and_a_quote_of_the_bot_addresses_it_in_a_group() {
    let quote = json!({ "id": 1_699_999_000_000u64, "author": BOT_NUMBER, "authorNumber": BOT_NUMBER,
        "authorUuid": BOT_UUID, "text": "earlier answer", "attachments": [] });
    let got = inbound(run(&data(
        json!({ "message": "and then?", "groupInfo": group_info(), "quote": quote }),
    )));
    assert_eq!(got.reply_to.as_ref().map(|id| id.as_str()), Some("1699999000000"));
    assert_eq!(got.body, text("and then?"));

    let other = json!({ "id": 5, "authorUuid": ADA_UUID, "text": "mine" });
    let in_group = data(json!({ "message": "re", "groupInfo": group_info(), "quote": other }));
    assert_eq!(skip_reason(run(&in_group)), "group message not addressed to the bot");
    let one_to_one = inbound(run(&data(json!({ "message": "re", "quote": other }))));
    assert_eq!(
        one_to_one.reply_to.as_ref().map(|id| id.as_str()),
        Some(format!("5:{ADA_UUID}").as_str()),
        "a quote of someone else's message names its author"
    );
}

#[test]
fn quotes_in_a_group_keep_their_author_for_the_reply() {
    let of_bob = json!({ "id": 7, "author": "+15550000002", "authorNumber": "+15550000002", "text": "x" });
    let envelope = data(json!({ "message": "see", "groupInfo": group_info(), "quote": of_bob }));
    let got = inbound(normalize(&envelope, &bot(), &GroupMode::All.into(), NOW));
    assert_eq!(
        got.reply_to.as_ref().map(|id| id.as_str()),
        Some("7:+15550000002"),
        "without a UUID, the number names the author"
    );
    assert_eq!(got.message_id.as_str(), format!("{TS}:{ADA_UUID}"));
}

#[test]
fn a_senders_number_is_their_alias() {
    let mut envelope = data(json!({ "message": "hi" }));
    envelope["sourceNumber"] = json!("+15550000003");
    let got = inbound(run(&envelope));
    assert_eq!(got.sender.id.as_str(), ADA_UUID, "keyed by UUID");
    assert_eq!(
        got.sender.aliases.iter().map(|id| id.as_str()).collect::<Vec<_>>(),
        ["+15550000003"]
    );
    assert!(got.sender.is("+15550000003") && got.sender.is(ADA_UUID));
}

#[test]
fn reactions_are_added_and_removed() {
    let reaction = |remove: bool| {
        data(
            json!({ "reaction": { "emoji": "👍", "targetAuthor": BOT_NUMBER, "targetAuthorNumber": BOT_NUMBER,
            "targetAuthorUuid": BOT_UUID, "targetSentTimestamp": 1_699_999_000_001u64, "isRemove": remove } }),
        )
    };
    let added = inbound(run(&reaction(false)));
    assert_eq!(added.message_id.as_str(), format!("{TS}:{ADA_UUID}"));
    assert_eq!(
        added.body,
        InboundBody::Reaction {
            emoji: "👍".into(),
            target: MessageId::new("1699999000001").unwrap(),
            removed: false
        }
    );
    let removed = inbound(run(&reaction(true)));
    assert!(matches!(removed.body, InboundBody::Reaction { removed: true, .. }));
}

#[test]
fn group_reactions_count_only_on_the_bots_messages() {
    let reaction = |target: &str| {
        data(
            json!({ "groupInfo": group_info(), "reaction": { "emoji": "❤️", "targetAuthorUuid": target,
            "targetSentTimestamp": 7, "isRemove": false } }),
        )
    };
    assert_eq!(
        skip_reason(run(&reaction(ADA_UUID))),
        "group reaction not on a message of the bot"
    );
    let got = inbound(run(&reaction(BOT_UUID)));
    assert_eq!(got.conversation.chat.as_str(), format!("group:{GROUP}"));
}

#[test]
fn receipts_typing_sync_and_edits_are_skipped() {
    let cases = [
        (
            json!({ "receiptMessage": { "when": TS, "isDelivery": true, "isRead": false, "timestamps": [1] } }),
            "receipt",
        ),
        (
            json!({ "typingMessage": { "action": "STARTED", "timestamp": TS } }),
            "typing indicator",
        ),
        (
            json!({ "syncMessage": { "sentMessage": { "destination": ADA_UUID, "message": "from my phone" } } }),
            "sync message from another device of the account",
        ),
        (
            json!({ "editMessage": { "targetSentTimestamp": 1, "dataMessage": { "message": "fixed" } } }),
            "edited message",
        ),
    ];
    for (content, reason) in cases {
        assert_eq!(skip_reason(run(&envelope(content))), reason);
    }
}

#[test]
fn unknown_and_malformed_envelopes_are_skipped() {
    assert_eq!(
        skip_reason(run(&envelope(json!({ "futureMessage": {} })))),
        "envelope without a message"
    );
    assert_eq!(
        skip_reason(run(&json!({ "timestamp": "not a number" }))),
        "envelope in a shape signal-cli is not known to send"
    );
    assert_eq!(
        skip_reason(run(&json!("not an object"))),
        "envelope in a shape signal-cli is not known to send"
    );
    let mut anonymous = data(json!({ "message": "hi" }));
    anonymous["sourceUuid"] = Value::Null;
    assert_eq!(skip_reason(run(&anonymous)), "envelope without a sender UUID");
}

#[test]
fn payments_are_unsupported_and_empty_messages_skipped() {
    let payment = data(json!({ "payment": { "note": "for lunch", "receipt": "AAAA" } }));
    assert_eq!(
        inbound(run(&payment)).body,
        InboundBody::Unsupported { what: "payment".into() }
    );
    assert_eq!(skip_reason(run(&data(json!({ "message": "  " })))), "empty message");
    assert_eq!(
        skip_reason(run(&data(json!({ "remoteDelete": { "timestamp": 1 } })))),
        "remote deletion"
    );
}

#[test]
fn the_bots_own_messages_are_skipped() {
    let mut own = data(json!({ "message": "note to self" }));
    own["sourceUuid"] = json!(BOT_UUID);
    assert_eq!(skip_reason(run(&own)), "message from the bot's own account");
}

#[path = "normalize_media_tests.rs"]
mod media;
