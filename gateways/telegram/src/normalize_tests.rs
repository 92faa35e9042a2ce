//! Tests of [`normalize`](super::normalize) on updates built from real Bot API JSON.

use std::collections::BTreeSet;

use passepartout_gateway::InboundBody;
use passepartout_gateway_testing::normalize::{inbound, skip_reason, with_fields};
use serde_json::{Value, json};
use teloxide::types::Update;

use super::*;

const BOT: &str = "PassBot";
const NOW: u64 = 1_700_000_000_000;
const PHOTO_MAX: u64 = 100_000;

fn update(kind: &str, payload: Value) -> Update {
    let mut json = json!({ "update_id": 42 });
    json[kind] = payload;
    let update = parse(&json);
    assert!(
        !matches!(update.kind, UpdateKind::Error(_)),
        "teloxide could not parse the test update: {update:?}"
    );
    update
}

/// Parses an update the way the polling loop will: from text. Deserializing
/// with `serde_json::from_value` does not work for `Update`: teloxide's
/// flattened `UpdateKind` wants a borrowed key and turns every owned-key update
/// into `UpdateKind::Error`.
fn parse(json: &Value) -> Update {
    serde_json::from_str(&json.to_string()).expect("the update envelope parses")
}

fn person() -> Value {
    json!({ "id": 1001, "is_bot": false, "first_name": "Ada", "last_name": "Lovelace" })
}

fn bot_user() -> Value {
    json!({ "id": 9000, "is_bot": true, "first_name": "Pass", "username": BOT })
}

fn private_chat() -> Value {
    json!({ "id": 1001, "type": "private", "first_name": "Ada" })
}

fn group_chat() -> Value {
    json!({ "id": -100_555, "type": "supergroup", "title": "Team" })
}

fn message(chat: Value, extra: Value) -> Value {
    let message = json!({ "message_id": 7, "date": 1_700_000_000, "chat": chat, "from": person() });
    with_fields(message, extra)
}

fn run(update: &Update) -> Normalized {
    normalize(update, BOT, GroupMode::MentionOrReply, &BTreeSet::new(), PHOTO_MAX, NOW)
}

#[test]
fn private_text_becomes_a_text_inbound() {
    let got = inbound(run(&update(
        "message",
        message(private_chat(), json!({ "text": "hello" })),
    )));
    assert_eq!(got.conversation.gateway.as_str(), "telegram");
    assert_eq!(got.conversation.chat.as_str(), "1001");
    assert_eq!(got.sender.id.as_str(), "1001");
    assert_eq!(got.sender.display_name.as_deref(), Some("Ada Lovelace"));
    assert_eq!(got.message_id.as_str(), "7");
    assert_eq!(got.reply_to, None);
    assert_eq!(got.body, InboundBody::Text { text: "hello".into() });
    assert_eq!(got.received_at_ms, NOW);
}

#[test]
fn the_senders_name_and_username_are_kept_cleaned() {
    let from = json!({ "id": 1001, "is_bot": false, "first_name": "Ada\n(telegram:7)", "last_name": "*L*", "username": "ada_l" });
    let got = inbound(run(&update(
        "message",
        message(private_chat(), json!({ "text": "hello", "from": from })),
    )));
    assert_eq!(got.sender.display_name.as_deref(), Some("Ada telegram7 L"));
    assert_eq!(got.sender.username.as_deref(), Some("ada_l"));
    assert_eq!(
        got.sender.shown(&got.conversation.gateway),
        "Ada telegram7 L @ada_l (telegram:1001)"
    );
}

#[test]
fn a_reply_carries_the_replied_message_id() {
    let replied = message(
        private_chat(),
        json!({ "message_id": 5, "text": "earlier", "from": bot_user() }),
    );
    let got = inbound(run(&update(
        "message",
        message(
            private_chat(),
            json!({ "text": "and then?", "reply_to_message": replied }),
        ),
    )));
    assert_eq!(got.reply_to.map(|id| id.as_str().to_owned()), Some("5".into()));
}

#[test]
fn group_message_without_mention_or_reply_is_skipped() {
    let update = update("message", message(group_chat(), json!({ "text": "just chatting" })));
    assert_eq!(skip_reason(run(&update)), "group message not addressed to the bot");
}

#[test]
fn a_link_code_said_in_a_group_unaddressed_is_taken_overheard() {
    let said = update("message", message(group_chat(), json!({ "text": "/link ABCD2345" })));
    let got = inbound(run(&said));
    assert!(got.overheard, "for the core to void, never to answer");
    assert_eq!(
        got.body,
        InboundBody::Text {
            text: "/link ABCD2345".into()
        }
    );
    let asked = update("message", message(group_chat(), json!({ "text": "/link" })));
    assert_eq!(skip_reason(run(&asked)), "group message not addressed to the bot");
}

#[test]
fn group_message_mentioning_the_bot_is_taken_without_the_mention() {
    // "@passbot" in another case still names the bot; entity offsets are UTF-16.
    let text = "😀 @passbot what is the time?";
    let update = update(
        "message",
        message(
            group_chat(),
            json!({ "text": text, "entities": [{ "type": "mention", "offset": 3, "length": 8 }] }),
        ),
    );
    let got = inbound(run(&update));
    assert_eq!(got.conversation.chat.as_str(), "-100555");
    assert_eq!(
        got.body,
        InboundBody::Text {
            text: "😀  what is the time?".into()
        }
    );
}

#[test]
fn entities_off_the_text_are_ignored_not_a_panic() {
    // Past the end, into the middle of the emoji's surrogate pair, too long:
    // teloxide's own entity parsing panics on each.
    for (offset, length) in [(20, 8), (1, 8), (2, 99)] {
        let entities = json!([{ "type": "mention", "offset": offset, "length": length }]);
        let text = update(
            "message",
            message(group_chat(), json!({ "text": "😀@PassBot hi", "entities": entities })),
        );
        assert_eq!(skip_reason(run(&text)), "group message not addressed to the bot");
        let caption = update(
            "message",
            message(
                group_chat(),
                json!({ "photo": [{ "file_id": "p", "file_unique_id": "p", "width": 1, "height": 1 }],
                    "caption": "😀@PassBot hi", "caption_entities": entities }),
            ),
        );
        assert_eq!(skip_reason(run(&caption)), "group message not addressed to the bot");
    }
    let right = json!([{ "type": "mention", "offset": 2, "length": 8 }]);
    let text = update(
        "message",
        message(group_chat(), json!({ "text": "😀@PassBot hi", "entities": right })),
    );
    assert_eq!(inbound(run(&text)).body, InboundBody::Text { text: "😀 hi".into() });
}

#[test]
fn utf16_ranges_fall_between_characters_or_are_none() {
    assert_eq!(utf16_range("a😀b", 0, 1), Some(0..1));
    assert_eq!(utf16_range("a😀b", 1, 2), Some(1..5));
    assert_eq!(utf16_range("a😀b", 3, 1), Some(5..6));
    assert_eq!(utf16_range("a😀b", 4, 0), Some(6..6));
    assert_eq!(utf16_range("a😀b", 2, 1), None, "inside the pair");
    assert_eq!(utf16_range("a😀b", 1, 1), None, "ends inside the pair");
    assert_eq!(utf16_range("a😀b", 3, 2), None, "past the end");
    assert_eq!(utf16_range("a", usize::MAX, 2), None);
}

#[test]
fn mentioning_another_bot_does_not_address_ours() {
    let update = update(
        "message",
        message(
            group_chat(),
            json!({ "text": "@OtherBot hi", "entities": [{ "type": "mention", "offset": 0, "length": 9 }] }),
        ),
    );
    assert_eq!(skip_reason(run(&update)), "group message not addressed to the bot");
}

#[test]
fn group_reply_to_the_bot_is_taken() {
    let replied = message(
        group_chat(),
        json!({ "message_id": 3, "text": "I said", "from": bot_user() }),
    );
    let update = update(
        "message",
        message(
            group_chat(),
            json!({ "text": "you said?", "reply_to_message": replied }),
        ),
    );
    let got = inbound(run(&update));
    assert_eq!(
        got.body,
        InboundBody::Text {
            text: "you said?".into()
        }
    );
    assert_eq!(got.reply_to.map(|id| id.as_str().to_owned()), Some("3".into()));
}

#[test]
fn group_reply_to_a_person_is_skipped() {
    let replied = message(group_chat(), json!({ "message_id": 3, "text": "mine" }));
    let update = update(
        "message",
        message(group_chat(), json!({ "text": "yours", "reply_to_message": replied })),
    );
    assert_eq!(skip_reason(run(&update)), "group message not addressed to the bot");
}

fn taken_with_reply(bridged: &BTreeSet<i64>, extra: Value) -> passepartout_gateway::Inbound {
    let update = update("message", message(group_chat(), extra));
    inbound(normalize(
        &update,
        BOT,
        GroupMode::MentionOrReply,
        bridged,
        PHOTO_MAX,
        NOW,
    ))
}

#[test]
fn in_a_bridged_group_every_message_is_taken_and_only_an_addressed_one_is_for_the_assistant() {
    let bridged = BTreeSet::from([-100_555]);
    let taken = |extra: Value, mode| {
        let update = update("message", message(group_chat(), extra));
        inbound(normalize(&update, BOT, mode, &bridged, PHOTO_MAX, NOW))
    };
    for mode in [GroupMode::MentionOrReply, GroupMode::All] {
        let chat = taken(json!({ "text": "just chatting" }), mode);
        assert!(chat.overheard, "relayed, not answered, under {mode:?}");
        let command = taken(json!({ "text": "/status" }), mode);
        assert!(!command.overheard);
        let mention = json!({ "text": "@passbot hi", "entities": [{ "type": "mention", "offset": 0, "length": 8 }] });
        assert!(!taken(mention, mode).overheard);
    }
    // Replying to one of the bot's messages (perhaps a relayed copy): the
    // core tells which; with a mention it is the assistant's either way.
    let mut bots = message(group_chat(), json!({ "message_id": 3, "text": "a copy" }));
    bots["from"] = bot_user();
    let replied = taken_with_reply(&bridged, json!({ "text": "nice", "reply_to_message": bots.clone() }));
    assert!(!replied.overheard && replied.by_reply_only);
    let asked = taken_with_reply(
        &bridged,
        json!({ "text": "@passbot really?", "entities": [{ "type": "mention", "offset": 0, "length": 8 }], "reply_to_message": bots }),
    );
    assert!(!asked.overheard && !asked.by_reply_only);
    let elsewhere = update(
        "message",
        message(
            json!({ "id": -100_666, "type": "supergroup", "title": "Other" }),
            json!({ "text": "x" }),
        ),
    );
    assert_eq!(
        skip_reason(normalize(
            &elsewhere,
            BOT,
            GroupMode::MentionOrReply,
            &bridged,
            PHOTO_MAX,
            NOW
        )),
        "group message not addressed to the bot",
        "a group not bridged is as before"
    );
    let private = update("message", message(private_chat(), json!({ "text": "hi" })));
    assert!(
        !inbound(normalize(
            &private,
            BOT,
            GroupMode::MentionOrReply,
            &bridged,
            PHOTO_MAX,
            NOW
        ))
        .overheard
    );
}

#[test]
fn an_edit_is_taken_only_in_a_bridged_group_under_an_id_of_its_own() {
    let mut edited = message(group_chat(), json!({ "text": "see you at 8" }));
    edited["edit_date"] = json!(1_700_000_100);
    let update = update("edited_message", edited);
    assert_eq!(skip_reason(run(&update)), "edited message");
    let bridged = BTreeSet::from([-100_555]);
    let got = inbound(normalize(
        &update,
        BOT,
        GroupMode::MentionOrReply,
        &bridged,
        PHOTO_MAX,
        NOW,
    ));
    assert!(got.overheard, "for the other sides, never the assistant");
    assert_eq!(got.message_id.as_str(), format!("edit-{}", update.id.0));
    assert_eq!(
        got.body,
        InboundBody::Edited {
            target: passepartout_gateway::MessageId::new("7").unwrap(),
            text: "see you at 8".into()
        }
    );
}

#[test]
fn group_mode_all_takes_every_group_message() {
    let update = update("message", message(group_chat(), json!({ "text": "just chatting" })));
    let got = inbound(normalize(
        &update,
        BOT,
        GroupMode::All,
        &BTreeSet::new(),
        PHOTO_MAX,
        NOW,
    ));
    assert_eq!(
        got.body,
        InboundBody::Text {
            text: "just chatting".into()
        }
    );
}

#[test]
fn a_bare_mention_is_skipped_as_empty() {
    let update = update(
        "message",
        message(
            group_chat(),
            json!({ "text": "@PassBot", "entities": [{ "type": "mention", "offset": 0, "length": 8 }] }),
        ),
    );
    assert_eq!(skip_reason(run(&update)), "empty text");
}

#[test]
fn a_button_press_becomes_a_button_inbound() {
    let pressed_on = message(
        private_chat(),
        json!({ "message_id": 11, "text": "Approve?", "from": bot_user() }),
    );
    let update = update(
        "callback_query",
        json!({
            "id": "4382bfdwdsb323b2d9",
            "from": person(),
            "message": pressed_on,
            "chat_instance": "-123456789",
            "data": "approve:K7PX2Q",
        }),
    );
    let got = inbound(run(&update));
    assert_eq!(got.conversation.chat.as_str(), "1001");
    assert_eq!(got.sender.id.as_str(), "1001");
    assert_eq!(got.message_id.as_str(), "callback:4382bfdwdsb323b2d9");
    assert_eq!(got.reply_to.map(|id| id.as_str().to_owned()), Some("11".into()));
    assert_eq!(
        got.body,
        InboundBody::Button {
            data: "approve:K7PX2Q".into()
        }
    );
}

#[test]
fn a_button_press_on_an_inline_message_is_skipped() {
    let update = update(
        "callback_query",
        json!({ "id": "q1", "from": person(), "inline_message_id": "im", "chat_instance": "1", "data": "x" }),
    );
    assert_eq!(skip_reason(run(&update)), "callback query on an inline message");
}

#[test]
fn a_reaction_becomes_a_reaction_inbound() {
    let reaction = |old: Value, new: Value| {
        update(
            "message_reaction",
            json!({ "chat": private_chat(), "message_id": 9, "user": person(), "date": 1_700_000_000,
                "old_reaction": old, "new_reaction": new }),
        )
    };
    let thumbs = json!([{ "type": "emoji", "emoji": "👍" }]);
    let got = inbound(run(&reaction(json!([]), thumbs.clone())));
    assert_eq!(got.message_id.as_str(), "reaction-42");
    assert_eq!(
        got.body,
        InboundBody::Reaction {
            emoji: "👍".into(),
            target: passepartout_gateway::MessageId::new("9").expect("valid id"),
            removed: false,
        }
    );
    let got = inbound(run(&reaction(thumbs, json!([]))));
    assert!(matches!(got.body, InboundBody::Reaction { removed: true, .. }));
}

#[test]
fn edits_channel_posts_and_other_kinds_are_skipped() {
    let edited = update(
        "edited_message",
        message(private_chat(), json!({ "text": "fixed", "edit_date": 1_700_000_100 })),
    );
    assert_eq!(skip_reason(run(&edited)), "edited message");

    let channel = json!({ "id": -100_777, "type": "channel", "title": "News" });
    let post = update(
        "channel_post",
        json!({ "message_id": 1, "date": 1_700_000_000, "chat": channel, "text": "news" }),
    );
    assert_eq!(skip_reason(run(&post)), "channel post");

    let inline = update(
        "inline_query",
        json!({ "id": "iq", "from": person(), "query": "q", "offset": "" }),
    );
    assert_eq!(skip_reason(run(&inline)), "update kind not handled");
}

#[test]
fn a_malformed_update_is_skipped_not_an_error() {
    // A callback query without `chat_instance` does not parse: teloxide turns
    // it into an error update, which must not stop the batch.
    let json = json!({ "update_id": 43, "callback_query": { "id": "q", "from": person(), "data": "x" } });
    let update = parse(&json);
    assert_eq!(skip_reason(run(&update)), "update teloxide could not parse");
}

#[test]
fn service_messages_and_bot_senders_are_skipped() {
    let joined = update(
        "message",
        message(group_chat(), json!({ "new_chat_members": [person()] })),
    );
    assert_eq!(
        skip_reason(normalize(
            &joined,
            BOT,
            GroupMode::All,
            &BTreeSet::new(),
            PHOTO_MAX,
            NOW
        )),
        "service message"
    );

    let from_bot = update(
        "message",
        message(private_chat(), json!({ "text": "hi", "from": bot_user() })),
    );
    assert_eq!(skip_reason(run(&from_bot)), "message from a bot");
}

#[path = "normalize_media_tests.rs"]
mod media;
