//! Parts and files across a crash: the real binary, killed with SIGKILL at
//! a chosen moment, then started again on the same data. The fake Bot API
//! never answers the call the kill interrupts, so the moment is exact: a
//! reply's second part (its first part recorded before it was tried), or a
//! file's upload. After the restart each part, and the file, reaches the
//! person once. A reply killed while it was shown as a draft is delivered
//! once after the restart, in the draft's own message. And `passepartout
//! send`, the real command, shows a file it gets.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use support::fake_llm::{FakeLlm, Script, Streamed, last_message, last_user_text};
use support::fake_telegram::{FakeFailure, FakeTelegram, Sent};
use support::harness::WAIT;
use support::process::{Running, run_cli, write_config};

const TOKEN: &str = "123456:test-token-never-logged";
const OWNER: i64 = 42;

fn long_reply() -> String {
    (0..48)
        .map(|n| format!("Paragraph {n:02}: {}\n\n", "lorem ipsum dolor ".repeat(5)))
        .collect()
}

fn model(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply("the file is on its way".into());
    }
    let text = last_user_text(request);
    if let Some(path) = text.strip_prefix("send me ") {
        return Script::ToolCall {
            name: "send_file".into(),
            arguments: json!({ "path": path }).to_string(),
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

/// The binary on `config`, its bot token in the environment.
async fn start(config: &Path) -> Running {
    Running::start_with(config, &[("TELEGRAM_BOT_TOKEN", TOKEN)]).await
}

/// A config for the binary in `dir` with Telegram on `telegram`.
fn telegram_config(dir: &Path, llm: &FakeLlm, telegram: &FakeTelegram) -> PathBuf {
    let config = write_config(dir, &llm.base_url());
    let mut text = std::fs::read_to_string(&config).unwrap();
    text.push_str(&format!(
        "[telegram]\nenabled = true\napi_url = {url:?}\nallowed_users = [{OWNER}]\npoll_timeout_s = 1\n",
        url = telegram.base_url(),
    ));
    std::fs::write(&config, text).unwrap();
    config
}

/// Sends "ping" and waits for its echo: everything committed before it in
/// the chat has been delivered by then. Returns what the chat got.
async fn settled(telegram: &FakeTelegram) -> Vec<Sent> {
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

/// The start of each text: enough to tell parts apart in a failure.
fn starts(texts: &[&str]) -> Vec<String> {
    texts.iter().map(|text| text.chars().take(24).collect()).collect()
}

fn squeezed(text: &str) -> String {
    text.split_whitespace().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_between_two_parts_resumes_at_the_second() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let dir = tempfile::tempdir().unwrap();
    let config = telegram_config(dir.path(), &llm, &telegram);
    let daemon = start(&config).await;
    // Part 1 goes out; part 2 is never answered.
    telegram.fail_after("sendMessage", 1, FakeFailure::Hang);
    telegram.push_update(telegram.text_message(OWNER, OWNER, "long reply please"));
    telegram.wait_for_calls("sendMessage", 2, WAIT).await;
    daemon.kill().await;
    assert_eq!(telegram.sent().len(), 1, "only part 1 was confirmed before the kill");

    let _daemon = start(&config).await;
    let sent = settled(&telegram).await;
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts.len(),
        3,
        "part 1, part 2 and the echo, each once: {:?}",
        starts(&texts)
    );
    assert_ne!(texts[0], texts[1]);
    assert_eq!(squeezed(&texts[..2].concat()), squeezed(&long_reply()));
    assert_eq!(texts[2], "echo: ping");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_killed_mid_stream_is_delivered_once_in_its_draft() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    // Ten seconds of writing: the kill comes in the middle.
    let words: Vec<String> = (0..500).map(|n| format!("slow{n}")).collect();
    let slow = words.join(" ");
    llm.set_responder(move |_| Script::Stream(Streamed::words(&slow).spaced(Duration::from_millis(20))));
    let dir = tempfile::tempdir().unwrap();
    let config = telegram_config(dir.path(), &llm, &telegram);
    let daemon = start(&config).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, "tell me slowly"));
    let draft = telegram
        .sent_matching(WAIT, |sent| sent.text.starts_with("slow0"))
        .await
        .expect("a draft");
    // Edited once: where it is shown was recorded before.
    telegram.wait_for_calls("editMessageText", 1, WAIT).await;
    daemon.kill().await;

    llm.set_responder(|request| match last_user_text(request).as_str() {
        "ping" => Script::Echo,
        _ => Script::Reply("The answer, after all.".into()),
    });
    let _daemon = start(&config).await;
    let sent = settled(&telegram).await;
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(
        texts.len(),
        2,
        "the draft and the echo, nothing sent again: {:?}",
        starts(&texts)
    );
    assert!(texts[0].starts_with("slow0"));
    let messages = telegram.bot_messages(OWNER);
    let shown: Vec<(i64, &str)> = messages.iter().map(|(id, text, _)| (*id, text.as_str())).collect();
    assert_eq!(
        shown[0],
        (draft.message_id, "The answer, after all."),
        "the draft became the reply"
    );
    assert_eq!(
        shown.len(),
        2,
        "the reply once, nothing half-written beside it, then the echo: {shown:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_whose_upload_a_kill_cut_short_is_sent_once_after_the_restart() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let dir = tempfile::tempdir().unwrap();
    let config = telegram_config(dir.path(), &llm, &telegram);
    let workspace = dir.path().join("data").join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let bytes: Vec<u8> = (0..10_000u32).map(|n| (n % 253) as u8).collect();
    std::fs::write(workspace.join("report.bin"), &bytes).unwrap();
    let daemon = start(&config).await;
    telegram.fail_next("sendDocument", FakeFailure::Hang);
    telegram.push_update(telegram.text_message(OWNER, OWNER, "send me report.bin"));
    telegram.wait_for_calls("sendDocument", 1, WAIT).await;
    daemon.kill().await;
    // What the person sees does not depend on the workspace any more.
    std::fs::remove_file(workspace.join("report.bin")).unwrap();

    let _daemon = start(&config).await;
    let sent = settled(&telegram).await;
    let uploads = telegram.uploads();
    assert_eq!(uploads.len(), 1, "{uploads:#?}");
    assert_eq!(uploads[0].file.bytes, bytes);
    assert_eq!(uploads[0].file.file_name, "report.bin");
    let texts: Vec<&str> = sent.iter().map(|s| s.text.as_str()).collect();
    assert_eq!(texts, ["the file is on its way", "echo: ping"]);
    let outgoing = dir.path().join("data").join("outgoing");
    assert_eq!(
        std::fs::read_dir(outgoing).unwrap().count(),
        0,
        "the copy went once it was sent"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_prints_the_file_the_answer_brings_then_the_answer() {
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let workspace = dir.path().join("data").join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    std::fs::write(workspace.join("notes.md"), "# notes").unwrap();
    let _daemon = Running::start(&config).await;
    let output = run_cli(&config, &["send", "send me notes.md"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    let path = lines[0].strip_prefix("[file] ").expect("the file first");
    assert!(path.ends_with("/workspace/notes.md"), "{path}");
    assert_eq!(
        std::fs::read_to_string(path).unwrap(),
        "# notes",
        "the file is there to read"
    );
    assert_eq!(lines[1], "the file is on its way");
}
