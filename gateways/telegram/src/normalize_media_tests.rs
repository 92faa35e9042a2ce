//! Tests of what messages with media become: attachments named by file id
//! with their caption, readable lines of text, or a named unsupported kind.

use passepartout_gateway::{Attachment, FileRef, InboundBody, MediaKind as Kind};
use passepartout_gateway_testing::normalize::inbound;
use serde_json::{Value, json};

use super::*;

fn file(id: &str, size: Option<u64>) -> Value {
    let mut file = json!({ "file_id": id, "file_unique_id": format!("u-{id}") });
    if let Some(size) = size {
        file["file_size"] = json!(size);
    }
    file
}

fn with(file: Value, extra: Value) -> Value {
    passepartout_gateway_testing::normalize::with_fields(file, extra)
}

fn photo_size(id: &str, width: u32, size: Option<u64>) -> Value {
    with(file(id, size), json!({ "width": width, "height": width * 3 / 4 }))
}

/// What a private message with `extra` becomes.
fn body_of(extra: Value) -> InboundBody {
    inbound(run(&update("message", message(private_chat(), extra)))).body
}

fn media(attachment: Attachment, caption: Option<&str>) -> InboundBody {
    InboundBody::Media {
        attachments: vec![attachment],
        caption: caption.map(str::to_owned),
    }
}

fn attachment(kind: Kind, id: &str) -> Attachment {
    Attachment {
        kind,
        file: FileRef(id.to_owned()),
        mime: None,
        size: None,
        name: None,
        duration_s: None,
    }
}

#[test]
fn a_voice_note_is_media_named_by_its_file_id_with_its_caption() {
    let voice = with(
        file("AwACvoice", Some(12_345)),
        json!({ "duration": 4, "mime_type": "audio/ogg" }),
    );
    assert_eq!(
        body_of(json!({ "voice": voice, "caption": "listen" })),
        media(
            Attachment {
                mime: Some("audio/ogg".into()),
                size: Some(12_345),
                duration_s: Some(4),
                ..attachment(Kind::Voice, "AwACvoice")
            },
            Some("listen")
        )
    );
}

#[test]
fn audio_documents_and_videos_keep_their_names_and_types() {
    let audio = with(
        file("CQACaudio", Some(3_000_000)),
        json!({ "duration": 180, "file_name": "song.mp3", "mime_type": "audio/mpeg", "title": "Song" }),
    );
    assert_eq!(
        body_of(json!({ "audio": audio })),
        media(
            Attachment {
                mime: Some("audio/mpeg".into()),
                size: Some(3_000_000),
                name: Some("song.mp3".into()),
                duration_s: Some(180),
                ..attachment(Kind::Audio, "CQACaudio")
            },
            None
        )
    );
    let document = with(
        file("BQACdoc", Some(2_048)),
        json!({ "file_name": "notes.txt", "mime_type": "text/plain" }),
    );
    assert_eq!(
        body_of(json!({ "document": document, "caption": "  my notes " })),
        media(
            Attachment {
                mime: Some("text/plain".into()),
                size: Some(2_048),
                name: Some("notes.txt".into()),
                ..attachment(Kind::Document, "BQACdoc")
            },
            Some("my notes")
        )
    );
    // teloxide reads no video (nor animation) without a `mime_type`.
    let video = with(
        file("BAACvideo", None),
        json!({ "width": 640, "height": 360, "duration": 9, "mime_type": "video/mp4" }),
    );
    assert_eq!(
        body_of(json!({ "video": video })),
        media(
            Attachment {
                mime: Some("video/mp4".into()),
                duration_s: Some(9),
                ..attachment(Kind::Video, "BAACvideo")
            },
            None
        )
    );
}

#[test]
fn animations_and_video_notes_are_videos() {
    let animation = with(
        file("CgACgif", Some(50_000)),
        json!({ "width": 1, "height": 1, "duration": 2, "mime_type": "video/mp4" }),
    );
    // Telegram sends an animation's document alongside it.
    let got = body_of(json!({ "animation": animation.clone(), "document": animation }));
    let InboundBody::Media { attachments, .. } = got else {
        panic!("an animation is media: {got:?}");
    };
    assert_eq!(attachments[0].kind, Kind::Video);
    assert_eq!(attachments[0].mime.as_deref(), Some("video/mp4"));
    let note = with(file("DQACnote", Some(80_000)), json!({ "length": 240, "duration": 5 }));
    assert_eq!(
        body_of(json!({ "video_note": note })),
        media(
            Attachment {
                mime: Some("video/mp4".into()),
                size: Some(80_000),
                duration_s: Some(5),
                ..attachment(Kind::Video, "DQACnote")
            },
            None
        )
    );
}

#[test]
fn of_a_photos_sizes_the_largest_under_the_cap_is_taken() {
    let sizes = json!([
        photo_size("small", 90, Some(1_284)),
        photo_size("medium", 320, Some(20_000)),
        photo_size("large", 1280, Some(98_112)),
        photo_size("huge", 2560, Some(400_000)),
    ]);
    let got = body_of(json!({ "photo": sizes, "caption": "look" }));
    assert_eq!(
        got,
        media(
            Attachment {
                mime: Some("image/jpeg".into()),
                size: Some(98_112),
                ..attachment(Kind::Photo, "large")
            },
            Some("look")
        )
    );
}

#[test]
fn a_photo_with_no_size_under_the_cap_names_its_smallest_for_the_core_to_refuse() {
    let sizes = json!([
        photo_size("big", 1280, Some(300_000)),
        photo_size("bigger", 2560, Some(900_000))
    ]);
    let InboundBody::Media { attachments, .. } = body_of(json!({ "photo": sizes })) else {
        panic!("a photo is media");
    };
    assert_eq!(attachments[0].file, FileRef("big".into()));
    assert_eq!(
        attachments[0].size,
        Some(300_000),
        "the size tells the core it is too large"
    );
    // Sizes without a declared size are taken only when nothing else is known.
    let sizes = json!([photo_size("unknown", 2560, None), photo_size("known", 90, Some(1_000))]);
    let InboundBody::Media { attachments, .. } = body_of(json!({ "photo": sizes })) else {
        panic!("a photo is media");
    };
    assert_eq!(attachments[0].file, FileRef("known".into()));
}

#[test]
fn an_empty_photo_list_is_unsupported_not_a_panic() {
    assert_eq!(
        body_of(json!({ "photo": [] })),
        InboundBody::Unsupported {
            what: "photo without a size".into()
        }
    );
}

#[test]
fn a_sticker_becomes_its_emoji() {
    let sticker = |emoji: Option<&str>| {
        let mut sticker = with(
            file("CAACsticker", Some(9_000)),
            json!({ "type": "regular", "width": 512, "height": 512, "is_animated": false, "is_video": false }),
        );
        if let Some(emoji) = emoji {
            sticker["emoji"] = json!(emoji);
        }
        json!({ "sticker": sticker })
    };
    assert_eq!(
        body_of(sticker(Some("😀"))),
        InboundBody::Text {
            text: "[sticker 😀]".into()
        }
    );
    assert_eq!(
        body_of(sticker(None)),
        InboundBody::Text {
            text: "[sticker]".into()
        }
    );
}

#[test]
fn locations_and_venues_become_their_coordinates_and_names() {
    assert_eq!(
        body_of(json!({ "location": { "latitude": 52.52, "longitude": 13.405 } })),
        InboundBody::Text {
            text: "[location 52.52, 13.405]".into()
        }
    );
    let venue = json!({ "location": { "latitude": 52.516275, "longitude": -0.1 },
        "title": "Brandenburger Tor", "address": "Pariser Platz" });
    // Telegram sends a venue's location alongside it.
    assert_eq!(
        body_of(json!({ "venue": venue, "location": venue["location"] })),
        InboundBody::Text {
            text: "[location 52.51628, -0.1: Brandenburger Tor, Pariser Platz]".into()
        }
    );
}

#[test]
fn a_contact_becomes_its_name_and_number() {
    let contact = json!({ "phone_number": "+44 20 7946 0000", "first_name": "Ada", "last_name": "Lovelace" });
    assert_eq!(
        body_of(json!({ "contact": contact })),
        InboundBody::Text {
            text: "[contact Ada Lovelace, +44 20 7946 0000]".into()
        }
    );
}

#[test]
fn other_kinds_stay_unsupported_with_their_name() {
    let poll = json!({ "id": "5210000000000000001", "question": "Lunch?", "type": "regular",
        "options": [{ "text": "yes", "voter_count": 0 }, { "text": "no", "voter_count": 0 }],
        "total_voter_count": 0, "is_closed": false, "is_anonymous": true, "allows_multiple_answers": false });
    assert_eq!(
        body_of(json!({ "poll": poll })),
        InboundBody::Unsupported { what: "poll".into() }
    );
}

#[test]
fn a_group_photo_whose_caption_mentions_the_bot_is_taken_without_the_mention() {
    let update = update(
        "message",
        message(
            group_chat(),
            json!({
                "photo": [photo_size("p", 90, Some(1_000))],
                "caption": "@PassBot look",
                "caption_entities": [{ "type": "mention", "offset": 0, "length": 8 }],
            }),
        ),
    );
    let InboundBody::Media { caption, .. } = inbound(run(&update)).body else {
        panic!("a photo is media");
    };
    assert_eq!(caption.as_deref(), Some("look"));
}

#[test]
fn a_group_photo_without_a_mention_is_skipped() {
    let update = update(
        "message",
        message(
            group_chat(),
            json!({ "photo": [photo_size("p", 90, Some(1_000))], "caption": "look" }),
        ),
    );
    assert_eq!(
        passepartout_gateway_testing::normalize::skip_reason(run(&update)),
        "group message not addressed to the bot"
    );
}
