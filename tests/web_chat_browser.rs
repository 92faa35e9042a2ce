//! The Chat page in a real headless Chromium: signed in with a link, a
//! person types a question and watches the reply appear while it is
//! written, then rendered with its code block and a copy button; attaches a
//! file and finds it in the workspace's `inbox/`; reloads and sees the same
//! conversation, opened at its newest message. Enter sends and Shift+Enter
//! does not; "New chat" starts a conversation the model sees nothing of the
//! other in; a chat is renamed, and deleted after a confirmation with its
//! history; a stopped reply keeps the message; the Conversations page
//! renders the Markdown and shows a new turn by itself. Screenshots of the
//! chat at 1280×800 and 390×844 go to `target/screenshots/`, and at 390 px
//! the page does not scroll sideways.

use std::time::Duration;

use serde_json::Value;
use thirtyfour::prelude::*;

use crate::support::approvals;
use crate::support::browser::Browser;
use crate::support::fake_llm::{Script, StreamEnd, Streamed, last_user_text};
use crate::support::harness::{ask, texts_of};
use crate::support::web_chat::{conversation_page, link, start};

/// Between the streamed pieces: long enough to see the draft grow, and for
/// the reply to be still being written when the test, polling a page on a
/// loaded machine, looks for its state.
const GAP: Duration = Duration::from_millis(1000);

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
    let code = browser.wait_for_text("#conversation .markdown pre code", "echo").await;
    assert_eq!(code, "echo 'hello, <world>'");
    // The code block has its copy button, which copies.
    let copy = browser
        .wait_for_text("#conversation .code-block button.copy", "Copy")
        .await;
    assert_eq!(copy, "Copy");
    browser.click("#conversation .code-block button.copy").await;
    browser
        .wait_until("the copy button to answer", || async {
            let said = browser
                .find("#conversation .code-block button.copy")
                .await
                .text()
                .await
                .ok()?;
            (said != "Copy").then_some(())
        })
        .await;
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
    browser
        .wait_for_text("#chat-state", "Stopped. Your message is kept")
        .await;
    browser
        .wait_for_text("#conversation .message.assistant", "Stopped here by the person")
        .await;
    browser.screenshot("web-chat-stopped").await;
    // Reloaded: the message is still there, kept by the core.
    browser.goto(&format!("{}/chat", chat.base)).await;
    let shown = browser
        .wait_for_text("#conversation .message.person", "tell me a long story")
        .await;
    assert!(shown.contains("tell me a long story"), "{shown}");

    // An approval, asked in the chat and answered with its button there.
    chat.llm.set_responder(approvals::model);
    browser.type_into("#message", "please run it").await;
    browser.click("#send-button").await;
    let card = browser
        .wait_for_text("#conversation .chat-approval", "echo ran >> ran.txt")
        .await;
    assert!(card.contains("Approve") && card.contains("Deny"), "{card}");
    // What "Always allow" lets run, in the words the terminal offers it.
    assert!(
        card.contains(
            "Always allow also lets echo ran >> ran.txt exactly as written run here without asking, for 30 days."
        ),
        "{card}"
    );
    browser.screenshot("web-chat-approval").await;
    browser.click("#conversation .chat-approval button.approve").await;
    browser.wait_for_text("#conversation", "final: ").await;
    let ran = chat.daemon.config.workspace().join("ran.txt");
    assert_eq!(std::fs::read_to_string(ran).unwrap(), "ran\n", "ran once");
    browser.screenshot("web-chat-approved").await;
}

/// Runs `script` in the page; what it returns.
async fn run(browser: &Browser, script: &str) -> Value {
    browser
        .driver()
        .execute(script, Vec::new())
        .await
        .unwrap_or_else(|error| panic!("{script}: {error}"))
        .json()
        .clone()
}

/// The page's scroll: how far down, how tall, how much shows.
async fn scrolled(browser: &Browser) -> (f64, f64, f64) {
    let at = run(
        browser,
        "var e = document.scrollingElement; return [e.scrollTop, e.scrollHeight, e.clientHeight];",
    )
    .await;
    let n = |i: usize| at[i].as_f64().unwrap();
    (n(0), n(1), n(2))
}

/// The path the browser is at.
async fn path(browser: &Browser) -> String {
    run(browser, "return location.pathname;")
        .await
        .as_str()
        .unwrap()
        .to_owned()
}

/// Resizes the window to `width`×`height` and waits until the page sees it.
async fn window(browser: &Browser, width: u32, height: u32) {
    browser
        .driver()
        .set_window_rect(0, 0, width, height)
        .await
        .expect("the window resized");
    browser
        .wait_until("the window to take its size", || async {
            let inner = run(browser, "return window.innerWidth;").await.as_u64()?;
            (inner <= u64::from(width)).then_some(())
        })
        .await;
}

#[tokio::test]
async fn enter_sends_new_chats_stay_apart_and_a_chat_is_renamed_and_deleted() {
    let Some(browser) = Browser::start("web_chat_browser::chats").await else {
        return;
    };
    let chat = start().await;
    browser.goto(&link(&chat.daemon).await).await;
    browser.wait_for_text("h1", "Overview").await;
    window(&browser, 1280, 800).await;
    browser.goto(&format!("{}/chat", chat.base)).await;
    browser.wait_for_text("#conversation", "Nothing said yet").await;
    let first = path(&browser).await;

    // Shift+Enter is a new line, and sends nothing.
    browser.type_into("#message", "plan a trip").await;
    browser
        .find("#message")
        .await
        .send_keys(Key::Shift + Key::Enter)
        .await
        .unwrap();
    browser.type_into("#message", "to Rome").await;
    let typed = run(&browser, "return document.getElementById('message').value;").await;
    assert_eq!(typed, "plan a trip\nto Rome");
    assert!(chat.llm.requests().is_empty(), "nothing sent yet");
    // Enter sends the two lines.
    let long: String = (1..=60).map(|n| format!("Step {n}.\n\n")).collect();
    chat.llm.push(Script::Reply(format!("A plan:\n\n{long}Done.")));
    browser.find("#message").await.send_keys(Key::Enter).await.unwrap();
    browser.wait_for_text("#conversation", "Step 60.").await;
    browser.wait_for_text("#conversation .message.person", "to Rome").await;
    assert_eq!(last_user_text(&chat.llm.requests()[0]), "plan a trip\nto Rome");
    browser.wait_for_text(".chat-list", "plan a trip").await;

    // Opened again, the chat shows its newest message, the form in sight.
    browser.goto(&format!("{}/chat", chat.base)).await;
    browser.wait_for_text("#conversation", "Done.").await;
    assert_eq!(path(&browser).await, first, "the chat used last opens");
    let (top, height, shown) = browser
        .wait_until("the chat to open at its newest message", || async {
            let (top, height, shown) = scrolled(&browser).await;
            (top > 0.0 && top + shown >= height - 2.0).then_some((top, height, shown))
        })
        .await;
    assert!(
        height > shown * 1.5,
        "the chat is longer than the window: {height} {shown}"
    );
    assert!(top > 0.0);
    let form_in_sight = run(
        &browser,
        "var r = document.getElementById('send').getBoundingClientRect(); return r.bottom <= window.innerHeight + 1 && r.top >= 0;",
    )
    .await;
    assert_eq!(form_in_sight, Value::Bool(true), "the form stays in sight");
    browser.screenshot("web-chat-1280x800").await;
    // Scrolled up to read: the form is still in sight, and "Newest" goes
    // back down.
    run(&browser, "window.scrollTo(0, 0); return null;").await;
    browser
        .wait_until("the way back to the newest", || async {
            browser.find("#jump").await.is_displayed().await.ok()?.then_some(())
        })
        .await;
    let form_in_sight = run(
        &browser,
        "var r = document.getElementById('send').getBoundingClientRect(); return r.bottom <= window.innerHeight + 1 && r.top >= 0;",
    )
    .await;
    assert_eq!(form_in_sight, Value::Bool(true), "the form stays in sight, scrolled up");
    browser.screenshot("web-chat-1280x800-scrolled-up").await;
    browser.click("#jump").await;
    browser
        .wait_until("the chat back at its newest message", || async {
            let (top, height, shown) = scrolled(&browser).await;
            (top + shown >= height - 2.0).then_some(())
        })
        .await;

    // At 390 px: nothing scrolls sideways, and the form is still in sight.
    window(&browser, 390, 844).await;
    browser.goto(&format!("{}{first}", chat.base)).await;
    browser.wait_for_text("#conversation", "Done.").await;
    // Nothing of the chat reaches past the window's right edge (the list
    // of chats scrolls sideways within itself).
    let wide = run(
        &browser,
        "var w = document.documentElement.clientWidth, wide = [];
         document.querySelectorAll('main, main *').forEach(function (e) {
           if (e.closest('.chat-list li')) return;
           var r = e.getBoundingClientRect();
           if (r.right > w + 1) wide.push(e.tagName + '.' + e.className + '#' + e.id + ' ' + Math.round(r.right));
         });
         return wide;",
    )
    .await;
    assert_eq!(wide, Value::Array(Vec::new()), "wider than the window at 390 px");
    let form_in_sight = run(
        &browser,
        "var r = document.getElementById('send').getBoundingClientRect(); return r.bottom <= window.innerHeight + 1;",
    )
    .await;
    assert_eq!(form_in_sight, Value::Bool(true), "the form stays in sight on a phone");
    browser.screenshot("web-chat-390x844").await;
    run(&browser, "window.scrollTo(0, 0); return null;").await;
    browser.screenshot("web-chat-390x844-top").await;
    window(&browser, 1280, 800).await;

    // New chat: a fresh conversation; the model sees nothing of the first.
    browser.click("#new-chat").await;
    browser.wait_for_text("#conversation", "Nothing said yet").await;
    let second = path(&browser).await;
    assert_ne!(second, first);
    browser.type_into("#message", "hello again").await;
    browser.find("#message").await.send_keys(Key::Enter).await.unwrap();
    browser.wait_for_text("#conversation", "echo: hello again").await;
    let asked = chat.llm.requests().last().unwrap().clone();
    assert_eq!(texts_of(&asked, "user"), ["hello again"]);
    assert!(
        !asked.to_string().contains("Rome"),
        "nothing of the other chat: {asked}"
    );
    // Listed newest first.
    let listed = browser.wait_for_text(".chat-list ul", "hello again").await;
    assert!(
        listed.find("hello again").unwrap() < listed.find("plan a trip").unwrap(),
        "{listed}"
    );

    // Renamed.
    browser.click(".chat-rename summary").await;
    let name = browser.find("#chat-new-name").await;
    name.clear().await.unwrap();
    name.send_keys("Greetings <b>").await.unwrap();
    browser.click(".chat-rename button[type=submit]").await;
    browser.wait_for_text("#chat-name", "Greetings <b>").await;
    browser.wait_for_text(".chat-list", "Greetings <b>").await;
    assert_eq!(path(&browser).await, second);

    // Deleted, after the question; its history goes with it.
    browser.click(".chat-delete-link").await;
    browser.wait_for_text("h1", "Delete this chat?").await;
    browser.wait_for_text("main", "Greetings <b>").await;
    browser.screenshot("web-chat-delete").await;
    browser.click("#delete-confirmed").await;
    browser.wait_for_text("#conversation", "Done.").await;
    assert_eq!(path(&browser).await, first, "back in the chat left");
    let listed = browser.text(".chat-list ul").await;
    assert!(!listed.contains("Greetings"), "{listed}");
    browser
        .goto(&format!("{}{}", chat.base, conversation_page(&second)))
        .await;
    browser.wait_for_text("main", "No turn is kept.").await;
    browser.goto(&format!("{}{second}", chat.base)).await;
    browser.wait_for_text("h1", "No such chat").await;
}

#[tokio::test]
async fn the_conversation_page_renders_markdown_and_shows_a_new_turn_by_itself() {
    let Some(browser) = Browser::start("web_chat_browser::conversation").await else {
        return;
    };
    let chat = start().await;
    let mut socket = chat.daemon.client("live").await;
    chat.llm
        .push(Script::Reply("Use **bold** and `code`:\n\n```sh\nls -la\n```".into()));
    ask(&mut socket, "how?").await;
    browser.goto(&link(&chat.daemon).await).await;
    browser.wait_for_text("h1", "Overview").await;
    browser
        .goto(&format!("{}/conversations/c29ja2V0OmxpdmU", chat.base))
        .await;
    // Read through waits, which look again: the page's stream may replace
    // what one look found.
    let strong = browser
        .wait_for_text("main .message.assistant .markdown strong", "bold")
        .await;
    assert_eq!(strong, "bold");
    let code = browser
        .wait_for_text("main .message.assistant .markdown pre code", "ls")
        .await;
    assert_eq!(code, "ls -la");
    browser.wait_for(".live.on").await;
    // A new turn, kept while the page is open, shows by itself.
    chat.llm.push(Script::Reply("A *new* turn.".into()));
    ask(&mut socket, "and then?").await;
    let em = browser
        .wait_for_text("main .message.assistant .markdown em", "new")
        .await;
    assert_eq!(em, "new");
    browser.wait_for_text("main", "and then?").await;
    browser.screenshot("web-conversation-live").await;
}
