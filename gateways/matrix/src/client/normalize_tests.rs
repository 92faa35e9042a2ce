use proptest::prelude::*;
use serde_json::json;

use super::*;

const ME: &str = "@assistant:example.org";
const ROOM: &str = "!room:example.org";

fn ours(id: &str) -> bool {
    id == "$mine"
}

fn rules(direct: bool, bridged: bool) -> Rules<'static> {
    Rules {
        own_user: ME,
        direct,
        group_mode: GroupMode::MentionOrReply,
        bridged,
        is_ours: &ours,
    }
}

fn text(body: &str) -> Value {
    json!({
        "type": "m.room.message", "sender": "@ada:example.org", "event_id": "$e1",
        "content": { "msgtype": "m.text", "body": body },
    })
}

#[test]
fn a_text_in_a_direct_chat_is_taken_with_its_ids() {
    let inbound = normalize(ROOM, &text("hello"), &rules(true, false)).unwrap();
    assert_eq!(inbound.conversation.chat.as_str(), ROOM);
    assert_eq!(inbound.conversation.gateway.as_str(), "matrix");
    assert_eq!(inbound.sender.id.as_str(), "@ada:example.org");
    assert_eq!(inbound.message_id.as_str(), "$e1");
    assert_eq!(inbound.body, InboundBody::Text { text: "hello".into() });
    assert!(!inbound.overheard && !inbound.by_reply_only);
}

#[test]
fn in_a_room_only_what_addresses_the_assistant_is_taken() {
    let room = rules(false, false);
    assert_eq!(
        normalize(ROOM, &text("just chatting"), &room).unwrap_err(),
        Skipped("not addressed to the assistant")
    );
    assert!(normalize(ROOM, &text(&format!("{ME}: hi")), &room).is_ok());
    assert!(normalize(ROOM, &text("/status"), &room).is_ok());
    let mut listed = text("hi there");
    listed["content"]["m.mentions"] = json!({ "user_ids": [ME] });
    assert!(normalize(ROOM, &listed, &room).is_ok());
    let mut reply = text("yes");
    reply["content"]["m.relates_to"] = json!({ "m.in_reply_to": { "event_id": "$mine" } });
    let inbound = normalize(ROOM, &reply, &room).unwrap();
    assert!(inbound.by_reply_only);
    assert_eq!(inbound.reply_to.unwrap().as_str(), "$mine");
    let all = Rules {
        group_mode: GroupMode::All,
        ..rules(false, false)
    };
    assert!(normalize(ROOM, &text("just chatting"), &all).is_ok());
}

#[test]
fn a_bridged_room_passes_what_is_not_addressed_as_overheard() {
    let inbound = normalize(ROOM, &text("just chatting"), &rules(false, true)).unwrap();
    assert!(inbound.overheard);
    let mut edit = text("* fixed");
    edit["content"]["m.relates_to"] = json!({ "rel_type": "m.replace", "event_id": "$old" });
    edit["content"]["m.new_content"] = json!({ "msgtype": "m.text", "body": "fixed" });
    let edited = normalize(ROOM, &edit, &rules(false, true)).unwrap();
    assert_eq!(
        edited.body,
        InboundBody::Edited {
            target: MessageId::new("$old").unwrap(),
            text: "fixed".into()
        }
    );
    assert_eq!(
        normalize(ROOM, &edit, &rules(true, false)).unwrap_err(),
        Skipped("an edit, outside a bridge")
    );
    let redaction = json!({ "type": "m.room.redaction", "sender": "@ada:example.org", "event_id": "$r", "redacts": "$old", "content": {} });
    assert!(matches!(
        normalize(ROOM, &redaction, &rules(false, true)).unwrap().body,
        InboundBody::Deleted { .. }
    ));
    assert_eq!(
        normalize(ROOM, &redaction, &rules(true, false)).unwrap_err(),
        Skipped("not a message")
    );
}

#[test]
fn each_kind_that_is_not_taken_says_why() {
    let direct = rules(true, false);
    let mut own = text("echo");
    own["sender"] = json!(ME);
    assert_eq!(
        normalize(ROOM, &own, &direct).unwrap_err(),
        Skipped("the assistant's own event")
    );
    let mut notice = text("I am a bot");
    notice["content"]["msgtype"] = json!("m.notice");
    assert_eq!(
        normalize(ROOM, &notice, &direct).unwrap_err(),
        Skipped("a notice (a bot's message)")
    );
    let member = json!({ "type": "m.room.member", "sender": "@ada:example.org", "event_id": "$m", "state_key": "@ada:example.org", "content": { "membership": "join" } });
    assert_eq!(normalize(ROOM, &member, &direct).unwrap_err(), Skipped("a state event"));
    let encrypted = json!({ "type": "m.room.encrypted", "sender": "@ada:example.org", "event_id": "$x", "content": { "algorithm": "m.megolm.v1.aes-sha2" } });
    assert_eq!(
        normalize(ROOM, &encrypted, &direct).unwrap_err(),
        Skipped("an event that could not be decrypted")
    );
    let typing = json!({ "type": "m.typing", "content": {} });
    assert_eq!(normalize(ROOM, &typing, &direct).unwrap_err(), Skipped("no sender"));
    let unknown = json!({ "type": "org.example.poll", "sender": "@ada:example.org", "event_id": "$p", "content": {} });
    assert_eq!(
        normalize(ROOM, &unknown, &direct).unwrap_err(),
        Skipped("not a message")
    );
}

#[test]
fn an_image_is_an_attachment_by_its_source_and_a_reaction_to_a_prompt_is_taken() {
    let direct = rules(true, false);
    let mut image = text("cat.png");
    image["content"]["msgtype"] = json!("m.image");
    image["content"]["url"] = json!("mxc://example.org/abc");
    image["content"]["info"] = json!({ "mimetype": "image/png", "size": 2048 });
    let InboundBody::Media { attachments, caption } = normalize(ROOM, &image, &direct).unwrap().body else {
        panic!("an image is media");
    };
    assert_eq!(caption, None, "a body that is the file's name is no caption");
    assert_eq!(attachments.len(), 1);
    let image = &attachments[0];
    assert_eq!(image.kind, MediaKind::Photo);
    assert_eq!(image.file.0, r#"{"url":"mxc://example.org/abc"}"#);
    assert_eq!((image.mime.as_deref(), image.size), (Some("image/png"), Some(2048)));
    assert_eq!(image.name.as_deref(), Some("cat.png"));
    let reaction = json!({
        "type": "m.reaction", "sender": "@ada:example.org", "event_id": "$r",
        "content": { "m.relates_to": { "rel_type": "m.annotation", "event_id": "$mine", "key": "👍" } },
    });
    let taken = normalize(ROOM, &reaction, &rules(false, false)).unwrap();
    assert_eq!(
        taken.body,
        InboundBody::Reaction {
            emoji: "👍".into(),
            target: MessageId::new("$mine").unwrap(),
            removed: false
        }
    );
}

#[test]
fn an_encrypted_voice_message_keeps_its_key_its_length_and_its_caption() {
    let mut voice = text("what does this say?");
    voice["content"]["msgtype"] = json!("m.audio");
    voice["content"]["filename"] = json!("voice.ogg");
    voice["content"]["org.matrix.msc3245.voice"] = json!({});
    voice["content"]["info"] = json!({ "mimetype": "audio/ogg", "duration": 4200 });
    let file = json!({ "url": "mxc://example.org/enc", "key": { "k": "secret" }, "iv": "x", "hashes": {}, "v": "v2" });
    voice["content"]["file"] = file.clone();
    let InboundBody::Media { attachments, caption } = normalize(ROOM, &voice, &rules(true, false)).unwrap().body else {
        panic!("a voice message is media");
    };
    assert_eq!(caption.as_deref(), Some("what does this say?"));
    let voice = &attachments[0];
    assert_eq!(voice.kind, MediaKind::Voice);
    assert_eq!(voice.duration_s, Some(4));
    assert_eq!(voice.name.as_deref(), Some("voice.ogg"));
    let source: Value = serde_json::from_str(&voice.file.0).unwrap();
    assert_eq!(source, json!({ "file": file }), "the key goes with the reference");
    let mut other = text("notes.pdf");
    other["content"]["msgtype"] = json!("m.file");
    assert_eq!(
        normalize(ROOM, &other, &rules(true, false)).unwrap_err(),
        Skipped("media without its source")
    );
    other["content"]["msgtype"] = json!("m.location");
    assert_eq!(
        normalize(ROOM, &other, &rules(true, false)).unwrap().body,
        InboundBody::Unsupported {
            what: "a location".into()
        }
    );
}

#[test]
fn a_message_in_a_thread_names_its_root() {
    let mut threaded = text("and then?");
    threaded["content"]["m.relates_to"] = json!({ "rel_type": "m.thread", "event_id": "$root" });
    assert_eq!(thread_root(&threaded), Some("$root"));
    assert_eq!(thread_root(&text("plain")), None);
    assert!(normalize(ROOM, &threaded, &rules(true, false)).is_ok());
}

#[test]
fn a_reply_loses_the_quote_older_clients_put_before_it() {
    let mut reply = text("> <@assistant:example.org> Approve?\n> more\n\nyes");
    reply["content"]["m.relates_to"] = json!({ "m.in_reply_to": { "event_id": "$mine" } });
    let inbound = normalize(ROOM, &reply, &rules(true, false)).unwrap();
    assert_eq!(inbound.body, InboundBody::Text { text: "yes".into() });
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever JSON arrives, the normalizer answers without panicking, and
    /// what it takes always names the room, the sender and the event.
    #[test]
    fn any_event_is_taken_or_skipped_never_a_panic(
        kind in prop::sample::select(vec!["m.room.message", "m.reaction", "m.room.redaction", "m.room.encrypted", "x"]),
        msgtype in prop::sample::select(vec!["m.text", "m.emote", "m.notice", "m.image", "m.file", "", "m.audio"]),
        body in ".{0,40}",
        sender in prop::sample::select(vec!["@ada:example.org", ME, ""]),
        direct in any::<bool>(),
        bridged in any::<bool>(),
        reply in any::<bool>(),
    ) {
        let mut event = json!({
            "type": kind, "sender": sender, "event_id": "$e",
            "content": { "msgtype": msgtype, "body": body },
        });
        if reply {
            event["content"]["m.relates_to"] = json!({ "m.in_reply_to": { "event_id": "$mine" }, "event_id": "$mine", "key": "👍" });
        }
        if let Ok(inbound) = normalize(ROOM, &event, &rules(direct, bridged)) {
            prop_assert_eq!(inbound.conversation.chat.as_str(), ROOM);
            prop_assert_eq!(inbound.message_id.as_str(), "$e");
            prop_assert!(inbound.sender.id.as_str() != ME);
        }
    }
}
