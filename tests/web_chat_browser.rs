//! The Chat page in a real headless Chromium: signed in with a link, a
//! person types a question and watches the reply appear while it is
//! written, then rendered with its code block; attaches a file and finds it
//! in the workspace's `inbox/`; reloads and sees the same conversation. A
//! screenshot `web-chat` goes to `target/screenshots/`.

use std::time::Duration;

use crate::support::approvals;
use crate::support::browser::Browser;
use crate::support::fake_llm::{Script, StreamEnd, Streamed};
use crate::web_chat::{link, start};

/// Between the streamed pieces: long enough to see the draft grow.
const GAP: Duration = Duration::from_millis(300);

#[tokio::test]
async fn a_person_chats_streams_a_reply_attaches_a_file_and_reloads() {
    let Some(browser) = Browser::start("web_chat_browser").await else {
        return;
    };
    let mut chat = start().await;
    let link = link(&chat.daemon).await;
    browser.goto(&link).await;
    browser.wait_for_text("h1", "Overview").await;
    browser.click(r#"nav a[href="/chat"]"#).await;
    browser.wait_for_text("h1", "Chat").await;
    browser.wait_for_text("#conversation", "Nothing said yet").await;

    chat.llm.push(Script::Stream(
        Streamed::text(&[
            "Say it ",
            "with `echo`:\n\n",
            "```sh\n",
            "echo 'hello, <world>'\n",
            "```\n\n",
            "That prints it.",
        ])
        .spaced(GAP),
    ));
    browser.type_into("#message", "How do I say hello in a shell?").await;
    browser.click("#send-button").await;
    // Written as it comes: the draft, before the turn is done.
    browser.wait_for_text(".live-turn .message.assistant", "Say it").await;
    browser.wait_for_text("#chat-state", "writing").await;
    browser.screenshot("web-chat-streaming").await;
    // Done: the reply as the server renders it, its code block a block.
    let code = browser.wait_for("#conversation .markdown pre code").await;
    assert_eq!(code.text().await.unwrap(), "echo 'hello, <world>'");
    browser.wait_for_text("#conversation", "That prints it.").await;
    browser
        .wait_for_text("#conversation .message.person", "How do I say hello in a shell?")
        .await;
    browser.screenshot("web-chat").await;

    // A file, attached and sent with a line.
    let dir = tempfile::tempdir().unwrap();
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "buy eggs").unwrap();
    chat.llm.push(Script::Reply("Saved your notes.".into()));
    browser.type_into("#file", notes.to_str().unwrap()).await;
    browser.type_into("#message", "keep these").await;
    browser.click("#send-button").await;
    browser.wait_for_text("#conversation", "Saved your notes.").await;
    let saved = chat.daemon.config.workspace().join("inbox/notes.txt");
    assert_eq!(std::fs::read_to_string(saved).unwrap(), "buy eggs");

    // Reloaded: the same conversation, from what the core keeps.
    browser.goto(&format!("{}/chat", chat.base)).await;
    browser
        .wait_for_text("#conversation", "How do I say hello in a shell?")
        .await;
    browser.wait_for_text("#conversation .markdown pre code", "echo").await;
    browser.wait_for_text("#conversation", "Saved your notes.").await;
    chat.daemon.stop().await;
}

#[tokio::test]
async fn a_reply_is_stopped_and_an_approval_answered_on_the_page() {
    let Some(browser) = Browser::start("web_chat_browser::stop_and_approve").await else {
        return;
    };
    let chat = start().await;
    browser.goto(&link(&chat.daemon).await).await;
    browser.wait_for_text("h1", "Overview").await;
    browser.goto(&format!("{}/chat", chat.base)).await;
    browser.wait_for("#send-button").await;

    // A long reply, stopped while it is written: the model never finishes
    // it, so only the Stop ends the turn, however long it takes to land.
    chat.llm.push(Script::Stream(
        Streamed::words("a long answer that goes on and on").ending(StreamEnd::Hang),
    ));
    browser.type_into("#message", "tell me a long story").await;
    browser.click("#send-button").await;
    browser.wait_for_text(".live-turn .message.assistant", "a long").await;
    browser.click("#stop").await;
    browser.wait_for_text("#chat-state", "Stopped.").await;
    let shown = browser.wait_for_text("#conversation .message.notice", "Stopped.").await;
    assert!(shown.contains("Stopped. A stopped exchange is not kept"), "{shown}");
    let shown = browser.text("#conversation").await;
    assert!(shown.contains("tell me a long story"), "{shown}");
    browser.screenshot("web-chat-stopped").await;

    // An approval, asked in the chat and answered with its button there.
    chat.llm.set_responder(approvals::model);
    browser.type_into("#message", "please run it").await;
    browser.click("#send-button").await;
    let card = browser
        .wait_for_text("#conversation .chat-approval", "echo ran >> ran.txt")
        .await;
    assert!(card.contains("Approve") && card.contains("Deny"), "{card}");
    browser.screenshot("web-chat-approval").await;
    browser.click("#conversation .chat-approval button.approve").await;
    browser.wait_for_text("#conversation", "final: ").await;
    let ran = chat.daemon.config.workspace().join("ran.txt");
    assert_eq!(std::fs::read_to_string(ran).unwrap(), "ran\n", "ran once");
    browser.screenshot("web-chat-approved").await;
}
