//! The Conversations pages: every conversation on every gateway with its
//! last activity, newest first, and a search over all their history
//! (`GET /conversations?q=…`, ranked as the `search_history` tool ranks);
//! one conversation's history (`GET /conversations/{key}`) with its
//! running summary, each tool call folded with its result, the assistant's
//! Markdown rendered as the chat renders it; with scripting on it follows
//! the conversation, a new turn shown as it is kept (`live.js`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use passepartout_admin::DashboardRequest;
use serde::Deserialize;
use serde_json::Value;

use super::errors;
use super::layout::{Viewer, page};
use super::noted::{Noted, listed, noted};
use super::parts::{ask, conversation_name, conversation_of, conversation_path, items, table, text, when};
use crate::escape::Escaped;
use crate::session::SignedIn;
use crate::state::AppState;

/// The longest search taken, in characters.
const MAX_QUERY_CHARS: usize = 200;

/// The search box's field.
#[derive(Debug, Default, Deserialize)]
pub struct Search {
    #[serde(default)]
    q: String,
}

/// `GET /conversations`, with a search when `q` is given.
pub async fn listing(
    State(state): State<Arc<AppState>>,
    signed_in: SignedIn,
    search: Result<Form<Search>, FormRejection>,
) -> Response {
    let Form(search) = match search {
        Ok(search) => search,
        Err(rejection) => return crate::posted::bad_form(rejection),
    };
    let query: String = search.q.trim().chars().take(MAX_QUERY_CHARS).collect();
    let conversations = match ask(&state.admin, DashboardRequest::Conversations).await {
        Ok(document) => document,
        Err(response) => return *response,
    };
    let results = match query.is_empty() {
        true => None,
        false => match ask(&state.admin, DashboardRequest::Search { query: query.clone() }).await {
            Ok(document) => Some(document),
            Err(response) => return *response,
        },
    };
    page(
        StatusCode::OK,
        "Conversations",
        "/conversations",
        Some(Viewer { csrf: &signed_in.csrf }),
        &listing_body(&conversations, &query, results.as_ref()),
    )
}

/// `GET /conversations/{key}`.
pub async fn conversation(
    State(state): State<Arc<AppState>>,
    signed_in: SignedIn,
    Path(key): Path<String>,
) -> Response {
    let Some(conversation) = conversation_of(&key) else {
        return errors::not_found_for(Some(Viewer { csrf: &signed_in.csrf }));
    };
    let name = conversation.to_string();
    // Taken before the history, so a turn kept in between is news.
    let seen = crate::events::seen_with(&state.admin, Some(&conversation)).await;
    let history = match ask(&state.admin, DashboardRequest::History { conversation }).await {
        Ok(document) => document,
        Err(response) => return *response,
    };
    page(
        StatusCode::OK,
        &format!("Conversation {name}"),
        "/conversations",
        Some(Viewer { csrf: &signed_in.csrf }),
        &format!(
            r#"<p class="meta"><span id="live" class="live" data-seen="{}" data-conversation="{}">Shows each new turn by itself.</span></p>{}"#,
            Escaped(seen.as_deref().unwrap_or_default()),
            Escaped(&key),
            history_body(&history)
        ),
    )
}

/// The search box, the results of `query` (if one was asked), and every
/// conversation.
pub fn listing_body(conversations: &Value, query: &str, results: Option<&Value>) -> String {
    let mut out = format!(
        r#"<form class="search" method="get" action="/conversations" role="search"><label for="q">Search all history</label> <input id="q" name="q" type="search" value="{}" maxlength="{MAX_QUERY_CHARS}"> <button type="submit">Search</button></form>"#,
        Escaped(query)
    );
    if let Some(results) = results {
        let found: Vec<Vec<String>> = items(&results["results"])
            .map(|result| {
                vec![
                    format!(
                        r#"<a href="{}">{}</a>"#,
                        conversation_path(result),
                        conversation_name(result)
                    ),
                    when(result["at_ms"].as_u64()),
                    format!(r#"<span class="said">{}</span>"#, text(&result["text"])),
                ]
            })
            .collect();
        let _ = write!(
            out,
            "<section><h2>Found for “{}”</h2>{}</section>",
            Escaped(query),
            table(
                &["Conversation", "When", "What was said"],
                found,
                "Nothing in the history matches."
            )
        );
    }
    let listed: Vec<Vec<String>> = items(&conversations["conversations"])
        .map(|c| {
            vec![
                format!(r#"<a href="{}">{}</a>"#, conversation_path(c), conversation_name(c)),
                text(&c["gateway"]),
                text(&c["turns"]),
                when(c["last_ms"].as_u64()),
            ]
        })
        .collect();
    let _ = write!(
        out,
        "<section><h2>Every conversation</h2>{}</section>",
        table(
            &["Conversation", "Gateway", "Turns kept", "Last activity"],
            listed,
            "No conversation has any history yet."
        )
    );
    out
}

/// A conversation's summary, then its turns oldest first.
pub fn history_body(history: &Value) -> String {
    let mut out = String::from(r#"<p><a href="/conversations">← All conversations</a></p>"#);
    out += "<section><h2>Summary</h2>";
    match history["summary"].as_str() {
        Some(summary) => {
            let _ = write!(
                out,
                r#"<p class="meta">What the assistant made of the turns that no longer fit its context:</p><div class="text">{}</div>"#,
                Escaped(summary)
            );
        }
        None => out += r#"<p class="meta">None: nothing has been folded into a summary.</p>"#,
    }
    out += "</section><section><h2>History</h2>";
    let turns: Vec<&Value> = items(&history["turns"]).collect();
    if turns.is_empty() {
        out += "<p>No turn is kept.</p>";
    }
    for turn in turns {
        let _ = write!(
            out,
            r#"<article class="turn"><p class="meta">{}</p>{}</article>"#,
            when(turn["at_ms"].as_u64()),
            messages(&turn["messages"])
        );
    }
    out + "</section>"
}

/// A turn's messages: what the person and the assistant said, and each
/// tool call folded with the result that answers it. The daemon's notes to
/// the model show as what they say people see (an event, what the person
/// sent), the note itself folded beneath.
fn messages(messages: &Value) -> String {
    let results: HashMap<&str, &Value> = items(messages)
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| Some((m["tool_call_id"].as_str()?, m)))
        .collect();
    let mut out = String::new();
    for message in items(messages) {
        if message["role"] == "user" && !matches!(noted(message), Noted::Said(_)) {
            out += &note(message);
            continue;
        }
        let who = match message["role"].as_str() {
            Some("user") => "Person",
            Some("assistant") => "Assistant",
            Some("system") => "System",
            // Shown with the call it answers.
            Some("tool")
                if message["tool_call_id"]
                    .as_str()
                    .is_some_and(|id| results.contains_key(id)) =>
            {
                continue;
            }
            Some("tool") => "Tool result",
            _ => "Other",
        };
        let content = message["content"].as_str().filter(|c| !c.is_empty());
        let calls: Vec<&Value> = items(&message["tool_calls"]).collect();
        if content.is_none() && calls.is_empty() {
            continue;
        }
        // One row a message: who, what they said, the calls they made.
        let _ = write!(
            out,
            r#"<div class="message {}"><span class="who">{who}</span><div class="said">"#,
            who.to_ascii_lowercase().replace(' ', "-")
        );
        match content {
            // Rendered as the chat renders it.
            Some(content) if who == "Assistant" => {
                let _ = write!(
                    out,
                    r#"<div class="text markdown">{}</div>"#,
                    crate::markdown::to_html(content)
                );
            }
            Some(content) => {
                let _ = write!(out, r#"<div class="text">{}</div>"#, Escaped(content));
            }
            None => {}
        }
        for call in calls {
            let result = call["id"]
                .as_str()
                .and_then(|id| results.get(id))
                .and_then(|m| m["content"].as_str());
            let _ = write!(
                out,
                r#"<details class="tool"><summary>Tool call: <code>{}</code></summary><p class="meta">Arguments</p><pre>{}</pre><p class="meta">Result</p><pre>{}</pre></details>"#,
                text(&call["name"]),
                text(&call["arguments"]),
                Escaped(result.unwrap_or("(no result kept)"))
            );
        }
        out += "</div></div>";
    }
    out
}

/// A message the daemon wrote for the model: the person's words and what
/// they sent, or the event, with what the model was told folded beneath;
/// nothing for a note meant for the model alone.
fn note(message: &Value) -> String {
    let (class, who, shown) = match noted(message) {
        Noted::Said(_) | Noted::Hidden => return String::new(),
        Noted::Sent { said, sent } => {
            let mut shown = said
                .map(|said| format!(r#"<div class="text">{}</div>"#, Escaped(said)))
                .unwrap_or_default();
            if !sent.is_empty() {
                let _ = write!(shown, r#"<p class="meta sent">Sent {}</p>"#, Escaped(&listed(&sent)));
            }
            ("person", "Person", shown)
        }
        Noted::Event(text) => (
            "notice",
            "passepartout",
            format!(r#"<div class="text markdown">{}</div>"#, crate::markdown::to_html(text)),
        ),
    };
    let told = message["content"].as_str().unwrap_or_default();
    format!(
        r#"<div class="message {class}"><span class="who">{who}</span><div class="said">{shown}<details class="note"><summary>What the assistant was told</summary><pre>{}</pre></details></div></div>"#,
        Escaped(told)
    )
}

/// The Conversations page and one conversation's.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/conversations", get(listing))
        .route("/conversations/{key}", get(conversation))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_listing_links_each_conversation_and_search_results_to_theirs() {
        let conversations = json!({"conversations": [
            {"gateway": "socket", "chat": "me", "turns": 2, "last_ms": 0},
            {"gateway": "telegram", "chat": "<42>", "turns": 1, "last_ms": null},
        ]});
        let results = json!({"results": [{"gateway": "socket", "chat": "me", "at_ms": 0, "text": "the <blue> door"}]});
        let html = listing_body(&conversations, "blue \"door\"", Some(&results));
        assert!(html.contains(r#"value="blue &quot;door&quot;""#), "{html}");
        assert!(
            html.contains(r#"<a href="/conversations/c29ja2V0Om1l">socket:me</a>"#),
            "{html}"
        );
        assert!(
            html.contains("telegram:&lt;42&gt;") && html.contains("undated"),
            "{html}"
        );
        assert!(html.contains("the &lt;blue&gt; door"), "{html}");
        assert!(!html.contains("<blue>") && !html.contains("<42>"));
    }

    #[test]
    fn nothing_yet_is_said_in_words() {
        let html = listing_body(&json!({"conversations": []}), "zebra", Some(&json!({"results": []})));
        assert!(html.contains("Nothing in the history matches."), "{html}");
        assert!(html.contains("No conversation has any history yet."), "{html}");
    }

    #[test]
    fn a_tool_call_is_folded_with_its_result_and_the_summary_shown() {
        let history = json!({
            "summary": "They talked about <doors>.",
            "turns": [{"at_ms": 0, "messages": [
                {"role": "user", "content": "What time is it?"},
                {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "time", "arguments": "{\"tz\":\"<UTC>\"}"}]},
                {"role": "tool", "content": "12:00 & later", "tool_call_id": "c1"},
                {"role": "assistant", "content": "Noon."},
            ]}],
        });
        let html = history_body(&history);
        assert!(html.contains("They talked about &lt;doors&gt;."), "{html}");
        assert!(
            html.contains(r#"<details class="tool"><summary>Tool call: <code>time</code></summary>"#),
            "{html}"
        );
        assert!(html.contains("{&quot;tz&quot;:&quot;&lt;UTC&gt;&quot;}"), "{html}");
        assert!(html.contains("<pre>12:00 &amp; later</pre></details>"), "{html}");
        assert_eq!(html.matches("12:00").count(), 1, "the result only inside its call");
        assert!(html.contains("What time is it?") && html.contains("Noon."));
    }

    #[test]
    fn the_daemons_notes_show_as_events_and_what_was_sent_never_as_the_persons_words() {
        let history = json!({
            "summary": null,
            "turns": [{"at_ms": 0, "messages": [
                {"role": "user", "content": "[The person sent a file, saved as inbox/notes.txt]", "note": {"kind": "sent", "sent": ["notes.txt"]}},
                {"role": "user", "content": "[passepartout] `shell: ls` was denied from the web. Tell the person", "note": {"kind": "event", "text": "Denied from the web: `shell: ls`"}},
                {"role": "user", "content": "[passepartout] malformed", "note": {"kind": "hidden"}},
            ]}],
        });
        let html = history_body(&history);
        assert!(
            html.contains(r#"<span class="who">Person</span><div class="said"><p class="meta sent">Sent notes.txt</p><details class="note"><summary>What the assistant was told</summary><pre>[The person sent a file"#),
            "{html}"
        );
        assert!(
            html.contains(r#"<span class="who">passepartout</span><div class="said"><div class="text markdown">Denied from the web: <code>shell: ls</code>"#),
            "{html}"
        );
        assert!(!html.contains("malformed"), "{html}");
        assert!(!html.contains(r#"<div class="text">[The person"#), "{html}");
    }

    #[test]
    fn the_assistants_markdown_is_rendered_as_the_chat_renders_it_and_nothing_else_is() {
        let history = json!({"summary": null, "turns": [{"at_ms": 0, "messages": [
            {"role": "user", "content": "show **me** <b>"},
            {"role": "assistant", "content": "Run `ls`:\n\n```sh\nls <dir>\n```"},
        ]}]});
        let html = history_body(&history);
        assert!(
            html.contains(r#"<div class="text">show **me** &lt;b&gt;</div>"#),
            "{html}"
        );
        assert!(
            html.contains(&format!(
                r#"<div class="text markdown">{}</div>"#,
                crate::markdown::to_html("Run `ls`:\n\n```sh\nls <dir>\n```")
            )),
            "{html}"
        );
        assert!(
            html.contains(r#"<pre><code class="language-sh">ls &lt;dir&gt;</code></pre>"#),
            "{html}"
        );
    }

    #[test]
    fn no_summary_and_no_turns_are_said() {
        let html = history_body(&json!({"summary": null, "turns": []}));
        assert!(html.contains("None: nothing has been folded into a summary."), "{html}");
        assert!(html.contains("No turn is kept."), "{html}");
    }
}
