//! Media from Signal against the fake signal-cli daemon: attachments are
//! handed in by reference and fetched afterwards with `getAttachment`, under
//! a cap checked against the declared size and the bytes themselves;
//! stickers and shared contacts come in as text. Every failure of the fetch
//! is a clear error of the contract.

use crate::fake_signal;

use std::time::Duration;

use fake_signal::{ACCOUNT, FakeSignal, attachment, attachment_envelope, codes, contact_envelope, sticker_envelope};
use passepartout_gateway::{Ack, Fetch, FileRef, GatewayError, InboundBody, MediaKind};
use passepartout_gateway_testing::{CoreSide, Listening};
use passepartout_signal::{SignalFile, SignalGateway, SignalSettings};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(5);
const ADA: &str = "a1a1a1a1-1111-4111-8111-111111111111";
const GROUP: &str = "Z3JvdXAtaWQtMTIzNDU2Nzg5MA==";
const CAP: u64 = 64 * 1024;

fn settings(fake: &FakeSignal) -> SignalSettings {
    SignalSettings {
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        call_timeout: WAIT,
        ..SignalSettings::new(fake.unix_endpoint().parse().expect("the endpoint parses"), ACCOUNT)
    }
}

/// Some bytes that are not all alike.
fn bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

/// A reference to attachment `id` from Ada, declaring `size`.
fn from_ada(id: &str, size: Option<u64>) -> FileRef {
    SignalFile {
        id: id.to_owned(),
        recipient: Some(ADA.to_owned()),
        group_id: None,
        size,
    }
    .to_ref()
}

#[tokio::test]
async fn a_voice_note_is_handed_in_by_reference_and_fetched_after() {
    let fake = FakeSignal::start().await;
    let (listening, queue) = Listening::start(SignalGateway::new(settings(&fake)), 4);
    let mut core = CoreSide::new(queue);
    let voice = bytes(5_000);
    fake.add_attachment("V0iceN0te.aac", voice.clone());
    fake.push_envelope(attachment_envelope(
        ADA,
        1_000,
        None,
        vec![attachment("V0iceN0te.aac", "audio/aac", None, 5_000)],
    ));

    let inbound = core.answer(Ack::Accepted).await;
    let InboundBody::Media { attachments, caption } = inbound.body else {
        panic!("a voice note is media: {:?}", inbound.body);
    };
    assert_eq!(caption, None);
    assert_eq!(attachments[0].kind, MediaKind::Voice);
    assert_eq!(attachments[0].size, Some(5_000));
    assert!(
        fake.calls("getAttachment").is_empty(),
        "nothing is fetched before the core asks"
    );

    let fetched = listening.gateway.fetch(&attachments[0].file, CAP).await.unwrap();
    assert_eq!(fetched.bytes, voice);
    let calls = fake.calls("getAttachment");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].params, json!({ "id": "V0iceN0te.aac", "recipient": ADA }));
    assert_eq!(listening.stop().await, Ok(()));
}

#[tokio::test]
async fn stickers_and_contacts_come_in_as_text_and_a_caption_with_its_photo() {
    let fake = FakeSignal::start().await;
    let (listening, queue) = Listening::start(SignalGateway::new(settings(&fake)), 4);
    let mut core = CoreSide::new(queue);
    fake.push_envelope(sticker_envelope(ADA, 1_000));
    fake.push_envelope(contact_envelope(ADA, 1_001, "Charles", "+44 20 7946 0001"));
    fake.push_envelope(attachment_envelope(
        ADA,
        1_002,
        Some("what is this?"),
        vec![attachment("ph0t0.jpg", "image/jpeg", None, 80_000)],
    ));
    let sticker = core.answer(Ack::Accepted).await.body;
    assert_eq!(
        sticker,
        InboundBody::Text {
            text: "[sticker]".into()
        }
    );
    let contact = core.answer(Ack::Accepted).await.body;
    assert_eq!(
        contact,
        InboundBody::Text {
            text: "[contact Charles, +44 20 7946 0001]".into()
        }
    );
    let photo = core.answer(Ack::Accepted).await.body;
    let InboundBody::Media { attachments, caption } = photo else {
        panic!("a photo is media: {photo:?}");
    };
    assert_eq!(caption.as_deref(), Some("what is this?"));
    assert_eq!(attachments[0].kind, MediaKind::Photo);
    assert_eq!(listening.stop().await, Ok(()));
}

#[tokio::test]
async fn a_group_attachment_is_asked_for_by_its_group() {
    let fake = FakeSignal::start().await;
    fake.add_attachment("gr0up.png", bytes(10));
    let file = SignalFile {
        id: "gr0up.png".into(),
        recipient: None,
        group_id: Some(GROUP.into()),
        size: Some(10),
    };
    let fetched = SignalGateway::new(settings(&fake))
        .fetch(&file.to_ref(), CAP)
        .await
        .unwrap();
    assert_eq!(fetched.bytes, bytes(10));
    assert_eq!(
        fake.calls("getAttachment")[0].params,
        json!({ "id": "gr0up.png", "groupId": GROUP })
    );
}

#[tokio::test]
async fn an_attachment_longer_than_a_usual_line_comes_whole() {
    let fake = FakeSignal::start().await;
    // Past the 1 MiB line cap in base64: the connection reads longer lines.
    let photo = bytes(2 * 1024 * 1024);
    fake.add_attachment("big.jpg", photo.clone());
    let gateway = SignalGateway::new(settings(&fake));
    let fetched = gateway
        .fetch(&from_ada("big.jpg", None), 4 * 1024 * 1024)
        .await
        .unwrap();
    assert_eq!(fetched.bytes.len(), photo.len());
    assert!(fetched.bytes == photo);
}

#[tokio::test]
async fn an_attachment_declared_too_large_is_refused_without_asking() {
    let fake = FakeSignal::start().await;
    fake.add_attachment("big.jpg", bytes(10));
    let gateway = SignalGateway::new(settings(&fake));
    let error = gateway
        .fetch(&from_ada("big.jpg", Some(CAP + 1)), CAP)
        .await
        .unwrap_err();
    assert_eq!(
        error,
        GatewayError::TooLarge {
            size: Some(CAP + 1),
            limit: CAP
        }
    );
    assert!(error.is_permanent());
    assert!(fake.calls("getAttachment").is_empty());
}

#[tokio::test]
async fn an_attachment_longer_than_declared_is_refused_by_its_bytes() {
    let fake = FakeSignal::start().await;
    fake.add_attachment("lying.jpg", bytes(CAP as usize + 10));
    let gateway = SignalGateway::new(settings(&fake));
    let error = gateway.fetch(&from_ada("lying.jpg", Some(10)), CAP).await.unwrap_err();
    assert!(
        matches!(error, GatewayError::TooLarge { size: Some(size), limit: CAP } if size > CAP),
        "{error:?}"
    );
}

#[tokio::test]
async fn the_gateways_own_cap_bounds_what_the_caller_allows() {
    let fake = FakeSignal::start().await;
    fake.add_attachment("mid.jpg", bytes(2_000));
    let gateway = SignalGateway::new(SignalSettings {
        max_attachment_bytes: 1_000,
        ..settings(&fake)
    });
    let error = gateway.fetch(&from_ada("mid.jpg", None), CAP).await.unwrap_err();
    assert!(
        matches!(error, GatewayError::TooLarge { limit: 1_000, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn an_attachment_signal_cli_does_not_have_is_rejected_for_good() {
    let fake = FakeSignal::start().await;
    let gateway = SignalGateway::new(settings(&fake));
    let error = gateway.fetch(&from_ada("gone.jpg", Some(10)), CAP).await.unwrap_err();
    assert!(matches!(error, GatewayError::Rejected { .. }), "{error:?}");
    let foreign = gateway.fetch(&FileRef("AgACtelegram".into()), CAP).await.unwrap_err();
    assert!(matches!(foreign, GatewayError::Rejected { .. }), "{foreign:?}");
}

#[tokio::test]
async fn passing_failures_and_a_dead_signal_cli_are_worth_another_try() {
    let fake = FakeSignal::start().await;
    fake.add_attachment("v.aac", bytes(10));
    let gateway = SignalGateway::new(settings(&fake));
    fake.fail_next(
        "getAttachment",
        codes::IO_ERROR,
        "An error occurred reading attachment: v.aac",
    );
    let error = gateway.fetch(&from_ada("v.aac", Some(10)), CAP).await.unwrap_err();
    assert!(matches!(error, GatewayError::Transient { .. }), "{error:?}");
    assert_eq!(
        gateway.fetch(&from_ada("v.aac", Some(10)), CAP).await.unwrap().bytes,
        bytes(10)
    );

    fake.stop();
    fake.wait_for_connections(0).await;
    let down = gateway.fetch(&from_ada("v.aac", Some(10)), CAP).await.unwrap_err();
    assert!(matches!(down, GatewayError::Transient { .. }), "{down:?}");
}
