//! The Overview (`GET /`): what `passepartout status` says, as a page —
//! first a card for each kind of fact (gateways, models, tool servers,
//! loops, approvals, usage, the store), each saying at a glance whether
//! all is well and leading to its detail; then each gateway, model, tool
//! server and loop with its state and last error, each bridge's chats with
//! what waits to be relayed there, the sandbox of the tools' processes,
//! what waits for approval, today's usage, the store's health.
//! Read from the same status document and approvals listing the CLI asks
//! for; every value from them is escaped.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use passepartout_admin::{AdminReply, AdminRequest};

use serde_json::{Value, json};

use super::errors;
use super::layout::{Viewer, page};
use super::parts::{bytes, labelled_rows};
use crate::escape::Escaped;
use crate::session::SignedIn;
use crate::state::AppState;

/// The page's body from the status document and the pending approvals'
/// listing (`{"approvals": […]}`, or `{"error": …}`).
pub fn body(status: &Value, approvals: &Value) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<p class="meta">Version {} · up {} · <span id="live" class="live">updates when something changes</span></p>"#,
        text(&status["version"]),
        human_s(status["uptime_s"].as_u64().unwrap_or(0))
    );
    out += &cards(status);
    out += &table(
        "gateways",
        "Gateways",
        &["Gateway", "State", "Detail"],
        items(&status["gateways"])
            .map(|g| vec![text(&g["name"]), state(&g["state"]), text(&g["detail"])])
            .collect(),
    );
    out += &table(
        "models",
        "Models",
        &["Provider", "Endpoint", "State", "Calls", "Failed", "Last error"],
        items(&status["providers"])
            .map(|p| {
                vec![
                    text(&p["name"]),
                    text(&p["endpoint"]),
                    state(&p["state"]),
                    text(&p["calls"]),
                    text(&p["failures"]),
                    text(&p["last_error"]),
                ]
            })
            .collect(),
    );
    out += &table(
        "mcp",
        "Tool servers (MCP)",
        &["Server", "State", "Tools", "Last error"],
        items(&status["mcp"])
            .map(|s| {
                vec![
                    text(&s["name"]),
                    state(&s["state"]),
                    text(&s["tools"]),
                    text(&s["last_error"]),
                ]
            })
            .collect(),
    );
    let bridges: Vec<Vec<String>> = items(&status["bridges"])
        .flat_map(|bridge| {
            items(&bridge["chats"]).map(move |chat| {
                vec![
                    text(&bridge["name"]),
                    text(&chat["chat"]),
                    text(&chat["waiting"]),
                    text(&chat["last_error"]),
                ]
            })
        })
        .collect();
    if !bridges.is_empty() {
        out += &table(
            "bridges",
            "Bridges",
            &["Bridge", "Chat", "Waiting", "Last error"],
            bridges,
        );
    }
    out += &sandbox(&status["sandbox"]);
    out += &loops(&status["loops"]);
    out += &waiting(&status["approvals"], approvals);
    out += &usage(&status["usage"]);
    out += &store(&status["store"]);
    out
}

/// How a card's fact reads: all well, something to look at, or failing.
#[derive(Clone, Copy)]
enum Health {
    Good,
    Waiting,
    Bad,
}

impl Health {
    fn class(self) -> &'static str {
        match self {
            Health::Good => "good",
            Health::Waiting => "waiting",
            Health::Bad => "bad",
        }
    }
}

/// One card: what it is about, the fact in a few words, a line under it;
/// the whole card leads to `href`.
fn card(href: &str, label: &str, fact: &str, note: &str, health: Health) -> String {
    format!(
        r#"<li><a class="card {}" href="{href}"><span class="card-label">{label}</span><span class="card-fact">{fact}</span><span class="card-note">{note}</span></a></li>"#,
        health.class()
    )
}

/// How many of `list` are in a state of the `ok` class, of how many (those
/// switched off not counted); the health of the lot (none failing is good,
/// some is waiting, all is bad).
fn tally(list: &Value) -> (usize, usize, Health) {
    let on = || items(list).filter(|item| item["state"] != "disabled");
    let total = on().count();
    let ok = on()
        .filter(|item| state_class(item["state"].as_str().unwrap_or("unknown")) == "ok")
        .count();
    let health = match (ok, total) {
        (ok, total) if ok == total => Health::Good,
        (0, _) => Health::Bad,
        _ => Health::Waiting,
    };
    (ok, total, health)
}

/// The names in `list`, joined, for a card's note.
fn names(list: &Value) -> String {
    let names: Vec<String> = items(list).map(|item| text(&item["name"])).collect();
    names.join(", ")
}

/// The cards: each fact of the page at a glance.
fn cards(status: &Value) -> String {
    let mut out = String::from(r#"<ul class="cards" aria-label="At a glance">"#);
    let (up, all, health) = tally(&status["gateways"]);
    out += &card(
        "#gateways",
        "Gateways",
        &format!("{up} of {all} up"),
        &names(&status["gateways"]),
        health,
    );
    let (up, all, health) = tally(&status["providers"]);
    out += &card(
        "#models",
        "Models",
        &format!("{up} of {all} ready"),
        &names(&status["providers"]),
        health,
    );
    out += &tool_servers_card(&status["mcp"]);
    out += &loops_card(&status["loops"]);
    out += &approvals_card(status["approvals"]["pending"].as_u64().unwrap_or(0));
    out += &usage_card(&status["usage"]);
    out += &store_card(&status["store"]);
    out + "</ul>"
}

/// The tool servers' card: how many of those switched on run.
fn tool_servers_card(mcp: &Value) -> String {
    let (up, all, health) = tally(mcp);
    let off = items(mcp).count() - all;
    match (all, off) {
        (0, 0) => card("#mcp", "Tool servers", "None", "none configured", Health::Good),
        (0, off) => card(
            "#mcp",
            "Tool servers",
            "None on",
            &format!("{off} switched off"),
            Health::Good,
        ),
        _ => card(
            "#mcp",
            "Tool servers",
            &format!("{up} of {all} running"),
            &names(mcp),
            health,
        ),
    }
}

/// The loops' card: how many run, and those failing or the heartbeats.
fn loops_card(loops: &Value) -> String {
    let failing = items(&loops["failing"]).count();
    card(
        "#loops",
        "Loops",
        &format!("{} of {} running", text(&loops["running"]), text(&loops["total"])),
        &match failing {
            0 => match loops["heartbeats"].as_u64() {
                Some(1) => "1 heartbeat".to_owned(),
                Some(n) => format!("{n} heartbeats"),
                None => String::new(),
            },
            n => format!("{n} failing"),
        },
        if failing > 0 { Health::Bad } else { Health::Good },
    )
}

/// The approvals' card: how many of them wait.
fn approvals_card(pending: u64) -> String {
    card(
        "/approvals",
        "Approvals",
        &format!("{pending} waiting"),
        if pending > 0 {
            "answer on the Approvals page"
        } else {
            "nothing to answer"
        },
        if pending > 0 { Health::Waiting } else { Health::Good },
    )
}

/// Today's usage card: the tokens, and about what they cost when known.
fn usage_card(usage: &Value) -> String {
    if usage.is_null() {
        return card(
            "/usage",
            "Usage today",
            "Not known",
            "the store could not be read",
            Health::Bad,
        );
    }
    let today = &usage["today"];
    let tokens = today["tokens_in"].as_u64().unwrap_or(0) + today["tokens_out"].as_u64().unwrap_or(0);
    let cost = today["cost_usd"].as_f64().filter(|c| *c > 0.0);
    card(
        "/usage",
        "Usage today",
        &format!("{} tokens", super::chart::grouped(tokens)),
        &cost.map_or_else(
            || "in and out, all models".to_owned(),
            |c| match c {
                c if c >= 1.0 => format!("about ${c:.2}"),
                c => format!("about ${c:.4}"),
            },
        ),
        Health::Good,
    )
}

/// The store's card: healthy and its size on disk, or failed.
fn store_card(store: &Value) -> String {
    match store["error"].as_str() {
        Some(_) => card("#store", "Store", "Failed", "see below", Health::Bad),
        None => card(
            "#store",
            "Store",
            "Healthy",
            &store["size_bytes"]
                .as_u64()
                .map(|size| format!("{} on disk", bytes(size)))
                .unwrap_or_default(),
            Health::Good,
        ),
    }
}

/// What the tools' processes run confined by (the kernel's Landlock ABI and
/// what is enforced), as a sentence; nothing from a daemon that does not say.
fn sandbox(sandbox: &Value) -> String {
    let Some(detail) = sandbox["detail"].as_str() else {
        return String::new();
    };
    let mut chars = detail.chars();
    let sentence: String = chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default();
    format!(
        r#"<section id="sandbox"><h2>Sandbox</h2><p>{}.</p></section>"#,
        Escaped(&sentence)
    )
}

fn loops(loops: &Value) -> String {
    let mut out = format!(
        r#"<section id="loops"><h2>Loops</h2><p>{} running of {}, {} heartbeats. <a href="/loops">Loops &amp; tools</a> runs, stops and starts them.</p>"#,
        text(&loops["running"]),
        text(&loops["total"]),
        text(&loops["heartbeats"])
    );
    let failing: Vec<_> = items(&loops["failing"])
        .map(|l| vec![text(&l["name"]), text(&l["consecutive_errors"]), text(&l["error"])])
        .collect();
    if !failing.is_empty() {
        out += &rows(&["Failing loop", "Errors in a row", "Last error"], failing);
    }
    out + "</section>"
}

fn waiting(counts: &Value, listing: &Value) -> String {
    let mut out = format!(
        "<section id=\"approvals\"><h2>Waiting for approval</h2><p>{} pending. Answer them on the <a href=\"/approvals\">Approvals</a> page, in the chat that asked, or with <code>passepartout approvals</code>.</p>",
        text(&counts["pending"])
    );
    if let Some(error) = listing["error"].as_str() {
        let _ = write!(
            out,
            r#"<p class="error">The approvals cannot be read: {}</p>"#,
            Escaped(error)
        );
    }
    let pending: Vec<_> = items(&listing["approvals"])
        .map(|a| {
            vec![
                format!("<code>{}</code>", text(&a["token"])),
                text(&a["action"]),
                text(&a["conversation"]),
                format!("{} left", human_s(a["expires_in_s"].as_u64().unwrap_or(0))),
            ]
        })
        .collect();
    if !pending.is_empty() {
        out += &rows(&["Token", "Action", "Asked in", "Expires"], pending);
    }
    out + "</section>"
}

fn usage(usage: &Value) -> String {
    if usage.is_null() {
        return "<section><h2>Usage today</h2><p>Not known: the store could not be read.</p></section>".into();
    }
    let sum = |s: &Value| {
        let cost = s["cost_usd"].as_f64().filter(|c| *c > 0.0);
        format!(
            "{} tokens in, {} out{}",
            text(&s["tokens_in"]),
            text(&s["tokens_out"]),
            cost.map(|c| format!(", about ${c:.4}")).unwrap_or_default()
        )
    };
    format!(
        r#"<section id="usage"><h2>Usage</h2><p>Today (UTC): {}.</p><p>This month: {}. <a href="/usage">Usage</a> has the last 30 days.</p></section>"#,
        sum(&usage["today"]),
        sum(&usage["month"])
    )
}

fn store(store: &Value) -> String {
    let health = match store["error"].as_str() {
        Some(error) => format!(
            r#"<p class="error">FAILED: {}. Nothing more is acknowledged until there is space again and the daemon restarts.</p>"#,
            Escaped(error)
        ),
        None => r#"<p class="ok">Healthy.</p>"#.into(),
    };
    format!(
        r#"<section id="store"><h2>Store</h2>{health}<p>{} on disk, {} messages waiting, {} replies not yet delivered.</p></section>"#,
        store["size_bytes"]
            .as_u64()
            .map_or_else(|| "An unknown size".to_owned(), bytes),
        text(&store["pending"]),
        text(&store["outbox"])
    )
}

/// A section (`id`) with a heading and a table, or a line saying there is
/// none.
fn table(id: &str, title: &str, head: &[&str], body: Vec<Vec<String>>) -> String {
    if body.is_empty() {
        return format!(r#"<section id="{id}"><h2>{title}</h2><p>None.</p></section>"#);
    }
    format!(r#"<section id="{id}"><h2>{title}</h2>{}</section>"#, rows(head, body))
}

/// A table of cells already escaped.
fn rows(head: &[&str], body: Vec<Vec<String>>) -> String {
    let mut out = String::from("<table><thead><tr>");
    for cell in head {
        let _ = write!(out, "<th>{cell}</th>");
    }
    out += "</tr></thead><tbody>";
    out += &labelled_rows(head, &body);
    out + "</tbody></table>"
}

fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list.as_array().into_iter().flatten()
}

/// A value as escaped text: a string as it is, a number or boolean written
/// out, nothing for a missing one.
fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => Escaped(s).to_string(),
        other => Escaped(&other.to_string()).to_string(),
    }
}

/// The class a state is coloured by.
fn state_class(state: &str) -> &'static str {
    match state {
        "up" | "ok" | "running" | "ready" => "ok",
        "starting" | "degraded" | "cooling_down" | "connecting" => "warn",
        _ => "error",
    }
}

/// A state, with a class a stylesheet colours by.
fn state(value: &Value) -> String {
    let state = value.as_str().unwrap_or("unknown");
    format!(
        r#"<span class="state {}">{}</span>"#,
        state_class(state),
        Escaped(state)
    )
}

/// `s` seconds as a person reads them.
fn human_s(s: u64) -> String {
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// The overview.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/", get(overview))
}

/// `GET /`.
async fn overview(State(state): State<Arc<AppState>>, signed_in: SignedIn) -> Response {
    let status = match state.admin.ask(AdminRequest::Status).await {
        Ok(AdminReply::Status(status)) => status,
        _ => return errors::unavailable("the daemon is shutting down"),
    };
    let approvals: Value = match state.admin.ask(AdminRequest::Approvals { all: false }).await {
        Ok(AdminReply::Approvals(Ok(listing))) => listing,
        Ok(AdminReply::Approvals(Err(unreadable))) => json!({ "error": unreadable.message }),
        _ => json!({ "error": "no answer" }),
    };
    let body = body(&status, &approvals);
    page(
        StatusCode::OK,
        "Overview",
        "/",
        Some(Viewer { csrf: &signed_in.csrf }),
        &body,
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_fact_is_shown_and_every_value_escaped() {
        let status = json!({
            "version": "0.1.0",
            "uptime_s": 3700,
            "gateways": [{"name": "telegram", "state": "degraded", "detail": "<b>timeout</b>"}],
            "providers": [{"name": "fake", "endpoint": "http://x", "state": "ok", "calls": 3, "failures": 1, "last_error": "a & b"}],
            "mcp": [{"name": "files", "state": "running", "tools": 2, "last_error": null}],
            "sandbox": {"detail": "shell commands and MCP servers confined by Landlock ABI 7: files beyond the workspace and the system refused, network open"},
            "approvals": {"pending": 1},
            "loops": {"running": 1, "total": 2, "heartbeats": 7, "failing": [{"name": "digest", "error": "no <feed>", "consecutive_errors": 2}]},
            "usage": {"today": {"tokens_in": 10, "tokens_out": 5, "cost_usd": 0.0}, "month": {"tokens_in": 100, "tokens_out": 50, "cost_usd": 0.5}},
            "store": {"size_bytes": 1024, "pending": 0, "outbox": 0, "error": null},
            "bridges": [{"name": "family", "chats": [{"chat": "telegram:-100", "waiting": 3, "last_error": "rate <limited>"}]}],
        });
        let approvals = json!({"approvals": [{"token": "K7PX2Q", "action": "run `rm -rf \"<x>\"`", "conversation": "socket:me", "expires_in_s": 90}]});
        let html = body(&status, &approvals);
        for fact in [
            "telegram",
            "&lt;b&gt;timeout&lt;/b&gt;",
            "a &amp; b",
            "files",
            "Sandbox</h2><p>Shell commands and MCP servers confined by Landlock ABI 7: files beyond the workspace and the system refused, network open.</p>",
            "1 running of 2, 7 heartbeats",
            "no &lt;feed&gt;",
            "1 pending",
            "K7PX2Q",
            "run `rm -rf &quot;&lt;x&gt;&quot;`",
            "Today (UTC): 10 tokens in, 5 out.",
            "about $0.5000",
            "Healthy.",
            "up 1 h 1 min",
            r#"<td data-label="Bridge">family</td><td data-label="Chat">telegram:-100</td><td data-label="Waiting">3</td><td data-label="Last error">rate &lt;limited&gt;</td>"#,
            "1.0 KB on disk",
            r#"<span class="card-label">Gateways</span><span class="card-fact">0 of 1 up</span>"#,
            r#"<span class="card-fact">1 waiting</span>"#,
            r#"<span class="card-fact">15 tokens</span>"#,
        ] {
            assert!(html.contains(fact), "{fact} missing from {html}");
        }
        assert!(!html.contains("<b>") && !html.contains("<feed>") && !html.contains("<x>"));
    }

    #[test]
    fn a_failed_store_and_unreadable_approvals_are_said() {
        let status = json!({"store": {"error": "disk full"}, "usage": null});
        let html = body(&status, &json!({"error": "cannot read"}));
        assert!(html.contains("FAILED: disk full"), "{html}");
        assert!(html.contains("The approvals cannot be read: cannot read"), "{html}");
        assert!(html.contains("Usage today</h2><p>Not known"), "{html}");
        assert!(html.contains(r#"<span class="card-fact">Failed</span>"#), "{html}");
    }
}
