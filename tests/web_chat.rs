//! The dashboard's Chat page end to end, over plain HTTP: a real daemon with
//! `[web]` on port 0, the fake model behind it, and reqwest signed in with a
//! link the socket hands out. A message posted with scripting off waits for
//! its reply and the page shows it rendered; the same form sent again and a
//! restart leave it entered once; a streamed reply comes as events; a
//! reply's markup shows as text; a file lands in `inbox/`, and one too large
//! is answered 413; a form from elsewhere is refused.

use reqwest::StatusCode;
use reqwest::header;
use reqwest::multipart::{Form, Part};

use crate::support;
use serde_json::json;
use support::fake_llm::{Script, Streamed, last_message, last_user_text};
use support::harness::WAIT;
use support::web::{field, no_redirects as http};
use support::web_chat::{Chat, conversation_page, opened, sign_in, start};

/// The chat page's largest file.
const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;

#[tokio::test]
async fn a_message_sent_without_scripting_is_answered_on_the_page_once_across_a_restart() {
    let mut chat = start().await;
    assert!(chat.page().await.contains("Nothing said yet"));
    chat.llm
        .push(Script::Reply("List it with `ls`:\n\n```\nls -la <dir>\n```".into()));
    let form = chat.form("How do I list a folder?").await;
    let sent = chat.post(&form, None, false).await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER, "back to the page once answered");
    assert_eq!(
        sent.headers()[header::LOCATION],
        format!("{}#newest", chat.path).as_str()
    );
    let page = chat.page().await;
    assert!(page.contains("How do I list a folder?"), "{page}");
    assert!(page.contains("<pre><code>ls -la &lt;dir&gt;</code></pre>"), "{page}");
    assert!(page.contains("<code>ls</code>"), "{page}");
    assert!(!page.contains("Nothing said yet"));
    assert!(
        page.contains(r#"<a href="/chat" aria-current="page">Chat</a>"#),
        "{page}"
    );

    // The same form again (a reload, a double click) enters nothing.
    let again = chat.post(&form, None, false).await;
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    assert_eq!(chat.llm.requests().len(), 1, "asked once");

    chat.daemon.restart(Vec::new()).await;
    let (base, cookie) = sign_in(&chat.daemon).await;
    assert_eq!(opened(&base, &cookie).await, chat.path, "the chat used last opens");
    chat.base = base;
    chat.cookie = cookie;
    let page = chat.page().await;
    assert_eq!(
        page.matches(r#"<div class="text">How do I list a folder?</div>"#)
            .count(),
        1,
        "{page}"
    );
    assert!(
        page.contains(r#"<h2 id="chat-name">How do I list a folder?</h2>"#),
        "named from it: {page}"
    );
    assert!(page.contains("<pre><code>ls -la &lt;dir&gt;</code></pre>"), "{page}");
    assert_eq!(chat.llm.requests().len(), 1, "not asked again after the restart");
    chat.daemon.stop().await;
}

#[tokio::test]
async fn a_streamed_reply_comes_as_events_and_its_markup_shows_as_text() {
    let mut chat = start().await;
    chat.llm.push(Script::Stream(Streamed::text(&[
        "Careful: <script>",
        "alert(1)</script> is how ",
        "it **starts**.",
    ])));
    let form = chat.form("show me a script").await;
    let mut response = chat.post(&form, None, true).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()[header::CONTENT_TYPE]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream")
    );
    let mut body = String::new();
    while let Some(chunk) = tokio::time::timeout(WAIT, response.chunk())
        .await
        .expect("the stream goes on")
        .unwrap()
    {
        body.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    let events: Vec<&str> = body.lines().filter_map(|line| line.strip_prefix("event: ")).collect();
    assert!(events.contains(&"draft"), "{body}");
    assert_eq!(events.last(), Some(&"end"), "{body}");
    assert!(
        body.contains(r#""text":"Careful: <script>alert(1)</script> is how it **starts**.""#),
        "{body}"
    );

    let page = chat.page().await;
    assert!(
        page.contains("Careful: &lt;script&gt;alert(1)&lt;/script&gt; is how it <strong>starts</strong>."),
        "{page}"
    );
    assert!(!page.contains("<script>alert"), "{page}");
    chat.daemon.stop().await;
}

#[tokio::test]
async fn a_file_lands_in_the_inbox_and_one_too_large_is_refused() {
    let mut chat = start().await;
    chat.llm
        .set_responder(|request| Script::Reply(format!("got: {}", last_user_text(request))));
    let form = chat.form("for later").await;
    let file = Part::bytes(b"eggs, milk".to_vec())
        .file_name("shopping.txt")
        .mime_str("text/plain")
        .unwrap();
    let sent = chat.post(&form, Some(file), false).await;
    assert_eq!(sent.status(), StatusCode::SEE_OTHER);
    let saved = chat.daemon.config.workspace().join("inbox/shopping.txt");
    assert_eq!(std::fs::read_to_string(&saved).unwrap(), "eggs, milk");
    let told = last_user_text(chat.llm.requests().last().unwrap());
    assert!(
        told.contains("inbox/shopping.txt") && told.contains("for later"),
        "{told}"
    );

    let form = chat.form("too big").await;
    let big = Part::bytes(vec![b'x'; MAX_FILE_BYTES + 1]).file_name("big.bin");
    let refused = chat.post(&form, Some(big), false).await;
    assert_eq!(refused.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let page = refused.text().await.unwrap();
    assert!(
        page.contains("The file is too large: the chat takes files up to 10 MB."),
        "{page}"
    );
    assert!(!chat.daemon.config.workspace().join("inbox/big.bin").exists());
    chat.daemon.stop().await;
}

#[tokio::test]
async fn a_chat_form_from_elsewhere_or_without_the_token_is_refused() {
    let mut chat = start().await;
    let (csrf, id, text) = chat.form("sneaky").await;
    let forged = chat
        .post(&("not-the-token".into(), id.clone(), text.clone()), None, false)
        .await;
    assert_eq!(forged.status(), StatusCode::FORBIDDEN);
    let page = forged.text().await.unwrap();
    assert!(page.contains("token is not this session"), "{page}");
    // Whole but for its origin: the session's own token and the page's id.
    let elsewhere = http()
        .post(format!("{}{}", chat.base, chat.path))
        .header(header::COOKIE, &chat.cookie)
        .header(header::ORIGIN, "https://evil.example")
        .multipart(Form::new().text("csrf", csrf).text("id", id).text("text", text))
        .send()
        .await
        .unwrap();
    assert_eq!(elsewhere.status(), StatusCode::FORBIDDEN);
    let page = elsewhere.text().await.unwrap();
    assert!(page.contains("This form came from another site"), "{page}");
    let empty = chat.form("   ").await;
    let nothing = chat.post(&empty, None, false).await;
    assert_eq!(nothing.status(), StatusCode::BAD_REQUEST);
    assert!(
        nothing
            .text()
            .await
            .unwrap()
            .contains("Write a message or choose a file")
    );
    assert!(chat.llm.requests().is_empty(), "nothing reached the model");
    chat.daemon.stop().await;
}

#[tokio::test]
async fn a_file_the_assistant_sends_is_offered_as_a_download() {
    let mut chat = start().await;
    chat.llm.set_responder(|request| {
        if last_message(request)["role"] == "tool" {
            return Script::Reply("Sent.".into());
        }
        Script::ToolCall {
            name: "send_file".into(),
            arguments: json!({ "path": "report.txt", "caption": "the <numbers>" }).to_string(),
        }
    });
    std::fs::write(chat.daemon.config.workspace().join("report.txt"), "1, 2, 3").unwrap();
    let form = chat.form("send me the report").await;
    assert_eq!(chat.post(&form, None, false).await.status(), StatusCode::SEE_OTHER);
    let page = chat.page().await;
    let marker = r#"<a href="/chat/files/"#;
    let at =
        page.find(marker).unwrap_or_else(|| panic!("no download link: {page}")) + marker.len() - "/chat/files/".len();
    let href = page[at..].split('"').next().unwrap().to_owned();
    assert!(
        page.contains(r#" download>report.txt</a> (7 bytes) — the &lt;numbers&gt;"#),
        "{page}"
    );

    let got = http()
        .get(format!("{}{href}", chat.base))
        .header(header::COOKIE, &chat.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(got.status(), StatusCode::OK);
    assert_eq!(
        got.headers()[header::CONTENT_DISPOSITION],
        r#"attachment; filename="report.txt""#
    );
    assert_eq!(got.headers()[header::CONTENT_TYPE], "application/octet-stream");
    assert_eq!(got.text().await.unwrap(), "1, 2, 3");
    let stranger = http().get(format!("{}{href}", chat.base)).send().await.unwrap();
    assert_ne!(stranger.status(), StatusCode::OK, "not without signing in");
    let unknown = http()
        .get(format!("{}/chat/files/nothing", chat.base))
        .header(header::COOKIE, &chat.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(unknown.status(), StatusCode::NOT_FOUND);
    chat.daemon.stop().await;
}

#[tokio::test]
async fn a_reply_stream_past_its_cap_is_refused_and_cuts_no_other_off() {
    // The dashboard streams this many replies at once.
    const MAX_REPLIES: usize = 8;
    let chat = start().await;
    // The first turn never ends, so every reply stream below stays open.
    chat.llm.push(Script::Hang);
    let mut replies = Vec::new();
    for n in 0..MAX_REPLIES {
        let form = chat.form(&format!("message {n}")).await;
        let reply = chat.post(&form, None, true).await;
        assert_eq!(reply.status(), StatusCode::OK, "reply {n}");
        replies.push(reply);
    }
    let form = chat.form("one too many").await;
    let refused = chat.post(&form, None, true).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    let page = refused.text().await.unwrap();
    assert!(page.contains("8 replies are being written"), "{page}");
    // Refused whole: the message did not go in.
    let shown = chat.page().await;
    assert!(!shown.contains("one too many"), "{shown}");
    // A page's stream still opens beside them: replies are counted apart.
    let events = http()
        .get(format!("{}/events", chat.base))
        .header(header::COOKIE, &chat.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(events.status(), StatusCode::OK);
    // A reply given up gives its place back.
    drop(replies.pop());
    let form = chat.form("now there is room").await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let again = chat.post(&form, None, true).await;
        if again.status() == StatusCode::OK {
            break;
        }
        assert_eq!(again.status(), StatusCode::TOO_MANY_REQUESTS);
        assert!(tokio::time::Instant::now() < deadline, "the place was never given back");
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn after_a_denial_and_an_upload_the_pages_show_what_happened_not_the_notes_to_the_model() {
    let mut chat = start().await;
    chat.llm.set_responder(|request| {
        let told = last_user_text(request);
        if told.starts_with("[passepartout] ") {
            return Script::Reply("I did not list the folder.".into());
        }
        if told.contains("list the folder") {
            return Script::ToolCall {
                name: "shell".into(),
                arguments: json!({ "command": "ls" }).to_string(),
            };
        }
        Script::Reply("Kept it.".into())
    });

    // A call waits for approval; the owner denies it from the page.
    let form = chat.form("please list the folder").await;
    assert_eq!(chat.post(&form, None, false).await.status(), StatusCode::SEE_OTHER);
    let page = chat.page().await;
    let token = field(&page, "token");
    // What is said next is followed before the answer, so the reply is not missed.
    let mut said = http()
        .get(format!("{}{}/stream", chat.base, chat.path))
        .header(header::COOKIE, &chat.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(said.status(), StatusCode::OK);
    let decided = http()
        .post(format!("{}/approvals/decide", chat.base))
        .header(header::COOKIE, &chat.cookie)
        .header(header::ORIGIN, &chat.base)
        .form(&[
            ("csrf", field(&page, "csrf").as_str()),
            ("token", token.as_str()),
            ("choice", "deny"),
            ("back", "chat"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), StatusCode::SEE_OTHER);
    let mut events = String::new();
    while !events.contains("event: end") {
        let chunk = tokio::time::timeout(WAIT, said.chunk())
            .await
            .expect("the turn ends in time")
            .unwrap()
            .expect("the stream goes on");
        events.push_str(std::str::from_utf8(&chunk).unwrap());
    }
    assert!(events.contains("I did not list the folder."), "{events}");
    let told = last_user_text(chat.llm.requests().last().unwrap());
    assert!(
        told.starts_with(&format!("[passepartout] `shell: ls` ({token}) was denied from the web")),
        "the model is told who, named as everywhere else: {told}"
    );

    // A file, with a word about it.
    let form = chat.form("for later").await;
    let file = Part::bytes(b"eggs".to_vec())
        .file_name("notes.txt")
        .mime_str("text/plain")
        .unwrap();
    assert_eq!(
        chat.post(&form, Some(file), false).await.status(),
        StatusCode::SEE_OTHER
    );
    assert!(last_user_text(chat.llm.requests().last().unwrap()).contains("inbox/notes.txt"));

    let page = chat.page().await;
    assert!(
        page.contains(r#"<span class="who">passepartout</span><div class="said"><div class="text markdown">Denied from the web: <code>shell: ls</code>"#),
        "{page}"
    );
    assert!(
        page.contains(r#"<div class="text">for later</div><p class="meta sent">You sent notes.txt</p>"#),
        "{page}"
    );
    assert!(
        page.contains("I did not list the folder.") && page.contains("Kept it."),
        "{page}"
    );
    for meant_for_the_model in [
        "Tell the person",
        "The person sent a file",
        "socket:web",
        "[passepartout]",
    ] {
        assert!(
            !page.contains(meant_for_the_model),
            "{meant_for_the_model} shows in the chat: {page}"
        );
    }

    // The Conversations page shows the same, the notes folded as what the
    // assistant was told, never in the person's words.
    let response = http()
        .get(format!("{}{}", chat.base, conversation_page(&chat.path)))
        .header(header::COOKIE, &chat.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let history = response.text().await.unwrap();
    assert!(
        history.contains(r#"<div class="text markdown">Denied from the web: <code>shell: ls</code></div><details class="note"><summary>What the assistant was told</summary>"#),
        "{history}"
    );
    assert!(
        history.contains(r#"<span class="who">Person</span><div class="said"><div class="text">for later</div><p class="meta sent">Sent notes.txt</p>"#),
        "{history}"
    );
    assert!(
        history.contains(
            r#"<span class="who">Person</span><div class="said"><div class="text">please list the folder</div>"#
        ),
        "{history}"
    );
    for in_the_persons_words in [
        r#"<div class="text">[The person sent"#,
        r#"<div class="text">[passepartout]"#,
    ] {
        assert!(!history.contains(in_the_persons_words), "{history}");
    }
    assert!(!history.contains("socket:web"), "{history}");
    chat.daemon.stop().await;
}

/// Posts the urlencoded `form` to `path` from `origin`.
async fn form_post(chat: &Chat, path: &str, origin: &str, form: &[(&str, &str)]) -> reqwest::Response {
    http()
        .post(format!("{}{path}", chat.base))
        .header(header::COOKIE, &chat.cookie)
        .header(header::ORIGIN, origin)
        .form(form)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn the_chat_forms_are_checked_and_a_chat_that_is_not_one_is_not_found() {
    let chat = start().await;
    let page = chat.page().await;
    let csrf = field(&page, "csrf");
    let base = chat.base.clone();
    let rename = format!("{}/rename", chat.path);
    let delete = format!("{}/delete", chat.path);

    // From another site, or without the session's token: refused, nothing done.
    for path in ["/chat/new", rename.as_str(), delete.as_str()] {
        let elsewhere = form_post(&chat, path, "https://evil.example", &[("csrf", &csrf), ("name", "x")]).await;
        assert_eq!(elsewhere.status(), StatusCode::FORBIDDEN, "{path}");
        assert!(
            elsewhere
                .text()
                .await
                .unwrap()
                .contains("This form came from another site")
        );
        let forged = form_post(&chat, path, &base, &[("csrf", "not-the-token"), ("name", "x")]).await;
        assert_eq!(forged.status(), StatusCode::FORBIDDEN, "{path}");
        assert!(forged.text().await.unwrap().contains("token is not this session"));
    }
    assert!(chat.page().await.contains("New chat"), "still unnamed");

    // A name too long, or of more than one line, is refused; a good one kept.
    let long = "x".repeat(81);
    for bad in [long.as_str(), "two\nlines", "   "] {
        let refused = form_post(&chat, &rename, &base, &[("csrf", &csrf), ("name", bad)]).await;
        assert_eq!(refused.status(), StatusCode::BAD_REQUEST, "{bad:?}");
    }
    let said = form_post(
        &chat,
        &rename,
        &base,
        &[("csrf", &csrf), ("name", "x".repeat(80).as_str())],
    )
    .await;
    assert_eq!(said.status(), StatusCode::SEE_OTHER);
    assert_eq!(said.headers()[header::LOCATION], chat.path.as_str());
    assert!(
        chat.page()
            .await
            .contains(&format!(r#"<h2 id="chat-name">{}</h2>"#, "x".repeat(80)))
    );

    // An id that is no chat of the owner's: a clear 404 everywhere.
    for id in ["0123456789abcdef", "..%2F..%2Fetc", "ZZZZ", "owner"] {
        let path = format!("/chat/{id}");
        let got = http()
            .get(format!("{base}{path}"))
            .header(header::COOKIE, &chat.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(got.status(), StatusCode::NOT_FOUND, "{path}");
        assert!(got.text().await.unwrap().contains("There is no chat at this address"));
        for posted in [format!("{path}/rename"), format!("{path}/delete")] {
            let answer = form_post(&chat, &posted, &base, &[("csrf", &csrf), ("name", "y")]).await;
            assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{posted}");
        }
        let stream = http()
            .get(format!("{base}{path}/stream"))
            .header(header::COOKIE, &chat.cookie)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), StatusCode::NOT_FOUND, "{path}/stream");
    }
    let (_, id, _) = chat.form("into nowhere").await;
    let nowhere = http()
        .post(format!("{base}/chat/0123456789abcdef"))
        .header(header::COOKIE, &chat.cookie)
        .header(header::ORIGIN, &base)
        .multipart(
            Form::new()
                .text("csrf", csrf.clone())
                .text("id", id)
                .text("text", "into nowhere"),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(nowhere.status(), StatusCode::NOT_FOUND);
    assert!(chat.llm.requests().is_empty(), "nothing reached the model");

    // New chat: a fresh one, reused until something is said in it.
    let made = form_post(&chat, "/chat/new", &base, &[("csrf", &csrf)]).await;
    assert_eq!(made.status(), StatusCode::SEE_OTHER);
    let fresh = made.headers()[header::LOCATION].to_str().unwrap().to_owned();
    assert_eq!(fresh, chat.path, "the chat nothing was said in is the fresh one");

    // Deleting asks first, then the chat is gone.
    let asked = http()
        .get(format!("{base}{delete}"))
        .header(header::COOKIE, &chat.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status(), StatusCode::OK);
    let question = asked.text().await.unwrap();
    assert!(
        question.contains("Delete the chat") && question.contains(&format!(r#"action="{delete}""#)),
        "{question}"
    );
    let deleted = form_post(&chat, &delete, &base, &[("csrf", &csrf)]).await;
    assert_eq!(deleted.status(), StatusCode::SEE_OTHER);
    assert_eq!(deleted.headers()[header::LOCATION], "/chat");
    let gone = http()
        .get(format!("{base}{}", chat.path))
        .header(header::COOKIE, &chat.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
    assert_ne!(opened(&base, &chat.cookie).await, chat.path, "a fresh chat opens");
}
