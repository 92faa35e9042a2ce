//! The Chat page (`GET /chat/{id}`): the owner's chats, newest first, with
//! "New chat"; then the open chat as the core keeps it — what they said,
//! the assistant's replies rendered from their Markdown
//! ([`crate::markdown`]), an approval that waits with its buttons and what
//! "Always allow" would let run — its name (renamed in place) and a link to
//! delete it; and last the form that sends a message or a file, kept in
//! sight at the bottom of the window. It reads as it is with scripting off;
//! `assets/chat.js` sends without leaving the page, shows the reply as it
//! is written, follows it down, and gives code blocks a copy button.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};

use super::approvals::pending_one;
use super::noted::{Noted, listed, noted};
use super::parts::{conversation_path, items, when};
use crate::chat_list::{MAX_NAME_CHARS, shown_name};
use crate::chats::WebChat;
use crate::downloads::Download;
use crate::escape::Escaped;
use crate::markdown;

/// The largest file the form takes, in bytes.
pub const MAX_FILE_BYTES: usize = 10 * 1024 * 1024;

/// What the page shows: the open chat among all of them, its history,
/// what waits for approval in it, the files the assistant sent there.
pub struct Shown<'a> {
    /// The open chat.
    pub chat: &'a WebChat,
    /// Every chat of the owner's.
    pub chats: &'a [WebChat],
    /// The open chat's history, as the core keeps it.
    pub history: &'a Value,
    /// What waits for approval in it.
    pub waiting: &'a [&'a Value],
    /// The files the assistant sent there.
    pub files: &'a [Arc<Download>],
}

/// The page's body. `nonce` names the next message, so that sending the
/// same form twice sends it once.
pub fn body(shown: &Shown<'_>, csrf: &str, nonce: &str) -> String {
    let chat = shown.chat;
    let key = crate::chat::conversation(&chat.id);
    let id = Escaped(&chat.id);
    let csrf = Escaped(csrf);
    let mut out = String::from(r#"<div class="chat-page">"#);
    out += &list(shown.chats, &chat.id, &csrf.to_string());
    let _ = write!(
        out,
        r#"<section id="chat" data-csrf="{csrf}" data-chat="{id}"><div class="chat-head"><h2 id="chat-name">{name}</h2>
<details class="chat-rename"><summary>Rename</summary><form method="post" action="/chat/{id}/rename"><input type="hidden" name="csrf" value="{csrf}"><label for="chat-new-name">Name</label> <input id="chat-new-name" name="name" value="{name}" maxlength="{MAX_NAME_CHARS}" required> <button type="submit">Save</button></form></details>
<a class="chat-delete-link" href="/chat/{id}/delete">Delete…</a></div>
<p class="meta">Kept like any conversation: <a href="{path}">{key}</a> under Conversations, with its tool calls.</p>"#,
        name = Escaped(shown_name(chat)),
        path = conversation_path(&json!({"gateway": "web", "chat": key.chat.as_str()})),
        key = Escaped(&key.to_string()),
    );
    out += &conversation(shown.history, shown.waiting, shown.files, &csrf.to_string());
    let _ = write!(
        out,
        r#"<span id="newest"></span><form id="send" class="send" method="post" action="/chat/{id}" enctype="multipart/form-data">
<input type="hidden" name="csrf" value="{csrf}"><input type="hidden" name="id" value="{nonce}">
<button type="button" id="jump" class="chat-jump" hidden>↓ Newest</button>
<label for="message" class="hidden">Your message</label>
<textarea id="message" name="text" rows="2" placeholder="Ask the assistant something…" aria-describedby="send-help"></textarea>
<div class="actions"><button type="submit" id="send-button">Send</button> <button type="button" id="stop" class="deny" hidden>Stop</button> <label for="file" class="chat-attach">Attach a file</label> <input id="file" name="file" type="file"> <span id="chat-state" class="meta" role="status"></span></div>
<p id="send-help" class="meta chat-help">Files up to {mb} MB are saved in the workspace's <code>inbox/</code>.<span class="chat-keys"> Enter sends; Shift+Enter starts a new line.</span></p>
</form>
<noscript><p class="meta">Without scripting, sending waits until the reply is written (or an approval is asked), then shows this page again.</p></noscript>"#,
        nonce = Escaped(nonce),
        mb = MAX_FILE_BYTES / (1024 * 1024),
    );
    out + "</section></div>"
}

/// The owner's chats, newest first, the open one marked, and "New chat".
fn list(chats: &[WebChat], open: &str, csrf: &str) -> String {
    let mut out = format!(
        r#"<aside class="chat-list" aria-label="Your chats"><form method="post" action="/chat/new"><input type="hidden" name="csrf" value="{csrf}"><button type="submit" id="new-chat">New chat</button></form><ul>"#
    );
    for chat in chats {
        let here = if chat.id == open { r#" aria-current="page""# } else { "" };
        let _ = write!(
            out,
            r#"<li><a href="/chat/{}"{here}>{}</a></li>"#,
            Escaped(&chat.id),
            Escaped(shown_name(chat))
        );
    }
    out + "</ul></aside>"
}

/// The history and what waits: the part `chat.js` takes fresh from the
/// server once a reply is done.
fn conversation(history: &Value, waiting: &[&Value], files: &[Arc<Download>], csrf: &str) -> String {
    let mut out = String::from(r#"<div id="conversation" aria-live="polite">"#);
    let turns: Vec<&Value> = items(&history["turns"]).collect();
    if turns.is_empty() && waiting.is_empty() {
        out += r#"<p class="meta" id="empty">Nothing said yet: write below, and the assistant answers here.</p>"#;
    }
    for turn in turns {
        let _ = write!(
            out,
            r#"<article class="turn"><p class="meta">{}</p>"#,
            when(turn["at_ms"].as_u64())
        );
        for message in items(&turn["messages"]) {
            out += &message_html(message);
        }
        out += "</article>";
    }
    if !files.is_empty() {
        out += r#"<div class="files"><p class="meta">Files the assistant sent (kept here until the daemon restarts; the newest last):</p><ul>"#;
        for file in files {
            let _ = write!(
                out,
                r#"<li><a href="/chat/files/{}" download>{}</a> ({}){}</li>"#,
                Escaped(&file.key),
                Escaped(&file.name),
                size(file.bytes.len()),
                file.caption
                    .as_deref()
                    .map(|c| format!(" — {}", Escaped(c)))
                    .unwrap_or_default()
            );
        }
        out += "</ul></div>";
    }
    for approval in waiting {
        out += r#"<div class="chat-approval"><p class="meta">The assistant waits for your answer:</p>"#;
        out += &pending_one(approval, csrf, Some("chat"));
        out += "</div>";
    }
    out + "</div>"
}

/// A file's size as a person reads it.
fn size(bytes: usize) -> String {
    super::parts::bytes(bytes as u64)
}

/// One message: the owner's words as text, with what they sent; the
/// daemon's notes to the model as a short event of its own (or nothing);
/// the assistant's rendered from Markdown; tool calls and their results
/// are left to the Conversations page.
fn message_html(message: &Value) -> String {
    let content = message["content"].as_str().filter(|c| !c.trim().is_empty());
    match message["role"].as_str() {
        Some("user") => match noted(message) {
            Noted::Said(said) if !said.trim().is_empty() => person(Some(said), &[]),
            Noted::Said(_) | Noted::Hidden => String::new(),
            Noted::Sent { said, sent } => person(said, &sent),
            Noted::Event(text) => format!(
                r#"<div class="message notice"><span class="who">passepartout</span><div class="said"><div class="text markdown">{}</div></div></div>"#,
                markdown::to_html(text)
            ),
        },
        Some("assistant") => match content {
            Some(content) => format!(
                r#"<div class="message assistant"><span class="who">Assistant</span><div class="said"><div class="text markdown">{}</div></div></div>"#,
                markdown::to_html(content)
            ),
            None => String::new(),
        },
        _ => String::new(),
    }
}

/// The owner's message: what they said, and what they sent.
fn person(said: Option<&str>, sent: &[&str]) -> String {
    let mut out = String::from(r#"<div class="message person"><span class="who">You</span><div class="said">"#);
    if let Some(said) = said {
        let _ = write!(out, r#"<div class="text">{}</div>"#, Escaped(said));
    }
    if !sent.is_empty() {
        let _ = write!(out, r#"<p class="meta sent">You sent {}</p>"#, Escaped(&listed(sent)));
    }
    out + "</div></div>"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chat(id: &str, name: &str) -> WebChat {
        WebChat {
            id: id.into(),
            name: name.into(),
            created_ms: 0,
            last_ms: 0,
        }
    }

    fn page(history: &Value, waiting: &[&Value], files: &[Arc<Download>]) -> String {
        let open = chat("0123456789abcdef", "");
        let chats = [chat("fedcba9876543210", "Trip <Rome>"), open.clone()];
        let shown = Shown {
            chat: &open,
            chats: &chats,
            history,
            waiting,
            files,
        };
        body(&shown, "tok", "n1")
    }

    #[test]
    fn the_chats_are_listed_the_open_one_marked_and_its_forms_go_to_it() {
        let html = page(&json!({"turns": []}), &[], &[]);
        assert!(
            html.contains(r#"<li><a href="/chat/fedcba9876543210">Trip &lt;Rome&gt;</a></li><li><a href="/chat/0123456789abcdef" aria-current="page">New chat</a></li>"#),
            "{html}"
        );
        assert!(html.contains(r#"action="/chat/new""#), "{html}");
        assert!(
            html.contains(r#"<form id="send" class="send" method="post" action="/chat/0123456789abcdef""#),
            "{html}"
        );
        assert!(html.contains(r#"action="/chat/0123456789abcdef/rename""#), "{html}");
        assert!(html.contains(r#"href="/chat/0123456789abcdef/delete""#), "{html}");
        assert!(html.contains(r#"data-chat="0123456789abcdef""#), "{html}");
    }

    #[test]
    fn the_history_shows_both_sides_and_renders_only_the_assistants_markdown() {
        let history = json!({"turns": [{"at_ms": 0, "messages": [
            {"role": "user", "content": "show **me** <b>"},
            {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "time", "arguments": "{}"}]},
            {"role": "tool", "content": "12:00", "tool_call_id": "c1"},
            {"role": "assistant", "content": "Here:\n\n```\nls <dir>\n```"},
            {"role": "user", "content": "[passepartout] web approved `ls`"},
            {"role": "user", "content": "[passepartout] socket:web denied `shell: ls` (AB12). Tell the person", "note": {"kind": "event", "text": "Denied from the web: `shell: ls`"}},
            {"role": "user", "content": "[The person sent a file, saved in the workspace as inbox/notes.txt]\n\nfor <later>", "note": {"kind": "sent", "said": "for <later>", "sent": ["notes.txt"]}},
            {"role": "user", "content": "[passepartout] your JSON was malformed", "note": {"kind": "hidden"}},
        ]}]});
        let html = page(&history, &[], &[]);
        assert!(html.contains("show **me** &lt;b&gt;"), "{html}");
        assert!(html.contains("<pre><code>ls &lt;dir&gt;</code></pre>"), "{html}");
        assert!(!html.contains("12:00"), "tool results stay on the Conversations page");
        assert!(
            html.contains(
                r#"<span class="who">passepartout</span><div class="said"><div class="text markdown">web approved <code>ls</code>"#
            ),
            "the daemon's note is not the owner's: {html}"
        );
        assert!(
            html.contains(r#"<div class="text markdown">Denied from the web: <code>shell: ls</code>"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<div class="text">for &lt;later&gt;</div><p class="meta sent">You sent notes.txt</p>"#),
            "{html}"
        );
        for meant_for_the_model in ["Tell the person", "The person sent a file", "socket:web", "malformed"] {
            assert!(!html.contains(meant_for_the_model), "{meant_for_the_model}: {html}");
        }
        assert!(html.contains(r#"name="id" value="n1""#) && html.contains(r#"name="csrf" value="tok""#));
        assert!(html.contains(r#"enctype="multipart/form-data""#));
    }

    #[test]
    fn an_empty_conversation_says_so_and_a_waiting_approval_has_its_buttons() {
        let empty = page(&json!({"turns": []}), &[], &[]);
        assert!(empty.contains("Nothing said yet"), "{empty}");
        let approval = json!({"token": "ab12", "tool": "shell", "arguments": {"command": "ls"}, "status": "pending"});
        let html = page(&json!({"turns": []}), &[&approval], &[]);
        assert!(html.contains(r#"name="back" value="chat""#), "{html}");
        assert!(html.contains("Approve") && html.contains("Deny"), "{html}");
        assert!(!html.contains("Nothing said yet"));
    }

    #[test]
    fn a_file_the_assistant_sent_is_a_download_link_with_its_name_escaped() {
        let file = Arc::new(Download {
            key: "MS0w".into(),
            chat: "owner/0123456789abcdef".into(),
            name: "<b>report</b>.pdf".into(),
            caption: Some("the \"numbers\"".into()),
            bytes: vec![0; 2048],
        });
        let html = page(&json!({"turns": []}), &[], &[file]);
        assert!(
            html.contains(r#"<a href="/chat/files/MS0w" download>&lt;b&gt;report&lt;/b&gt;.pdf</a> (2.0 KB) — the &quot;numbers&quot;"#),
            "{html}"
        );
    }
}
