//! Media from Telegram against the fake Bot API server: a voice note, a photo
//! or a document is handed in as a reference, and its bytes are fetched
//! afterwards with `getFile` and the file download, under a cap; stickers,
//! locations and contacts come in as text. Every failure of the fetch is a
//! clear error of the contract, and the token never shows.

use crate::support;

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::{Ack, Fetch, FileRef, GatewayError, InboundBody, MediaKind};
use passepartout_gateway_testing::{CoreSide, Listening};
use passepartout_telegram::{MemoryOffsetStore, TelegramGateway, TelegramSettings};
use support::fake_telegram::{Download, FakeFailure, FakeFile, FakeTelegram};
use support::logs::LogCapture;

const TOKEN: &str = "424242:SECRET-tok3n_for-media";
const CAP: u64 = 64 * 1024;

fn settings(fake: &FakeTelegram) -> TelegramSettings {
    TelegramSettings {
        poll_timeout_s: 10,
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        ..TelegramSettings::new(TOKEN).with_api_url(fake.base_url())
    }
}

fn gateway(fake: &FakeTelegram) -> Arc<TelegramGateway> {
    TelegramGateway::new(settings(fake), Arc::new(MemoryOffsetStore::default()))
}

fn run(fake: &FakeTelegram) -> (Listening<TelegramGateway>, CoreSide) {
    let (running, queue) = Listening::start(gateway(fake), 4);
    (running, CoreSide::new(queue))
}

fn file(id: &str) -> FileRef {
    FileRef(id.to_owned())
}

/// Some bytes that are not all alike.
fn bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i % 251) as u8).collect()
}

#[tokio::test]
async fn a_voice_note_is_handed_in_by_reference_and_fetched_after() {
    let fake = FakeTelegram::start(TOKEN).await;
    let (running, mut core) = run(&fake);
    let voice = bytes(5_000);
    fake.add_file(
        "AwACvoice1",
        FakeFile {
            content_type: Some("audio/ogg".into()),
            ..FakeFile::new(voice.clone())
        },
    );
    fake.push_update(fake.voice_message(42, 7, "AwACvoice1", 5_000, Some("from the train")));

    let inbound = core.answer(Ack::Accepted).await;
    let InboundBody::Media { attachments, caption } = inbound.body else {
        panic!("a voice note is media: {:?}", inbound.body);
    };
    assert_eq!(caption.as_deref(), Some("from the train"));
    assert_eq!(attachments.len(), 1);
    assert_eq!(attachments[0].kind, MediaKind::Voice);
    assert_eq!(attachments[0].size, Some(5_000));
    assert!(
        fake.downloads().is_empty(),
        "nothing is downloaded before the core asks"
    );

    let fetched = running.gateway.fetch(&attachments[0].file, CAP).await.unwrap();
    assert_eq!(fetched.bytes, voice);
    assert_eq!(fetched.mime.as_deref(), Some("audio/ogg"));
    assert_eq!(fake.downloads(), ["documents/AwACvoice1"]);
    running.stop().await.unwrap();
}

#[tokio::test]
async fn photos_documents_stickers_locations_and_contacts_come_in() {
    let fake = FakeTelegram::start(TOKEN).await;
    let (running, mut core) = run(&fake);
    fake.push_update(fake.photo_message(42, 7, Some("what is this?")));
    fake.push_update(fake.document_message(42, 7, "BQACdoc", "notes.txt", 2_048, None));
    fake.push_update(fake.sticker_message(42, 7, "🐙"));
    fake.push_update(fake.location_message(42, 7, 52.52, 13.405));
    fake.push_update(fake.contact_message(42, 7, "Ada", "+44 20 7946 0000"));

    let photo = core.answer(Ack::Accepted).await.body;
    let InboundBody::Media { attachments, caption } = photo else {
        panic!("a photo is media: {photo:?}");
    };
    assert_eq!(caption.as_deref(), Some("what is this?"));
    assert_eq!(attachments[0].kind, MediaKind::Photo);
    assert_eq!(
        attachments[0].file,
        file("AgACfake-x-42"),
        "the larger size fits the default cap"
    );
    let document = core.answer(Ack::Accepted).await.body;
    let InboundBody::Media { attachments, .. } = document else {
        panic!("a document is media: {document:?}");
    };
    assert_eq!(attachments[0].kind, MediaKind::Document);
    assert_eq!(attachments[0].name.as_deref(), Some("notes.txt"));
    assert_eq!(attachments[0].mime.as_deref(), Some("text/plain"));
    for expected in [
        "[sticker 🐙]",
        "[location 52.52, 13.405]",
        "[contact Ada, +44 20 7946 0000]",
    ] {
        let body = core.answer(Ack::Accepted).await.body;
        assert_eq!(body, InboundBody::Text { text: expected.into() });
    }
    running.stop().await.unwrap();
}

#[tokio::test]
async fn a_file_declared_too_large_is_refused_before_any_download() {
    let fake = FakeTelegram::start(TOKEN).await;
    fake.add_file("big", FakeFile::new(bytes(CAP as usize + 1)));
    let error = gateway(&fake).fetch(&file("big"), CAP).await.unwrap_err();
    assert_eq!(
        error,
        GatewayError::TooLarge {
            size: Some(CAP + 1),
            limit: CAP
        }
    );
    assert!(error.is_permanent());
    assert!(fake.downloads().is_empty(), "{:?}", fake.downloads());
}

#[tokio::test]
async fn a_download_longer_than_declared_is_cut_at_the_cap() {
    let fake = FakeTelegram::start(TOKEN).await;
    // getFile declares 10 bytes; the download says nothing and sends more.
    let lying = |download| FakeFile {
        declared_size: Some(10),
        download,
        ..FakeFile::new(bytes(CAP as usize * 2))
    };
    fake.add_file("streamed", lying(Download::Streamed));
    fake.add_file("whole", lying(Download::Whole));
    let gateway = gateway(&fake);
    for id in ["streamed", "whole"] {
        let error = gateway.fetch(&file(id), CAP).await.unwrap_err();
        assert!(
            matches!(error, GatewayError::TooLarge { limit: CAP, .. }),
            "{id}: {error:?}"
        );
    }
    // A file that fits comes whole, streamed or not.
    fake.add_file(
        "fits",
        FakeFile {
            download: Download::Streamed,
            declared_size: None,
            ..FakeFile::new(bytes(CAP as usize))
        },
    );
    assert_eq!(
        gateway.fetch(&file("fits"), CAP).await.unwrap().bytes,
        bytes(CAP as usize)
    );
}

#[tokio::test]
async fn a_download_without_end_stops_at_the_cap() {
    let fake = FakeTelegram::start(TOKEN).await;
    fake.add_file(
        "endless",
        FakeFile {
            declared_size: None,
            download: Download::Endless,
            ..FakeFile::new(Vec::new())
        },
    );
    let fetched = tokio::time::timeout(Duration::from_secs(10), gateway(&fake).fetch(&file("endless"), CAP))
        .await
        .expect("the gateway stops reading on its own");
    assert!(
        matches!(fetched, Err(GatewayError::TooLarge { size: None, limit: CAP })),
        "{fetched:?}"
    );
}

#[tokio::test]
async fn a_file_unknown_or_expired_is_rejected_for_good() {
    let fake = FakeTelegram::start(TOKEN).await;
    let gateway = gateway(&fake);
    let unknown = gateway.fetch(&file("never-seen"), CAP).await.unwrap_err();
    assert!(matches!(unknown, GatewayError::Rejected { .. }), "{unknown:?}");
    fake.add_file(
        "expired",
        FakeFile {
            download: Download::Status(404),
            ..FakeFile::new(bytes(10))
        },
    );
    let expired = gateway.fetch(&file("expired"), CAP).await.unwrap_err();
    assert!(matches!(expired, GatewayError::Rejected { .. }), "{expired:?}");
    // Telegram's own limit for bots (20 MB) is a file too large too.
    fake.fail_next(
        "getFile",
        FakeFailure::BadRequest("Bad Request: file is too big".into()),
    );
    let too_big = gateway.fetch(&file("expired"), CAP).await.unwrap_err();
    assert_eq!(too_big, GatewayError::TooLarge { size: None, limit: CAP });
    fake.fail_next(
        "getFile",
        FakeFailure::BadRequest("Bad Request: file is too big".into()),
    );
    let over_telegrams = gateway.fetch(&file("expired"), 100 * 1024 * 1024).await.unwrap_err();
    assert_eq!(
        over_telegrams,
        GatewayError::TooLarge {
            size: None,
            limit: 20 * 1024 * 1024
        },
        "the limit said is Telegram's, the lower one"
    );
}

#[tokio::test]
async fn passing_failures_are_worth_another_try() {
    let fake = FakeTelegram::start(TOKEN).await;
    let gateway = gateway(&fake);
    fake.add_file(
        "flaky",
        FakeFile {
            download: Download::Status(502),
            ..FakeFile::new(bytes(10))
        },
    );
    let error = gateway.fetch(&file("flaky"), CAP).await.unwrap_err();
    assert!(matches!(error, GatewayError::Transient { .. }), "{error:?}");
    fake.fail_next("getFile", FakeFailure::RetryAfter(3));
    let error = gateway.fetch(&file("flaky"), CAP).await.unwrap_err();
    assert_eq!(
        error,
        GatewayError::RateLimited {
            retry_after: Duration::from_secs(3)
        }
    );
}

#[tokio::test]
async fn telegram_down_is_a_passing_failure_and_the_token_never_shows() {
    let logs = LogCapture::start();
    let fake = FakeTelegram::start(TOKEN).await;
    let gateway = gateway(&fake);
    fake.add_file("voice", FakeFile::new(bytes(10)));
    // The download fails after getFile named the file: its URL holds the token.
    fake.add_file(
        "cut",
        FakeFile {
            download: Download::Status(500),
            ..FakeFile::new(bytes(10))
        },
    );
    let cut = gateway.fetch(&file("cut"), CAP).await.unwrap_err();
    fake.shutdown();
    let down = gateway.fetch(&file("voice"), CAP).await.unwrap_err();
    assert!(matches!(down, GatewayError::Transient { .. }), "{down:?}");
    for error in [cut, down] {
        assert!(!format!("{error} {error:?}").contains("SECRET"), "{error:?}");
    }
    let text = logs.text();
    assert!(text.contains("getFile failed"), "the failure was logged: {text}");
    assert!(!text.contains("SECRET"), "the token leaked into the logs:\n{text}");
}
