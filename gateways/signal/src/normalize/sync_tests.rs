//! Tests of sync messages: Note to Self on a person's own account, and
//! everything else the account's devices sync, skipped.

use passepartout_gateway::InboundBody;
use passepartout_gateway_testing::normalize::{inbound, skip_reason, with_fields};
use serde_json::{Value, json};

use crate::normalize::{BotIdentity, GroupMode, Normalized, normalize};

const NOW: u64 = 1_700_000_000_000;
const OWN_UUID: &str = "b0b0b0b0-0000-4000-8000-000000000001";
const OWN_NUMBER: &str = "+15550000001";
const FRIEND_UUID: &str = "a1a1a1a1-1111-4111-8111-111111111111";
const FRIEND_NUMBER: &str = "+15550000042";
const TS: u64 = 1_700_000_123_456;
const PROMPT_TS: u64 = 1_700_000_100_000;

fn personal() -> BotIdentity {
    BotIdentity {
        uuid: Some(OWN_UUID.to_owned()),
        number: Some(OWN_NUMBER.to_owned()),
        note_to_self: true,
    }
}

/// A sync message from the account's phone (device 1) carrying `sync`.
fn synced(sync: Value) -> Value {
    json!({
        "source": OWN_NUMBER, "sourceNumber": OWN_NUMBER, "sourceUuid": OWN_UUID, "sourceName": "Me",
        "sourceDevice": 1, "timestamp": TS, "syncMessage": sync,
    })
}

/// What the phone sent to `number` / `uuid`, with the data message's `fields`.
fn sent_to(number: Option<&str>, uuid: Option<&str>, fields: Value) -> Value {
    let sent = json!({ "destination": number.or(uuid), "destinationNumber": number, "destinationUuid": uuid,
        "timestamp": TS, "message": null, "expiresInSeconds": 0, "viewOnce": false });
    synced(json!({ "sentMessage": with_fields(sent, fields) }))
}

fn note(fields: Value) -> Value {
    sent_to(Some(OWN_NUMBER), Some(OWN_UUID), fields)
}

fn run(envelope: &Value) -> Normalized {
    normalize(envelope, &personal(), &GroupMode::MentionOrReply.into(), NOW)
}

#[test]
fn a_note_to_self_is_a_message_of_the_note_to_self_conversation_from_the_account() {
    let got = inbound(run(&note(json!({ "message": "remind me to call mum" }))));
    assert_eq!(got.conversation.gateway.as_str(), "signal");
    assert_eq!(
        got.conversation.chat.as_str(),
        OWN_NUMBER,
        "replies go to the own number"
    );
    assert_eq!(got.sender.id.as_str(), OWN_UUID);
    let aliases: Vec<&str> = got.sender.aliases.iter().map(|alias| alias.as_str()).collect();
    assert_eq!(aliases, [OWN_NUMBER], "the number, by which the person approves");
    assert_eq!(got.message_id.as_str(), format!("{TS}:{OWN_UUID}"));
    assert_eq!(
        got.body,
        InboundBody::Text {
            text: "remind me to call mum".into()
        }
    );
    assert_eq!(got.received_at_ms, NOW);
}

#[test]
fn a_note_to_self_is_recognised_by_number_or_by_uuid_alone() {
    let by_number = sent_to(Some(OWN_NUMBER), None, json!({ "message": "a" }));
    assert_eq!(inbound(run(&by_number)).conversation.chat.as_str(), OWN_NUMBER);
    let by_uuid = sent_to(None, Some(OWN_UUID), json!({ "message": "b" }));
    assert_eq!(inbound(run(&by_uuid)).conversation.chat.as_str(), OWN_NUMBER);
    // The account's UUID unknown to the configuration: the UUID its
    // devices send from is the account's.
    let without_uuid = BotIdentity {
        uuid: None,
        ..personal()
    };
    let got = normalize(&by_uuid, &without_uuid, &GroupMode::MentionOrReply.into(), NOW);
    assert_eq!(inbound(got).conversation.chat.as_str(), OWN_NUMBER);
}

#[test]
fn the_persons_messages_to_others_and_to_groups_are_never_taken() {
    let to_friend = sent_to(
        Some(FRIEND_NUMBER),
        Some(FRIEND_UUID),
        json!({ "message": "see you at 8" }),
    );
    assert_eq!(
        skip_reason(run(&to_friend)),
        "sync message of the account's message to someone else"
    );
    let to_friend_by_uuid = sent_to(None, Some(FRIEND_UUID), json!({ "message": "see you" }));
    assert_eq!(
        skip_reason(run(&to_friend_by_uuid)),
        "sync message of the account's message to someone else"
    );
    let group = json!({ "groupInfo": { "groupId": "R1JPVVA=", "type": "DELIVER" }, "message": "hi all" });
    // A group message names no destination; even one naming the account is a group's.
    for envelope in [sent_to(None, None, group.clone()), note(group)] {
        assert_eq!(
            skip_reason(run(&envelope)),
            "sync message of the account's message to a group"
        );
    }
}

#[test]
fn a_link_code_the_person_said_to_others_or_a_group_is_handed_on_overheard() {
    let to_friend = sent_to(
        Some(FRIEND_NUMBER),
        Some(FRIEND_UUID),
        json!({ "message": "/link ABCD2345" }),
    );
    let got = inbound(run(&to_friend));
    assert!(got.overheard, "for the core to void, never to answer");
    assert_eq!(got.conversation.chat.as_str(), FRIEND_UUID, "where it was said");
    assert_eq!(got.sender.id.as_str(), OWN_UUID);
    let group = json!({ "groupInfo": { "groupId": "R1JPVVA=", "type": "DELIVER" }, "message": "/link ABCD2345" });
    let got = inbound(run(&sent_to(None, None, group)));
    assert!(got.overheard);
    assert_eq!(got.conversation.chat.as_str(), "group:R1JPVVA=");
    assert_eq!(
        got.body,
        InboundBody::Text {
            text: "/link ABCD2345".into()
        }
    );
}

#[test]
fn on_a_dedicated_number_every_sync_message_is_skipped() {
    let dedicated = BotIdentity {
        note_to_self: false,
        ..personal()
    };
    let got = normalize(
        &note(json!({ "message": "hello" })),
        &dedicated,
        &GroupMode::MentionOrReply.into(),
        NOW,
    );
    assert_eq!(skip_reason(got), "sync message from another device of the account");
}

#[test]
fn other_sync_messages_are_skipped() {
    let read =
        synced(json!({ "readMessages": [{ "sender": FRIEND_NUMBER, "senderUuid": FRIEND_UUID, "timestamp": 1 }] }));
    let contacts = synced(json!({ "type": "CONTACTS_SYNC" }));
    for envelope in [read, contacts] {
        assert_eq!(
            skip_reason(run(&envelope)),
            "sync message that is not a sent message (receipts, contacts, …)"
        );
    }
    let edit = note(json!({ "editMessage": { "targetSentTimestamp": 1, "dataMessage": { "message": "fixed" } } }));
    assert_eq!(skip_reason(run(&edit)), "edited message");
    assert_eq!(skip_reason(run(&note(json!({ "message": " " })))), "empty message");
}

#[test]
fn malformed_sync_messages_are_skipped() {
    let cases = [
        (
            synced(json!("not an object")),
            "sync message in a shape signal-cli is not known to send",
        ),
        (
            synced(json!({ "sentMessage": "text" })),
            "sync message in a shape signal-cli is not known to send",
        ),
        (
            synced(json!({ "sentMessage": { "destination": 5, "message": "x" } })),
            "sync message in a shape signal-cli is not known to send",
        ),
        (
            synced(json!({ "sentMessage": { "destinationNumber": OWN_NUMBER, "timestamp": "soon", "message": "x" } })),
            "sync message in a shape signal-cli is not known to send",
        ),
        (
            synced(json!({ "sentMessage": { "message": "to nobody named" } })),
            "sync message of the account's message to someone else",
        ),
    ];
    for (envelope, reason) in cases {
        assert_eq!(skip_reason(run(&envelope)), reason, "{envelope}");
    }
    let mut anonymous = note(json!({ "message": "x" }));
    anonymous["sourceUuid"] = Value::Null;
    assert_eq!(skip_reason(run(&anonymous)), "sync message without a sender UUID");
    let mut undated = note(json!({ "message": "x" }));
    undated["timestamp"] = Value::Null;
    undated["syncMessage"]["sentMessage"]["timestamp"] = Value::Null;
    assert_eq!(skip_reason(run(&undated)), "sync message without a timestamp");
}

#[test]
fn a_sync_message_from_another_account_is_not_the_person() {
    let mut forged = note(json!({ "message": "approve" }));
    forged["sourceUuid"] = json!(FRIEND_UUID);
    forged["sourceNumber"] = json!(FRIEND_NUMBER);
    assert_eq!(skip_reason(run(&forged)), "sync message not from the account itself");
}

#[test]
fn a_reaction_or_a_quote_in_note_to_self_points_at_the_assistants_message() {
    let reaction = note(
        json!({ "reaction": { "emoji": "👍", "targetAuthor": OWN_NUMBER, "targetAuthorNumber": OWN_NUMBER,
        "targetAuthorUuid": OWN_UUID, "targetSentTimestamp": PROMPT_TS, "isRemove": false } }),
    );
    let got = inbound(run(&reaction));
    assert_eq!(got.conversation.chat.as_str(), OWN_NUMBER);
    assert_eq!(
        got.body,
        InboundBody::Reaction {
            emoji: "👍".into(),
            target: passepartout_gateway::MessageId::new(PROMPT_TS.to_string()).unwrap(),
            removed: false,
        },
        "the id the assistant's send was given"
    );
    let quote = note(
        json!({ "message": "approve", "quote": { "id": PROMPT_TS, "author": OWN_NUMBER,
        "authorNumber": OWN_NUMBER, "authorUuid": OWN_UUID, "text": "Approval needed", "attachments": [] } }),
    );
    let got = inbound(run(&quote));
    assert_eq!(
        got.reply_to.map(|id| id.as_str().to_owned()),
        Some(PROMPT_TS.to_string())
    );
}

#[test]
fn in_a_group_a_mention_quote_or_reaction_of_the_person_is_not_for_the_assistant() {
    let group = |fields: Value| {
        let data = with_fields(
            json!({ "timestamp": TS, "message": "hey", "groupInfo": { "groupId": "R3JvdXA=", "type": "DELIVER" } }),
            fields,
        );
        json!({ "source": FRIEND_NUMBER, "sourceNumber": FRIEND_NUMBER, "sourceUuid": FRIEND_UUID,
                "sourceDevice": 1, "timestamp": TS, "dataMessage": data })
    };
    let mention = group(json!({ "message": "\u{fffc} lunch?",
        "mentions": [{ "uuid": OWN_UUID, "number": OWN_NUMBER, "start": 0, "length": 1 }] }));
    let quote =
        group(json!({ "quote": { "id": PROMPT_TS, "authorUuid": OWN_UUID, "authorNumber": OWN_NUMBER, "text": "x" } }));
    let reaction = group(
        json!({ "message": null, "reaction": { "emoji": "👍", "targetAuthorUuid": OWN_UUID,
        "targetAuthorNumber": OWN_NUMBER, "targetSentTimestamp": PROMPT_TS, "isRemove": false } }),
    );
    for (envelope, what) in [(&mention, "a mention"), (&quote, "a quote"), (&reaction, "a reaction")] {
        let reason = skip_reason(run(envelope));
        assert!(
            reason.starts_with("group"),
            "{what} of the person in a group is theirs: {reason}"
        );
        // On a dedicated number, the same is addressed to the bot.
        let dedicated = BotIdentity {
            note_to_self: false,
            ..personal()
        };
        inbound(normalize(envelope, &dedicated, &GroupMode::MentionOrReply.into(), NOW));
    }
    // With every group message taken, the group talks as before.
    inbound(normalize(&mention, &personal(), &GroupMode::All.into(), NOW));
}
