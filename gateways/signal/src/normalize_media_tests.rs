//! Tests of what messages with attachments, stickers and shared contacts
//! become: media whose references name the attachment and the chat it came
//! in, or a line of text.

use passepartout_gateway::{Attachment, InboundBody, MediaKind};
use serde_json::{Value, json};

use super::*;
use crate::media::SignalFile;

fn attachment_json(id: &str, content_type: &str, filename: Option<&str>, size: u64) -> Value {
    json!({ "contentType": content_type, "filename": filename, "id": id, "size": size,
        "width": null, "height": null, "caption": null, "uploadTimestamp": 1_700_000_000_000u64 })
}

fn attachments(body: InboundBody) -> (Vec<Attachment>, Option<String>) {
    match body {
        InboundBody::Media { attachments, caption } => (attachments, caption),
        other => panic!("not media: {other:?}"),
    }
}

fn file_of(attachment: &Attachment) -> SignalFile {
    SignalFile::from_ref(&attachment.file).expect("the reference is a Signal file")
}

#[test]
fn a_voice_note_is_media_fetched_from_its_sender() {
    let envelope = data(json!({ "attachments": [attachment_json("voice1.aac", "audio/aac", None, 12_345)] }));
    let (got, caption) = attachments(inbound(run(&envelope)).body);
    assert_eq!(caption, None);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].kind, MediaKind::Voice);
    assert_eq!(got[0].mime.as_deref(), Some("audio/aac"));
    assert_eq!(got[0].size, Some(12_345));
    assert_eq!(got[0].name, None);
    assert_eq!(
        file_of(&got[0]),
        SignalFile {
            id: "voice1.aac".into(),
            recipient: Some(ADA_UUID.into()),
            group_id: None,
            size: Some(12_345),
        }
    );
}

#[test]
fn the_text_is_the_caption_and_each_attachment_has_its_kind() {
    let envelope = data(json!({ "message": "here you go", "attachments": [
        attachment_json("song.mp3", "audio/mpeg", Some("song.mp3"), 3_000_000),
        attachment_json("cat.jpg", "image/jpeg", None, 80_000),
        attachment_json("clip.mp4", "video/mp4", Some("clip.mp4"), 900_000),
        attachment_json("notes.pdf", "application/pdf", Some("notes.pdf"), 20_000),
    ] }));
    let (got, caption) = attachments(inbound(run(&envelope)).body);
    assert_eq!(caption.as_deref(), Some("here you go"));
    let kinds: Vec<MediaKind> = got.iter().map(|a| a.kind).collect();
    assert_eq!(
        kinds,
        [
            MediaKind::Audio,
            MediaKind::Photo,
            MediaKind::Video,
            MediaKind::Document
        ]
    );
    assert_eq!(got[3].name.as_deref(), Some("notes.pdf"));
}

#[test]
fn a_group_attachment_is_fetched_from_its_group() {
    let envelope = data(
        json!({ "attachments": [attachment_json("p.png", "image/png", None, 10)],
        "groupInfo": group_info() }),
    );
    let got = inbound(normalize(&envelope, &bot(), &GroupMode::All.into(), NOW));
    let (got, _) = attachments(got.body);
    let file = file_of(&got[0]);
    assert_eq!((file.recipient, file.group_id.as_deref()), (None, Some(GROUP)));
}

#[test]
fn an_attachments_own_caption_is_taken_when_the_message_has_no_text() {
    let mut photo = attachment_json("p.jpg", "image/jpeg", None, 10);
    photo["caption"] = json!("sunset");
    let (_, caption) = attachments(inbound(run(&data(json!({ "attachments": [photo] })))).body);
    assert_eq!(caption.as_deref(), Some("sunset"));
}

#[test]
fn attachments_without_an_id_or_in_odd_shapes_are_left_out() {
    let odd = json!({ "attachments": [
        { "contentType": "image/jpeg", "id": null },
        "not an object",
        { "contentType": 5, "id": "x" },
        attachment_json("good.jpg", "image/jpeg", None, 10),
    ], "message": "still read" });
    let (got, caption) = attachments(inbound(run(&data(odd))).body);
    assert_eq!(got.len(), 1);
    assert_eq!(file_of(&got[0]).id, "good.jpg");
    assert_eq!(caption.as_deref(), Some("still read"));
    let none_usable = data(json!({ "attachments": [{ "contentType": "image/jpeg" }] }));
    assert_eq!(
        inbound(run(&none_usable)).body,
        InboundBody::Unsupported {
            what: "attachment".into()
        }
    );
}

#[test]
fn a_sticker_becomes_text() {
    let sticker = data(json!({ "sticker": { "packId": "a1b2", "stickerId": 3 } }));
    assert_eq!(inbound(run(&sticker)).body, text("[sticker]"));
    let with_emoji = data(json!({ "sticker": { "packId": "a1b2", "stickerId": 3, "emoji": "🐙" } }));
    assert_eq!(inbound(run(&with_emoji)).body, text("[sticker 🐙]"));
}

#[test]
fn shared_contacts_become_their_names_and_numbers() {
    let contact = |given: &str, family: Option<&str>, phone: &str| {
        json!({ "name": { "nickname": null, "given": given, "family": family, "prefix": null, "suffix": null,
            "middle": null }, "avatar": null, "phone": [{ "value": phone, "type": "MOBILE", "label": null }],
            "email": null, "address": null, "organization": null })
    };
    let envelope = data(json!({ "contacts": [
        contact("Ada", Some("Lovelace"), "+44 20 7946 0000"),
        contact("Charles", None, "+44 20 7946 0001"),
    ] }));
    assert_eq!(
        inbound(run(&envelope)).body,
        text("[contact Ada Lovelace, +44 20 7946 0000]\n[contact Charles, +44 20 7946 0001]")
    );
    let nameless = data(json!({ "contacts": [{ "phone": [{ "value": "+1 555 0100" }] }] }));
    assert_eq!(inbound(run(&nameless)).body, text("[contact +1 555 0100]"));
}

#[test]
fn a_long_messages_whole_text_is_a_named_document() {
    let envelope = data(json!({ "message": "the start of it", "attachments": [
        attachment_json("long1", "text/x-signal-plain", None, 5_000),
    ] }));
    let (got, caption) = attachments(inbound(run(&envelope)).body);
    assert_eq!(caption.as_deref(), Some("the start of it"));
    assert_eq!(got[0].kind, MediaKind::Document);
    assert_eq!(got[0].name.as_deref(), Some("message.txt"));
}
