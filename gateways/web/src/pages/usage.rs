//! The Usage page (`GET /usage`): tokens in and out over the last 30 UTC
//! days — per day, per provider and per conversation — as charts drawn on
//! the server ([`super::chart`]), with the consensus voters' share, and
//! the providers' and conversations' figures as tables too (readable on a
//! phone, where a chart's labels are small); where the configuration
//! gives prices, the estimated cost beside the tokens.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::get;
use passepartout_admin::DashboardRequest;
use serde_json::Value;

use super::chart::{self, Bar, grouped};
use super::layout::{Viewer, page};
use super::parts::{ask, items, table};
use crate::escape::Escaped;
use crate::session::SignedIn;
use crate::state::AppState;

/// The days the page covers, today included.
pub const DAYS: u32 = 30;

/// Most conversations charted: the ones that used the most.
const CONVERSATIONS_CHARTED: usize = 15;

/// `GET /usage`.
pub async fn usage(State(state): State<Arc<AppState>>, signed_in: SignedIn) -> Response {
    let usage = match ask(&state.admin, DashboardRequest::Usage { days: DAYS }).await {
        Ok(document) => document,
        Err(response) => return *response,
    };
    page(
        StatusCode::OK,
        "Usage",
        "/usage",
        Some(Viewer { csrf: &signed_in.csrf }),
        &body(&usage),
    )
}

/// The page's body from the usage document.
pub fn body(usage: &Value) -> String {
    let total = bar("total", &usage["total"]);
    let priced = usage["priced"].as_bool().unwrap_or(false);
    let mut out = format!(
        r#"<p class="meta">{} to {} (UTC days). {}</p>"#,
        Escaped(usage["first"].as_str().unwrap_or("")),
        Escaped(usage["last"].as_str().unwrap_or("")),
        if priced {
            "Costs are estimated from the prices in <code>[[llm.providers]]</code>."
        } else {
            "No provider has a price, so no cost is shown: <code>price_in_per_mtok</code> and \
             <code>price_out_per_mtok</code> in <code>[[llm.providers]]</code> set one."
        }
    );
    let _ = write!(
        out,
        "<p>In all: <strong>{}</strong> tokens in, <strong>{}</strong> out.",
        grouped(total.tokens_in),
        grouped(total.tokens_out)
    );
    if priced {
        let _ = write!(out, " About <strong>{}</strong>.", money(&usage["total"]));
    }
    let votes = total.votes_in + total.votes_out;
    if votes > 0 {
        let all = (total.tokens_in + total.tokens_out).max(1);
        let _ = write!(
            out,
            " The consensus gate's voters used {} of them ({}%).",
            grouped(votes),
            votes * 100 / all
        );
    }
    out += "</p>";
    out += &chart::legend();
    let days: Vec<Bar> = items(&usage["days"])
        .map(|day| {
            // `MM-DD`: the year is in the line above the charts.
            let date = day["day"].as_str().unwrap_or("");
            bar(date.get(5..).unwrap_or(date), &day["tokens"])
        })
        .collect();
    let _ = write!(
        out,
        "<section><h2>Per day</h2>{}</section>",
        chart::columns("Tokens per day", &days, "No tokens were used on these days.")
    );
    let providers: Vec<Bar> = items(&usage["providers"])
        .map(|p| bar(p["provider"].as_str().unwrap_or("?"), p))
        .collect();
    let _ = write!(
        out,
        "<section><h2>Per provider</h2>{}{}</section>",
        chart::rows("Tokens per provider", &providers, "No provider was used on these days."),
        figures(
            "Provider",
            items(&usage["providers"]).map(|p| (text(&p["provider"]), p)),
            priced
        )
    );
    let conversations: Vec<Bar> = items(&usage["conversations"])
        .take(CONVERSATIONS_CHARTED)
        .map(|c| {
            let name = format!(
                "{}:{}",
                c["gateway"].as_str().unwrap_or("?"),
                c["chat"].as_str().unwrap_or("?")
            );
            bar(&name, c)
        })
        .collect();
    let more = items(&usage["conversations"])
        .count()
        .saturating_sub(CONVERSATIONS_CHARTED);
    let _ = write!(
        out,
        "<section><h2>Per conversation</h2>{}{}</section>",
        chart::rows(
            "Tokens per conversation",
            &conversations,
            "No conversation used any tokens on these days."
        ),
        match more {
            0 => String::new(),
            more => format!(r#"<p class="meta">And {more} more that used fewer.</p>"#),
        }
    );
    out += &figures(
        "Conversation",
        items(&usage["conversations"])
            .take(CONVERSATIONS_CHARTED)
            .map(|c| (format!("{}:{}", text(&c["gateway"]), text(&c["chat"])), c)),
        priced,
    );
    out
}

/// A chart's figures as a table, one row per `(name, sums)` (names
/// escaped already): the tokens, and their cost beside them when
/// `priced`; nothing when there are no rows.
fn figures<'a>(what: &str, rows: impl Iterator<Item = (String, &'a Value)>, priced: bool) -> String {
    let rows: Vec<Vec<String>> = rows
        .map(|(name, sums)| {
            let n = |field: &str| grouped(sums[field].as_u64().unwrap_or(0));
            let mut row = vec![name, n("tokens_in"), n("tokens_out")];
            if priced {
                row.push(money(sums));
            }
            row
        })
        .collect();
    if rows.is_empty() {
        return String::new();
    }
    let head: &[&str] = if priced {
        &[what, "Tokens in", "Tokens out", "Cost"]
    } else {
        &[what, "Tokens in", "Tokens out"]
    };
    table(head, rows, "")
}

/// A sum's `cost_usd` as a person reads it: cents above a dollar, more
/// digits below one; "free" for nothing.
fn money(sums: &Value) -> String {
    match sums["cost_usd"].as_f64().unwrap_or(0.0) {
        cost if cost <= 0.0 => "free".to_owned(),
        cost if cost >= 1.0 => format!("${cost:.2}"),
        cost => format!("${cost:.4}"),
    }
}

/// A value as escaped text.
fn text(value: &Value) -> String {
    super::parts::text(value)
}

/// A bar labelled `label` from a document's `tokens_in`, `tokens_out`,
/// `votes_in`, `votes_out`.
fn bar(label: &str, tokens: &Value) -> Bar {
    let n = |field: &str| tokens[field].as_u64().unwrap_or(0);
    Bar {
        label: label.to_owned(),
        tokens_in: n("tokens_in"),
        tokens_out: n("tokens_out"),
        votes_in: n("votes_in"),
        votes_out: n("votes_out"),
    }
}

/// The Usage page.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/usage", get(usage))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn totals_votes_and_every_chart_are_shown() {
        let usage = json!({
            "first": "2026-03-01", "last": "2026-03-02",
            "days": [
                {"day": "2026-03-01", "tokens": {"tokens_in": 0, "tokens_out": 0, "votes_in": 0, "votes_out": 0}},
                {"day": "2026-03-02", "tokens": {"tokens_in": 1500, "tokens_out": 500, "votes_in": 500, "votes_out": 0}},
            ],
            "providers": [{"provider": "fake", "tokens_in": 1500, "tokens_out": 500, "votes_in": 500, "votes_out": 0}],
            "conversations": [{"gateway": "socket", "chat": "<me>", "tokens_in": 1500, "tokens_out": 500, "votes_in": 500, "votes_out": 0}],
            "total": {"tokens_in": 1500, "tokens_out": 500, "votes_in": 500, "votes_out": 0},
        });
        let html = body(&usage);
        assert!(html.contains("2026-03-01 to 2026-03-02"), "{html}");
        assert!(html.contains("<strong>1\u{202f}500</strong> tokens in"), "{html}");
        assert!(html.contains("voters used 500 of them (25%)"), "{html}");
        assert_eq!(html.matches(r#"<svg class="chart" viewBox"#).count(), 3, "{html}");
        assert!(html.contains("socket:&lt;me&gt;") && !html.contains("<me>"), "{html}");
        assert!(html.contains(">03-02</text>"), "{html}");
    }

    #[test]
    fn with_prices_the_cost_stands_beside_the_tokens() {
        let usage = json!({
            "first": "2026-03-01", "last": "2026-03-02", "priced": true,
            "days": [{"day": "2026-03-02", "tokens": {"tokens_in": 1500, "tokens_out": 500, "cost_usd": 0.012}}],
            "providers": [
                {"provider": "paid", "tokens_in": 1_000_000, "tokens_out": 100_000, "cost_usd": 4.5},
                {"provider": "local", "tokens_in": 10, "tokens_out": 5, "cost_usd": 0.0},
            ],
            "conversations": [{"gateway": "socket", "chat": "<me>", "tokens_in": 1500, "tokens_out": 500, "cost_usd": 0.012}],
            "total": {"tokens_in": 1_000_010, "tokens_out": 100_005, "cost_usd": 4.5},
        });
        let html = body(&usage);
        assert!(html.contains("About <strong>$4.50</strong>."), "{html}");
        for row in [
            r#"<td data-label="Provider">paid</td><td data-label="Tokens in">1"#,
            r#"<td data-label="Cost">$4.50</td>"#,
            r#"<td data-label="Provider">local</td>"#,
            r#"<td data-label="Cost">free</td>"#,
            r#"<td data-label="Conversation">socket:&lt;me&gt;</td>"#,
            r#"<td data-label="Cost">$0.0120</td>"#,
        ] {
            assert!(html.contains(row), "{row} missing from {html}");
        }
        let free = body(
            &json!({"first": "a", "last": "b", "priced": false, "providers": usage["providers"], "total": usage["total"]}),
        );
        assert!(!free.contains("Cost") && !free.contains('$'), "{free}");
        assert!(
            free.contains(r#"<td data-label="Provider">paid</td>"#),
            "the tokens still: {free}"
        );
        assert!(free.contains("price_in_per_mtok"), "{free}");
    }

    #[test]
    fn a_month_without_use_says_so() {
        let html = body(
            &json!({"first": "2026-03-01", "last": "2026-03-30", "days": [], "providers": [], "conversations": [], "total": {}}),
        );
        assert!(html.contains("No tokens were used on these days."), "{html}");
        assert!(html.contains("No provider was used on these days."), "{html}");
        assert!(!html.contains("voters"), "{html}");
    }
}
