//! Replies in parts and files out, through the real daemon: a reply split in
//! parts reaches the person exactly once per part even when a part fails and
//! is retried, and `send_file` delivers a workspace file once, or says
//! clearly why not. Telegram and Signal are the fakes speaking their wire
//! protocols; the socket is the real one.

use crate::support;

use std::path::Path;

use passepartout_socket::ServerFrame;
use serde_json::{Value, json};
use support::fake_llm::{FakeLlm, Script, last_message, last_user_text};
use support::fake_signal::{FakeSignal, attachments_of, codes, text_envelope};
use support::fake_telegram::{FakeFailure, FakeTelegram, Sent};
use support::gateway_daemons::{with_signal, with_telegram};
use support::harness::{TestDaemon, WAIT, send};

const TOKEN: &str = "123456:test-token-never-logged";
const OWNER: i64 = 42;
const SIGNAL_OWNER: &str = "0a0a0a0a-0000-4000-8000-00000000000a";

/// About 5 KB of plain text in paragraphs: two Telegram messages, three
/// Signal ones.
fn long_reply() -> String {
    (0..48)
        .map(|n| format!("Paragraph {n:02}: {}\n\n", "lorem ipsum dolor ".repeat(5)))
        .collect()
}

/// The fake model: a long reply for "long…", `send_file` for "send me
/// PATH", what a tool said after a tool call, an echo otherwise.
fn model(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply(format!("tool said: {}", last["content"].as_str().unwrap_or_default()));
    }
    let text = last_user_text(request);
    if let Some(path) = text.strip_prefix("send me ") {
        return Script::ToolCall {
            name: "send_file".into(),
            arguments: json!({ "path": path, "caption": "here it is" }).to_string(),
        };
    }
    if text.starts_with("long") {
        // Whole, even to a request that streams: a reply written slowly
        // enough on a busy machine would be shown as a draft first, and
        // these tests count the parts, not the draft's edits.
        return Script::reply_using(&long_reply(), 10, 10);
    }
    Script::Echo
}

/// The start of each text: enough to tell parts apart in a failure.
fn starts(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|text| text.chars().take(24).collect()).collect()
}

/// Text without its whitespace: what the parts must add up to, however
/// they were cut.
fn squeezed(text: &str) -> String {
    text.split_whitespace().collect()
}

async fn telegram_daemon(telegram: &FakeTelegram, llm: &FakeLlm) -> (TestDaemon, tempfile::TempDir) {
    llm.set_responder(model);
    with_telegram(llm, telegram, TOKEN, OWNER, |_| {}).await
}

async fn signal_daemon(signal: &FakeSignal, llm: &FakeLlm) -> TestDaemon {
    llm.set_responder(model);
    with_signal(llm, signal, SIGNAL_OWNER, |_| {}).await
}

/// Sends "ping" on Telegram and waits for its echo: every reply committed
/// before it in the chat has then been delivered (the outbox keeps order).
async fn telegram_settled(telegram: &FakeTelegram) -> Vec<Sent> {
    telegram.push_update(telegram.text_message(OWNER, OWNER, "ping"));
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let sent = telegram.sent();
        if sent.iter().any(|s| s.text == "echo: ping") {
            return sent.into_iter().filter(|s| s.chat_id == OWNER).collect();
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        assert!(!left.is_zero(), "no echo of ping within {WAIT:?}; sent: {sent:#?}");
        telegram.wait_for_sent(sent.len() + 1, left).await;
    }
}

fn workspace_file(daemon: &TestDaemon, name: &str, bytes: &[u8]) {
    let path = daemon.config.workspace().join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

fn outgoing_is_empty(daemon: &TestDaemon) -> bool {
    let outgoing = daemon.config.data_dir().join("outgoing");
    !outgoing.exists() || std::fs::read_dir(&outgoing).unwrap().next().is_none()
}

#[tokio::test]
async fn telegram_a_rate_limited_second_part_is_sent_once() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let (_daemon, _token) = telegram_daemon(&telegram, &llm).await;
    telegram.fail_after("sendMessage", 1, FakeFailure::RetryAfter(1));
    let update = telegram.text_message(OWNER, OWNER, "long reply please");
    let asked = update["message"]["message_id"].as_i64().unwrap();
    telegram.push_update(update);
    let sent = telegram_settled(&telegram).await;
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts.len(),
        3,
        "two parts and the echo, each once: {:?}",
        starts(&texts)
    );
    assert_eq!(texts[2], "echo: ping");
    assert_ne!(texts[0], texts[1]);
    assert_eq!(squeezed(&texts[..2].concat()), squeezed(&long_reply()));
    assert_eq!(
        sent[0].reply_to_message_id,
        Some(asked),
        "the first part quotes the question"
    );
    assert_eq!(sent[1].reply_to_message_id, None);
    assert_eq!(
        telegram.calls("sendMessage").len(),
        4,
        "part 1, part 2 refused with 429, part 2 again, the echo"
    );
}

#[tokio::test]
async fn signal_a_failed_second_part_is_sent_once() {
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    let _daemon = signal_daemon(&signal, &llm).await;
    signal.fail_after("send", 1, codes::IO_ERROR, "Failed to send message");
    signal.push_envelope(text_envelope(SIGNAL_OWNER, 1_700_000_000_001, "long reply please"));
    signal.wait_for_sent(3).await;
    signal.push_envelope(text_envelope(SIGNAL_OWNER, 1_700_000_000_002, "ping"));
    let sent = tokio::time::timeout(WAIT, async {
        loop {
            let sent = signal.sent();
            if sent.iter().any(|s| s.message.as_deref() == Some("echo: ping")) {
                return sent;
            }
            signal.wait_for_sent(sent.len() + 1).await;
        }
    })
    .await
    .expect("the echo of ping in time");
    let texts: Vec<&str> = sent.iter().filter_map(|s| s.message.as_deref()).collect();
    assert_eq!(
        texts.len(),
        4,
        "three parts and the echo, each once: {:?}",
        starts(&texts)
    );
    assert_eq!(squeezed(&texts[..3].concat()), squeezed(&long_reply()));
    assert_eq!(sent[0].quote_timestamp, Some(1_700_000_000_001));
    assert_eq!(sent[1].quote_timestamp, None, "a resumed part does not quote again");
    assert_eq!(signal.calls("send").len(), 5, "the failed second part was tried twice");
}

#[tokio::test]
async fn telegram_send_file_uploads_the_document_once_and_clears_its_copy() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let (daemon, _token) = telegram_daemon(&telegram, &llm).await;
    let bytes: Vec<u8> = (0..3000u32).map(|n| (n % 251) as u8).collect();
    workspace_file(&daemon, "reports/q3.bin", &bytes);
    telegram.push_update(telegram.text_message(OWNER, OWNER, "send me reports/q3.bin"));
    let sent = telegram_settled(&telegram).await;
    let uploads = telegram.uploads();
    assert_eq!(uploads.len(), 1, "{uploads:#?}");
    let upload = &uploads[0];
    assert_eq!(upload.method, "senddocument");
    assert_eq!(upload.chat_id, OWNER);
    assert_eq!(upload.file.file_name, "q3.bin");
    assert_eq!(upload.file.bytes, bytes);
    assert_eq!(upload.caption.as_deref(), Some("here it is"));
    // The model's Markdown arrives rendered: the path as code.
    assert!(sent[0].text.starts_with("tool said: reports/q3.bin"), "{sent:#?}");
    assert_eq!(sent[0].params["entities"][0]["type"], "code", "{sent:#?}");
    assert!(outgoing_is_empty(&daemon), "the copy goes once it was sent");
}

#[tokio::test]
async fn telegram_send_file_sends_an_image_as_a_photo() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let (daemon, _token) = telegram_daemon(&telegram, &llm).await;
    workspace_file(&daemon, "chart.png", b"\x89PNG\r\n\x1a\nfake");
    telegram.push_update(telegram.text_message(OWNER, OWNER, "send me chart.png"));
    let uploads = telegram.wait_for_uploads(1, WAIT).await;
    assert_eq!(uploads[0].method, "sendphoto");
    assert_eq!(uploads[0].file.bytes, b"\x89PNG\r\n\x1a\nfake");
}

#[tokio::test]
async fn telegram_sends_an_image_it_refuses_as_a_photo_as_a_document() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let (daemon, _token) = telegram_daemon(&telegram, &llm).await;
    workspace_file(&daemon, "panorama.jpg", b"\xff\xd8\xff fake");
    telegram.fail_next(
        "sendPhoto",
        FakeFailure::BadRequest("Bad Request: PHOTO_INVALID_DIMENSIONS".into()),
    );
    telegram.push_update(telegram.text_message(OWNER, OWNER, "send me panorama.jpg"));
    let uploads = telegram.wait_for_uploads(1, WAIT).await;
    assert_eq!(uploads[0].method, "senddocument");
    assert_eq!(uploads[0].file.bytes, b"\xff\xd8\xff fake");
    telegram_settled(&telegram).await;
    assert_eq!(telegram.uploads().len(), 1);
}

#[tokio::test]
async fn telegram_send_file_refuses_a_path_outside_the_workspace_and_a_file_too_large() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    let (daemon, _token) = telegram_daemon(&telegram, &llm).await;
    std::fs::write(daemon.dir.path().join("secret.txt"), "secret").unwrap();
    let big = std::fs::File::create(daemon.config.workspace().join("big.bin")).unwrap();
    big.set_len(50 * 1000 * 1000 + 1).unwrap();
    telegram.push_update(telegram.text_message(OWNER, OWNER, "send me ../secret.txt"));
    telegram.push_update(telegram.text_message(OWNER, OWNER, "send me big.bin"));
    let sent = telegram_settled(&telegram).await;
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts.len(), 3, "{texts:#?}");
    assert!(
        texts[0].contains("refused") && texts[0].contains("contains .."),
        "outside the workspace: {}",
        texts[0]
    );
    assert!(
        texts[1].contains("Telegram takes files of at most 50.0 MB") && texts[1].contains("smaller"),
        "too large: {}",
        texts[1]
    );
    assert!(telegram.uploads().is_empty());
    assert!(telegram.calls("sendDocument").is_empty());
    assert!(outgoing_is_empty(&daemon), "nothing was copied");
}

#[tokio::test]
async fn signal_send_file_sends_the_file_as_an_attachment_once() {
    let signal = FakeSignal::start().await;
    let llm = FakeLlm::start().await;
    let daemon = signal_daemon(&signal, &llm).await;
    workspace_file(&daemon, "notes.txt", b"the notes");
    signal.push_envelope(text_envelope(SIGNAL_OWNER, 1_700_000_000_001, "send me notes.txt"));
    let sent = signal.wait_for_sent(2).await;
    let with_files: Vec<_> = sent
        .iter()
        .filter(|s| !attachments_of(&s.params).unwrap().is_empty())
        .collect();
    assert_eq!(with_files.len(), 1, "{sent:#?}");
    let attachments = attachments_of(&with_files[0].params).unwrap();
    assert_eq!(attachments.len(), 1);
    assert_eq!(attachments[0].bytes, b"the notes");
    assert_eq!(attachments[0].file_name.as_deref(), Some("notes.txt"));
    assert_eq!(attachments[0].media_type, "text/plain");
    assert_eq!(with_files[0].message.as_deref(), Some("here it is"));
    assert_eq!(with_files[0].quote_timestamp, Some(1_700_000_000_001));
}

#[tokio::test]
async fn socket_send_file_is_a_file_frame_naming_the_workspace_file() {
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let daemon = TestDaemon::start(&llm).await;
    workspace_file(&daemon, "notes.md", b"# notes");
    let mut client = daemon.client("files").await;
    let id = send(&mut client, "send me notes.md").await;
    let frame = tokio::time::timeout(WAIT, async {
        loop {
            match client.next_event().await.expect("connection stays up") {
                frame @ ServerFrame::File { .. } => return frame,
                ServerFrame::Reply { text, .. } => panic!("a reply before the file: {text}"),
                _ => {}
            }
        }
    })
    .await
    .expect("a file frame in time");
    let ServerFrame::File {
        in_reply_to,
        path,
        name,
        media_type,
        size,
        caption,
        ..
    } = frame
    else {
        unreachable!()
    };
    assert_eq!(in_reply_to.as_deref(), Some(id.as_str()));
    assert_eq!(
        (name.as_str(), media_type.as_str(), size),
        ("notes.md", "text/markdown", 7)
    );
    assert_eq!(caption.as_deref(), Some("here it is"));
    assert_eq!(
        Path::new(&path),
        daemon.config.workspace().canonicalize().unwrap().join("notes.md")
    );
    // It stays: the client reads it there.
    let (_, answer) = support::harness::reply_to(&mut client, &id).await;
    assert!(answer.starts_with("tool said:"), "{answer}");
    assert_eq!(std::fs::read(&path).unwrap(), b"# notes");
}

/// The gateway checks the file again when it sends it: one that grew past
/// Telegram's limit since `send_file` took it, or is gone, is refused for
/// good (the outbox drops it) with the reason, and nothing is uploaded.
#[tokio::test]
async fn telegram_refuses_at_delivery_a_file_grown_too_large_or_gone() {
    use passepartout_gateway::{
        ChatId, ConversationKey, Deliver, GatewayError, GatewayId, Outbound, OutboundBody, OutboundFile,
    };
    use passepartout_telegram::{MAX_UPLOAD_BYTES, MemoryOffsetStore, TelegramGateway, TelegramSettings};

    let telegram = FakeTelegram::start(TOKEN).await;
    let gateway = TelegramGateway::new(
        TelegramSettings::new(TOKEN).with_api_url(telegram.base_url()),
        std::sync::Arc::new(MemoryOffsetStore::default()),
    );
    let dir = tempfile::tempdir().unwrap();
    let grown = dir.path().join("grown.bin");
    std::fs::File::create(&grown)
        .unwrap()
        .set_len(MAX_UPLOAD_BYTES + 1)
        .unwrap();
    let file = |path: &Path| Outbound {
        drafts: Vec::new(),
        turn_end: None,
        id: "1-0".into(),
        conversation: ConversationKey::new(
            GatewayId::new("telegram").unwrap(),
            ChatId::new(OWNER.to_string()).unwrap(),
        ),
        in_reply_to: None,
        body: OutboundBody::File(OutboundFile {
            path: path.display().to_string(),
            name: "grown.bin".into(),
            media_type: "application/octet-stream".into(),
            size: 10,
            caption: None,
            temporary: true,
        }),
    };
    let too_large = gateway.deliver(&file(&grown)).await.unwrap_err();
    assert_eq!(
        too_large,
        GatewayError::TooLarge {
            size: Some(MAX_UPLOAD_BYTES + 1),
            limit: MAX_UPLOAD_BYTES
        }
    );
    let gone = gateway.deliver(&file(&dir.path().join("gone.bin"))).await.unwrap_err();
    assert!(
        matches!(&gone, GatewayError::Rejected { reason } if reason.contains("cannot read grown.bin")),
        "{gone:?}"
    );
    assert!(too_large.is_permanent() && gone.is_permanent());
    assert!(telegram.calls("sendDocument").is_empty());
}

/// `send_file` is gated like any tool: named in `tools.require_approval`
/// it waits for a person, and once approved the file goes out, once.
#[tokio::test]
async fn send_file_held_for_approval_goes_out_once_approved() {
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let daemon = TestDaemon::start_with(
        &llm,
        |config| config.tools.require_approval = vec!["send_file".into()],
        Vec::new(),
    )
    .await;
    workspace_file(&daemon, "notes.md", b"# notes");
    let mut chat = support::chat::Chat::open(&daemon, "approved").await;
    let original = chat.send("send me notes.md").await;
    let prompt = chat.prompt(&original).await;
    assert!(prompt.action.starts_with("send_file"), "{prompt:?}");
    chat.answer(&format!("approve {}", prompt.token), None).await;
    let is_file = |frame: &ServerFrame| matches!(frame, ServerFrame::File { .. });
    let ServerFrame::File { name, .. } = chat.take("the approved file", is_file).await else {
        unreachable!()
    };
    assert_eq!(name, "notes.md");
    chat.sync("ping").await;
    assert!(!chat.backlog_has(is_file), "the file went out once");
}
