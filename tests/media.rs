//! Media through the real daemon: a scripted gateway hands in voice notes,
//! photos and files by reference and fetches them when asked; a fake
//! transcription server and fake models on loopback answer. Each test names
//! the case it pins: the transcript reaches the model, a transcriber that is
//! down or not set up, a voice note whose turn a stop cut short, an image
//! part for a vision model and the caption for another, a file in `inbox/`,
//! media too large.

use crate::support;

use passepartout::config::{Config, ProviderConfig, ProviderKind};
use passepartout_gateway::{Ack, Attachment, MediaKind, Refusal, ReplyKind};
use serde_json::{Value, json};
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::fake_transcriber::{FakeTranscriber, Script as Heard};
use support::harness::{TestDaemon, WAIT};
use support::media_gateway::{MediaGateway, attachment};

/// The first bytes of a PNG file: enough for the models' type check.
const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

async fn daemon(llm: &FakeLlm, gateway: &MediaGateway, adjust: impl FnOnce(&mut Config)) -> TestDaemon {
    TestDaemon::start_extended(llm, adjust, gateway.extensions()).await
}

fn voice(file: &str, seconds: u32) -> Attachment {
    Attachment {
        mime: Some("audio/ogg".into()),
        duration_s: Some(seconds),
        ..attachment(MediaKind::Voice, file)
    }
}

#[tokio::test]
async fn a_voice_note_is_transcribed_and_its_words_reach_the_model() {
    let llm = FakeLlm::start().await;
    let transcriber = FakeTranscriber::start().await;
    let gateway = MediaGateway::default();
    gateway.put_file("v1", "what should I cook tonight with leeks and potatoes");
    gateway.put_file("v2", "call mum");
    let url = transcriber.base_url();
    let mut daemon = daemon(&llm, &gateway, |c| c.transcription.base_url = Some(url)).await;

    let id = gateway.send_media("alice", vec![voice("v1", 4)], None).await;
    let replies = gateway.replies(&id).await;
    let said = "[The person sent a voice note; transcribed, it says:]\n\
                what should I cook tonight with leeks and potatoes";
    assert_eq!(replies, [(ReplyKind::Answer, format!("echo: {said}"))]);
    let upload = &transcriber.wait_for_uploads(1, WAIT).await[0];
    assert_eq!(upload.file_name.as_deref(), Some("voice.ogg"));
    assert_eq!(last_user_text(&llm.requests()[0]), said);

    let id = gateway.send_media("alice", vec![voice("v2", 1)], None).await;
    let (kind, text) = gateway.replies(&id).await.remove(0);
    assert_eq!(kind, ReplyKind::Answer);
    assert!(
        text.starts_with("I heard: “call mum”\n\necho: "),
        "a short note is shown back: {text}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_transcriber_that_is_down_is_told_and_the_message_is_answered_not_lost() {
    let llm = FakeLlm::start().await;
    let gateway = MediaGateway::default();
    gateway.put_file("v1", "are you there");
    let url = FakeTranscriber::dead_url().await;
    let mut daemon = daemon(&llm, &gateway, |c| c.transcription.base_url = Some(url.clone())).await;

    let id = gateway.send_media("alice", vec![voice("v1", 2)], None).await;
    let replies = gateway.replies(&id).await;
    assert_eq!(replies.len(), 1, "{replies:?}");
    let (kind, text) = &replies[0];
    assert_eq!(*kind, ReplyKind::Failure);
    assert!(
        text.starts_with(&format!(
            "I could not transcribe your voice note: the transcription server at {url}"
        )),
        "{text}"
    );
    assert!(text.contains("send it again"), "{text}");
    assert!(llm.requests().is_empty(), "nothing reached the model");
    let status = daemon.daemon.as_ref().unwrap().status();
    assert_eq!(
        status["store"]["pending"], 0,
        "answered, so no longer pending: {status}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn without_a_transcriber_a_voice_note_is_answered_with_how_to_set_one_up() {
    let llm = FakeLlm::start().await;
    let gateway = MediaGateway::default();
    gateway.put_file("v1", "hello");
    let mut daemon = daemon(&llm, &gateway, |_| {}).await;
    let id = gateway.send_media("alice", vec![voice("v1", 2)], None).await;
    let replies = gateway.replies_counted(&id, 1).await;
    assert_eq!(replies.len(), 1);
    assert_eq!(replies[0].0, ReplyKind::Notice);
    assert!(replies[0].1.contains("[transcription] base_url"), "{}", replies[0].1);
    assert!(gateway.fetched().is_empty(), "nothing fetched for nothing");
    assert!(llm.requests().is_empty());
    daemon.stop().await;
}

#[tokio::test]
async fn a_photo_reaches_a_vision_model_as_an_image_part_and_later_turns_only_as_a_note() {
    let llm = FakeLlm::start().await;
    let gateway = MediaGateway::default();
    gateway.put_file("p1", PNG);
    let mut daemon = daemon(&llm, &gateway, |c| c.llm.providers[0].vision = true).await;

    let id = gateway
        .send_media("alice", vec![attachment(MediaKind::Photo, "p1")], Some("what is this?"))
        .await;
    assert_eq!(
        gateway.replies(&id).await,
        [(ReplyKind::Answer, "echo: what is this?".into())]
    );
    let request = &llm.requests()[0];
    let parts = &request["messages"].as_array().unwrap().last().unwrap()["content"];
    assert_eq!(parts[0], json!({"type": "text", "text": "what is this?"}));
    let url = parts[1]["image_url"]["url"].as_str().unwrap();
    assert_eq!(url, "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==");
    let kept: Vec<_> = std::fs::read_dir(daemon.config.media_dir()).unwrap().collect();
    assert_eq!(kept.len(), 1, "the photo is kept by its hash");

    let id = gateway.send_text("alice", "and now?").await;
    gateway.replies(&id).await;
    let replay = llm.requests()[1].to_string();
    assert!(!replay.contains("image_url"), "the bytes are not sent again: {replay}");
    assert!(replay.contains("not shown again"), "{replay}");
    daemon.stop().await;
}

#[tokio::test]
async fn a_photo_reaches_an_anthropic_vision_model_as_an_image_block() {
    use support::fake_anthropic::FakeAnthropic;
    let llm = FakeLlm::start().await;
    let claude = FakeAnthropic::start().await;
    let gateway = MediaGateway::default();
    gateway.put_file("p1", PNG);
    let url = claude.base_url();
    let mut daemon = daemon(&llm, &gateway, |c| {
        c.llm.providers = vec![ProviderConfig {
            name: "claude".into(),
            kind: ProviderKind::Anthropic,
            base_url: url,
            model: "claude-test".into(),
            vision: true,
            ..ProviderConfig::default()
        }]
    })
    .await;
    let id = gateway
        .send_media("alice", vec![attachment(MediaKind::Photo, "p1")], Some("and this?"))
        .await;
    assert_eq!(
        gateway.replies(&id).await,
        [(ReplyKind::Answer, "echo: and this?".into())]
    );
    let request = &claude.message_requests()[0];
    let blocks = &request["messages"][0]["content"];
    assert_eq!(blocks[0]["type"], "image", "{request}");
    assert_eq!(blocks[0]["source"]["media_type"], "image/png");
    assert_eq!(blocks[1], json!({"type": "text", "text": "and this?"}));
    daemon.stop().await;
}

#[tokio::test]
async fn a_model_without_vision_answers_the_caption_and_the_person_is_told() {
    let llm = FakeLlm::start().await;
    let gateway = MediaGateway::default();
    gateway.put_file("p1", PNG);
    let mut daemon = daemon(&llm, &gateway, |_| {}).await;
    let id = gateway
        .send_media("alice", vec![attachment(MediaKind::Photo, "p1")], Some("is it ripe?"))
        .await;
    let replies = gateway.replies(&id).await;
    assert_eq!(replies.len(), 2, "{replies:?}");
    assert_eq!(replies[0].0, ReplyKind::Notice);
    assert!(
        replies[0].1.starts_with("The model I use cannot see images"),
        "{}",
        replies[0].1
    );
    assert_eq!(replies[1], (ReplyKind::Answer, "echo: is it ripe?".into()));
    assert_eq!(
        llm.requests()[0]["messages"].as_array().unwrap().last().unwrap()["content"],
        "is it ripe?"
    );
    assert!(
        gateway.fetched().is_empty(),
        "not fetched for a model that cannot see it"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_document_lands_in_the_inbox_and_the_model_reads_it_by_its_path() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request: &Value| {
        let last = &request["messages"].as_array().unwrap().last().unwrap();
        if last["role"] == "tool" {
            return Script::Reply(format!("read: {}", last["content"].as_str().unwrap_or_default()));
        }
        Script::ToolCall {
            name: "read_file".into(),
            arguments: json!({"path": "inbox/shopping.txt"}).to_string(),
        }
    });
    let gateway = MediaGateway::default();
    gateway.put_file("d1", "eggs\nflour\n");
    let mut daemon = daemon(&llm, &gateway, |_| {}).await;
    let document = Attachment {
        name: Some("../../shopping.txt".into()),
        mime: Some("text/plain".into()),
        ..attachment(MediaKind::Document, "d1")
    };
    let id = gateway
        .send_media("alice", vec![document], Some("what do I need?"))
        .await;
    let replies = gateway.replies(&id).await;
    let (kind, text) = replies.last().unwrap();
    assert_eq!(*kind, ReplyKind::Answer);
    assert!(text.starts_with("read: ") && text.contains("eggs\nflour"), "{text}");
    let told = last_user_text(&llm.requests()[0]);
    assert!(
        told.contains("saved in the workspace as inbox/shopping.txt (11 bytes, text/plain)"),
        "{told}"
    );
    let saved = std::fs::read_to_string(daemon.config.workspace().join("inbox/shopping.txt")).unwrap();
    assert_eq!(saved, "eggs\nflour\n");
    daemon.stop().await;
}

#[tokio::test]
async fn media_too_large_or_too_long_gets_a_clear_answer_and_is_not_fetched() {
    let llm = FakeLlm::start().await;
    let transcriber = FakeTranscriber::start().await;
    let gateway = MediaGateway::default();
    gateway.put_file("big", vec![0u8; 4096]);
    let url = transcriber.base_url();
    let mut daemon = daemon(&llm, &gateway, |c| {
        c.transcription.base_url = Some(url);
        c.transcription.max_seconds = 60;
        c.media.max_document_bytes = 1024;
        c.llm.providers[0].vision = true;
        c.media.max_photo_bytes = 1024;
    })
    .await;

    let long = gateway.send_media("alice", vec![voice("big", 90)], None).await;
    let declared = Attachment {
        size: Some(4096),
        ..attachment(MediaKind::Document, "big")
    };
    let file = gateway.send_media("alice", vec![declared], None).await;
    let photo = gateway
        .send_media("alice", vec![attachment(MediaKind::Photo, "big")], None)
        .await;
    let told = |replies: Vec<(ReplyKind, String)>| {
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert_eq!(replies[0].0, ReplyKind::Notice);
        replies[0].1.clone()
    };
    assert_eq!(
        told(gateway.replies_counted(&long, 1).await),
        "Your voice note is 1 min 30 s long; I transcribe up to 1 min (`transcription.max_seconds`)."
    );
    assert_eq!(
        told(gateway.replies_counted(&file, 1).await),
        "Your file is too large for me: 4.0 KB, and I take up to 1.0 KB (`media.max_document_bytes`)."
    );
    assert_eq!(
        told(gateway.replies_counted(&photo, 1).await),
        "Your photo is too large for me: 4.0 KB, and I take up to 1.0 KB (`media.max_photo_bytes`)."
    );
    assert_eq!(
        gateway.fetched(),
        ["big"],
        "only the undeclared photo was fetched, and refused"
    );
    assert!(transcriber.uploads().is_empty());
    assert!(llm.requests().is_empty());
    daemon.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_cut_short_by_a_stop_is_fetched_again_and_answered_after_the_restart() {
    let llm = FakeLlm::start().await;
    let transcriber = FakeTranscriber::start().await;
    transcriber.push(Heard::Hang);
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::harness::config(dir.path(), &llm.base_url());
    config.transcription.base_url = Some(transcriber.base_url());
    config.pipeline.shutdown_grace_s = 1;
    let words = "what is on my calendar tomorrow";

    // The first daemon runs on a runtime of its own: dropping that runtime
    // ends the turn its stop left waiting on the transcriber, as an exit would.
    let first = MediaGateway::default();
    first.put_file("v1", words);
    let stopped = {
        let (config, gateway, transcriber) = (config.clone(), first.clone(), transcriber.clone());
        std::thread::spawn(move || {
            let runtime = tokio::runtime::Runtime::new().unwrap();
            let id = runtime.block_on(async {
                let daemon = passepartout::Daemon::start_with(config, gateway.extensions())
                    .await
                    .expect("daemon starts");
                let id = gateway.send_media("alice", vec![voice("v1", 3)], None).await;
                transcriber.wait_for_uploads(1, WAIT).await; // its turn waits on the transcriber
                daemon.shutdown().await.expect("clean shutdown");
                id
            });
            drop(runtime);
            id
        })
    };
    let id = tokio::task::spawn_blocking(move || stopped.join().unwrap())
        .await
        .unwrap();
    assert!(llm.requests().is_empty(), "the first daemon never reached the model");

    let second = MediaGateway::default();
    second.put_file("v1", words);
    let daemon = passepartout::Daemon::start_with(config, second.extensions())
        .await
        .expect("daemon restarts");
    let replies = second.replies(&id).await;
    let said = format!("[The person sent a voice note; transcribed, it says:]\n{words}");
    assert_eq!(replies, [(ReplyKind::Answer, format!("echo: {said}"))]);
    assert_eq!(second.fetched(), ["v1"], "fetched again after the restart");
    assert_eq!(transcriber.uploads().len(), 2);
    daemon.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_caption_longer_than_any_message_is_refused_at_the_door() {
    let llm = FakeLlm::start().await;
    let gateway = MediaGateway::default();
    gateway.put_file("p1", PNG);
    let mut daemon = daemon(&llm, &gateway, |c| c.pipeline.max_message_bytes = 100).await;
    let caption = "x".repeat(101);
    let ack = gateway
        .offer_media("alice", vec![attachment(MediaKind::Photo, "p1")], Some(&caption))
        .await;
    assert_eq!(
        ack,
        Ack::Refused {
            reason: Refusal::TooLarge
        }
    );
    assert!(gateway.fetched().is_empty(), "nothing was fetched");
    daemon.stop().await;
}
