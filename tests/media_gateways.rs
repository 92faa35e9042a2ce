//! Media through the real gateways inside the daemon: a voice note on
//! Telegram is fetched with getFile and a download, transcribed and
//! answered; a photo on Signal is fetched with getAttachment and reaches a
//! vision model as an image part. What each gateway and the core do alone
//! is tested beside them; this proves the daemon wires each gateway's
//! fetcher to the messages it brings.

use crate::support;

use support::fake_llm::{FakeLlm, last_user_text};
use support::fake_signal::{FakeSignal, attachment, attachment_envelope};
use support::fake_telegram::{FakeFile, FakeTelegram};
use support::fake_transcriber::FakeTranscriber;
use support::gateway_daemons::{with_signal, with_telegram};
use support::harness::WAIT;

const TOKEN: &str = "123456:media-wiring-token";
const OWNER: i64 = 42;
const SIGNAL_OWNER: &str = "0a0a0a0a-0000-4000-8000-00000000000a";
/// The smallest PNG: a 1×1 transparent pixel.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00, 0x00,
    0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00, 0x0d, 0x49,
    0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00, 0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00,
    0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

#[tokio::test]
async fn a_telegram_voice_note_is_downloaded_transcribed_and_answered() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let transcriber = FakeTranscriber::start().await;
    let words = "remind me to water the plants";
    telegram.add_file(
        "AwACvoice",
        FakeFile {
            content_type: Some("audio/ogg".into()),
            ..FakeFile::new(words)
        },
    );
    let transcriber_url = transcriber.base_url();
    let _daemon = with_telegram(&llm, &telegram, TOKEN, OWNER, |config| {
        config.transcription.base_url = Some(transcriber_url);
    })
    .await;

    telegram.push_update(telegram.voice_message(OWNER, OWNER, "AwACvoice", words.len() as u64, None));
    let reply = telegram
        .sent_matching(WAIT, |sent| sent.chat_id == OWNER && sent.text.contains(words))
        .await
        .unwrap_or_else(|| panic!("no answer to the voice note; sent: {:#?}", telegram.sent()));
    assert!(reply.text.starts_with("echo: "), "{}", reply.text);
    assert_eq!(telegram.downloads().len(), 1, "downloaded once");
    let uploads = transcriber.uploads();
    assert_eq!(uploads.len(), 1, "transcribed once");
    assert!(last_user_text(&llm.requests()[0]).ends_with(words));
}

#[tokio::test]
async fn a_signal_photo_is_fetched_and_shown_to_a_vision_model() {
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    signal.add_attachment("photo-1", PNG);
    let _daemon = with_signal(&llm, &signal, SIGNAL_OWNER, |config| {
        config.llm.providers[0].vision = true;
    })
    .await;

    signal.push_envelope(attachment_envelope(
        SIGNAL_OWNER,
        1_700_000_000_001,
        Some("what is this?"),
        vec![attachment("photo-1", "image/png", Some("pixel.png"), PNG.len() as u64)],
    ));
    signal
        .sent_matching(WAIT, |sent| sent.recipients == [SIGNAL_OWNER])
        .await
        .unwrap_or_else(|| panic!("no answer to the photo; sent: {:#?}", signal.sent()));
    assert_eq!(signal.calls("getAttachment").len(), 1, "fetched once");
    let request = &llm.requests()[0];
    let parts = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|message| message["role"] == "user")
        .and_then(|message| message["content"].as_array())
        .unwrap_or_else(|| panic!("the question has content parts: {request:#}"))
        .clone();
    assert!(
        parts.iter().any(|part| part["type"] == "image_url"
            && part["image_url"]["url"]
                .as_str()
                .is_some_and(|url| url.starts_with("data:image/png;base64,"))),
        "the photo is an image part: {parts:#?}"
    );
    assert!(
        parts
            .iter()
            .any(|part| part["text"].as_str().is_some_and(|text| text.contains("what is this?"))),
        "with its caption: {parts:#?}"
    );
}
