//! Reading media against in-test fetchers and the fake transcription
//! server of `tests/support/fake_transcriber.rs`, over real loopback HTTP.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{Attachment, Fetch, Fetched, FileRef, GatewayError, GatewayId, MediaKind, ReplyKind};

use super::*;
use crate::config::Config;
use crate::model::media::fake_transcriber::{FakeTranscriber, Script};
use crate::model::media::{Fetchers, Media};

const WAIT: Duration = Duration::from_secs(10);

/// Files by reference; a reference it does not hold is a transient failure,
/// and so is the first fetch of `flaky:NAME`, which then gives NAME.
struct Files(HashMap<String, Vec<u8>>, std::sync::Mutex<Vec<String>>);

#[async_trait]
impl Fetch for Files {
    async fn fetch(&self, file: &FileRef, max_bytes: u64) -> Result<Fetched, GatewayError> {
        let mut name = file.0.as_str();
        if let Some(rest) = name.strip_prefix("flaky:") {
            let mut failed = self.1.lock().unwrap();
            if !failed.contains(&file.0) {
                failed.push(file.0.clone());
                return Err(GatewayError::Transient {
                    reason: "the platform answered 502".into(),
                });
            }
            name = rest;
        }
        let Some(bytes) = self.0.get(name) else {
            return Err(GatewayError::Transient {
                reason: "the platform answered 502".into(),
            });
        };
        if bytes.len() as u64 > max_bytes {
            return Err(GatewayError::TooLarge {
                size: Some(bytes.len() as u64),
                limit: max_bytes,
            });
        }
        Ok(Fetched {
            bytes: bytes.clone(),
            mime: None,
        })
    }
}

fn gateway() -> GatewayId {
    GatewayId::new("test").unwrap()
}

fn attachment(kind: MediaKind, file: &str) -> Attachment {
    Attachment {
        kind,
        file: FileRef(file.into()),
        mime: None,
        size: None,
        name: None,
        duration_s: None,
    }
}

const PNG: &[u8] = b"\x89PNG\r\n\x1a\nrest";

struct Setup {
    media: Media,
    _dir: tempfile::TempDir,
    workspace: std::path::PathBuf,
    media_dir: std::path::PathBuf,
}

fn setup(transcriber: Option<String>, adjust: impl FnOnce(&mut Config)) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        data_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    config.transcription.base_url = transcriber;
    config.transcription.timeout_s = 5;
    adjust(&mut config);
    let files: HashMap<String, Vec<u8>> = [
        ("voice".to_owned(), b"remind me to water the plants on friday".to_vec()),
        ("short".to_owned(), b"call mum".to_vec()),
        ("photo".to_owned(), PNG.to_vec()),
        ("heic".to_owned(), b"\0\0\0\x18ftypheic".to_vec()),
        ("doc".to_owned(), b"line one\nline two\n".to_vec()),
        ("big".to_owned(), vec![0; 4096]),
    ]
    .into_iter()
    .collect();
    let fetchers: Fetchers = [(gateway(), Arc::new(Files(files, Default::default())) as Arc<dyn Fetch>)]
        .into_iter()
        .collect();
    Setup {
        media: Media::new(&config, fetchers),
        workspace: config.workspace(),
        media_dir: config.media_dir(),
        _dir: dir,
    }
}

#[tokio::test]
async fn a_voice_note_becomes_the_persons_words_marked_as_a_voice_note() {
    let fake = FakeTranscriber::start().await;
    let setup = setup(Some(fake.base_url()), |_| {});
    let voice = Attachment {
        mime: Some("audio/ogg".into()),
        duration_s: Some(3),
        ..attachment(MediaKind::Voice, "voice")
    };
    let reading = setup.media.read(&gateway(), &[voice], None, false).await;
    let message = reading.message.expect("something for the model");
    assert_eq!(
        message.content,
        "[The person sent a voice note; transcribed, it says:]\nremind me to water the plants on friday"
    );
    assert!(reading.told.is_empty(), "{:?}", reading.told);
    assert!(reading.heard.is_empty(), "long and sure: not shown back");
    let upload = &fake.wait_for_uploads(1, WAIT).await[0];
    assert_eq!(upload.model.as_deref(), Some("whisper-1"));
    assert_eq!(upload.response_format.as_deref(), Some("verbose_json"));
    assert_eq!(upload.file_name.as_deref(), Some("voice.ogg"));
    assert_eq!(upload.content_type.as_deref(), Some("audio/ogg"));
}

#[tokio::test]
async fn a_short_or_unsure_transcript_is_shown_back() {
    let fake = FakeTranscriber::start().await;
    let setup = setup(Some(fake.base_url()), |_| {});
    let reading = setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Voice, "short")], None, false)
        .await;
    assert_eq!(reading.heard, ["call mum"]);
    fake.push(Script::Heard {
        text: "book a table for four at the usual place".into(),
        avg_logprob: -1.6,
    });
    let reading = setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Audio, "voice")], None, false)
        .await;
    assert_eq!(reading.heard, ["book a table for four at the usual place"]);
}

#[tokio::test]
async fn no_transcriber_is_one_sentence_naming_the_keys() {
    let setup = setup(None, |_| {});
    let reading = setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Voice, "voice")], None, false)
        .await;
    assert_eq!(reading.message, None);
    assert_eq!(reading.told, [(ReplyKind::Notice, NO_TRANSCRIBER.to_owned())]);
    assert!(NO_TRANSCRIBER.contains("[transcription] base_url"));
}

#[tokio::test]
async fn a_voice_note_too_long_or_too_large_is_refused_before_it_is_sent() {
    let fake = FakeTranscriber::start().await;
    let setup = setup(Some(fake.base_url()), |config| config.transcription.max_bytes = 1000);
    let long = Attachment {
        duration_s: Some(725),
        ..attachment(MediaKind::Voice, "voice")
    };
    let reading = setup.media.read(&gateway(), &[long], None, false).await;
    assert_eq!(
        reading.told,
        [(
            ReplyKind::Notice,
            "Your voice note is 12 min 5 s long; I transcribe up to 10 min (`transcription.max_seconds`).".to_owned()
        )]
    );
    let declared = Attachment {
        size: Some(5000),
        ..attachment(MediaKind::Voice, "big")
    };
    let reading = setup.media.read(&gateway(), &[declared], None, false).await;
    assert_eq!(
        reading.told[0].1,
        "Your voice note is too large for me: 4.9 KB, and I take up to 1000 bytes (`transcription.max_bytes`)."
    );
    let undeclared = attachment(MediaKind::Voice, "big");
    let reading = setup.media.read(&gateway(), &[undeclared], None, false).await;
    assert!(reading.told[0].1.contains("too large"), "{:?}", reading.told);
    assert!(fake.uploads().is_empty(), "nothing too long or large was sent");
}

#[tokio::test]
async fn a_failing_transcriber_or_fetch_is_told_as_a_failure() {
    let fake = FakeTranscriber::start().await;
    fake.push(Script::Status(503));
    let setup = setup(Some(fake.base_url()), |_| {});
    let reading = setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Voice, "voice")], None, false)
        .await;
    let (kind, sentence) = &reading.told[0];
    assert_eq!(*kind, ReplyKind::Failure);
    assert!(
        sentence.starts_with("I could not transcribe your voice note"),
        "{sentence}"
    );
    assert!(sentence.contains("answered 503"), "{sentence}");

    let dead = setup_dead().await;
    let reading = dead
        .media
        .read(&gateway(), &[attachment(MediaKind::Voice, "voice")], None, false)
        .await;
    assert_eq!(reading.told[0].0, ReplyKind::Failure);
    assert!(reading.told[0].1.contains("could not be reached"), "{:?}", reading.told);

    let reading = setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Voice, "gone")], None, false)
        .await;
    assert_eq!(
        reading.told,
        [(
            ReplyKind::Failure,
            "I could not fetch your voice note from test (transient failure: the platform answered 502). \
             Please send it again."
                .to_owned()
        )]
    );
}

#[tokio::test(start_paused = true)]
async fn a_fetch_that_fails_in_passing_is_tried_once_more_within_the_turn() {
    let setup = setup(None, |_| {});
    let reading = setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Document, "flaky:doc")], None, false)
        .await;
    assert!(reading.told.is_empty(), "{:?}", reading.told);
    assert!(
        setup.workspace.join("inbox").read_dir().unwrap().count() == 1,
        "the file was saved"
    );
}

async fn setup_dead() -> Setup {
    setup(Some(FakeTranscriber::dead_url().await), |_| {})
}

#[tokio::test]
async fn a_photo_is_kept_by_hash_and_shown_to_a_model_with_vision() {
    let setup = setup(None, |_| {});
    let photo = Attachment {
        mime: Some("image/jpeg".into()),
        ..attachment(MediaKind::Photo, "photo")
    };
    let reading = setup
        .media
        .read(&gateway(), &[photo], Some("what is this?"), true)
        .await;
    let message = reading.message.unwrap();
    assert_eq!(message.content, "what is this?");
    let image = &message.images[0];
    assert_eq!(image.mime, "image/png", "the bytes decide the type");
    assert!(
        image.media.ends_with(".png") && image.media.len() == 64 + 4,
        "{}",
        image.media
    );
    assert_eq!(image.bytes.as_deref(), Some(PNG));
    assert_eq!(std::fs::read(setup.media_dir.join(&image.media)).unwrap(), PNG);
}

#[tokio::test]
async fn without_vision_the_caption_is_answered_and_the_person_told() {
    let setup = setup(None, |_| {});
    let reading = setup
        .media
        .read(
            &gateway(),
            &[attachment(MediaKind::Photo, "photo")],
            Some("nice?"),
            false,
        )
        .await;
    assert_eq!(reading.message.as_ref().map(|m| m.content.as_str()), Some("nice?"));
    assert!(reading.message.unwrap().images.is_empty());
    assert_eq!(reading.told.len(), 1);
    assert!(reading.told[0].1.starts_with("The model I use cannot see images"));
    assert!(!setup.media_dir.exists(), "not fetched, not kept");
    let reading = setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Photo, "photo")], None, false)
        .await;
    assert_eq!(reading.message, None, "no caption: nothing for the model");
    assert!(reading.told[0].1.contains("vision = true"));
}

#[tokio::test]
async fn an_image_the_models_cannot_read_is_refused_in_words() {
    let setup = setup(None, |_| {});
    let reading = setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Photo, "heic")], None, true)
        .await;
    assert_eq!(reading.message, None);
    assert!(reading.told[0].1.contains("JPEG, PNG, GIF and WebP"));
}

#[tokio::test]
async fn a_document_lands_in_the_inbox_and_the_model_is_told_where() {
    let setup = setup(None, |_| {});
    let document = Attachment {
        name: Some("../notes.txt".into()),
        mime: Some("text/plain".into()),
        ..attachment(MediaKind::Document, "doc")
    };
    let reading = setup
        .media
        .read(&gateway(), &[document.clone(), document], Some("summarise"), false)
        .await;
    assert!(reading.told.is_empty(), "{:?}", reading.told);
    let message = reading.message.unwrap();
    // People are shown what the person said and sent, never the notes.
    assert_eq!(
        message.note,
        Some(crate::model::llm::Note::Sent {
            said: Some("summarise".into()),
            sent: vec!["notes.txt".into(), "notes (2).txt".into()],
        })
    );
    assert_eq!(
        message.shown().as_deref(),
        Some("summarise (sent notes.txt, notes (2).txt)")
    );
    let text = message.content;
    assert!(
        text.contains("saved in the workspace as inbox/notes.txt (18 bytes, text/plain)"),
        "{text}"
    );
    assert!(text.contains("inbox/notes (2).txt"), "{text}");
    assert!(text.ends_with("\n\nsummarise"), "{text}");
    let saved = std::fs::read(setup.workspace.join("inbox/notes.txt")).unwrap();
    assert_eq!(saved, b"line one\nline two\n");
}

#[tokio::test]
async fn an_oversized_document_a_video_and_a_gateway_that_cannot_fetch_are_told() {
    let setup = setup(None, |config| config.media.max_document_bytes = 100);
    let reading = setup
        .media
        .read(
            &gateway(),
            &[
                attachment(MediaKind::Document, "big"),
                attachment(MediaKind::Video, "v"),
            ],
            None,
            false,
        )
        .await;
    assert_eq!(reading.message, None);
    let told: Vec<&str> = reading.told.iter().map(|(_, sentence)| sentence.as_str()).collect();
    assert_eq!(
        told,
        [
            "Your file is too large for me: 4.0 KB, and I take up to 100 bytes (`media.max_document_bytes`).",
            "I can't watch videos yet.",
        ]
    );
    assert!(!setup.workspace.join("inbox").exists());
    let elsewhere = GatewayId::new("other").unwrap();
    let reading = setup
        .media
        .read(&elsewhere, &[attachment(MediaKind::Document, "doc")], None, false)
        .await;
    assert_eq!(
        reading.told[0].1,
        "I can't open files sent through other yet, so I can't read your file."
    );
}

#[tokio::test]
async fn the_key_from_a_file_goes_to_the_server_as_a_bearer_token_only() {
    let fake = FakeTranscriber::start().await;
    let dir = tempfile::tempdir().unwrap();
    let key_file = dir.path().join("key");
    std::fs::write(&key_file, "sk-transcribe-secret\n").unwrap();
    let setup = setup(Some(fake.base_url()), |config| {
        config.transcription.api_key_file = Some(key_file.clone());
        config.transcription.language = Some("fr".into());
    });
    assert!(!format!("{:?}", setup.media).contains("sk-transcribe-secret"));
    setup
        .media
        .read(&gateway(), &[attachment(MediaKind::Voice, "voice")], None, false)
        .await;
    let upload = &fake.wait_for_uploads(1, WAIT).await[0];
    assert_eq!(upload.authorization.as_deref(), Some("Bearer sk-transcribe-secret"));
    assert_eq!(upload.language.as_deref(), Some("fr"));
}
