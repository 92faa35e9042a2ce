//! The Logs page (`GET /logs?level=&target=`): the daemon's recent log
//! lines, newest first, filtered by level (that level and the more severe)
//! and by target (the module that logged, by its start) with a plain GET
//! form, so it works without scripting. Live: `GET /logs/events` (the same
//! query, and `after`, the newest line the page showed) is a stream of
//! server-sent events, one `status` whenever lines it would show came, on
//! which the page's script fetches the page again, as on every live page.
//! The core redacts every configured secret from the lines; the page does
//! again with the secrets it knows.

use std::convert::Infallible;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use axum::Form;
use axum::Router;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::stream;
use passepartout_admin::{AdminAs, DashboardRequest};
use passepartout_gateway::Secrets;
use serde::Deserialize;
use serde_json::Value;

use super::layout::{Viewer, page};
use super::parts::{ask, items, when};
use crate::escape::Escaped;
use crate::session::SignedIn;
use crate::state::AppState;

/// Lines the page shows at most.
pub const SHOWN: u32 = 300;

/// How often a stream looks for new lines.
const EVERY: Duration = Duration::from_secs(1);

/// The levels offered, most severe first.
const LEVELS: &[&str] = &["error", "warn", "info", "debug", "trace"];

/// The page's query: the filters, and (for the stream) the newest line seen.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Filters {
    #[serde(default)]
    level: String,
    #[serde(default)]
    target: String,
    #[serde(default)]
    after: u64,
}

impl Filters {
    fn request(&self, after: u64, limit: u32) -> DashboardRequest {
        DashboardRequest::Logs {
            after,
            level: Some(self.level.clone()).filter(|l| !l.is_empty()),
            target: Some(self.target.clone()).filter(|t| !t.is_empty()),
            limit,
        }
    }

    /// The query naming these filters (and `after`).
    fn query(&self, after: u64) -> String {
        serde_urlencoded::to_string([
            ("after", after.to_string().as_str()),
            ("level", self.level.as_str()),
            ("target", self.target.as_str()),
        ])
        .unwrap_or_default()
    }
}

/// `GET /logs`.
pub async fn logs(
    State(state): State<Arc<AppState>>,
    signed_in: SignedIn,
    filters: Result<Form<Filters>, FormRejection>,
) -> Response {
    let filters = filters.map(|Form(f)| f).unwrap_or_default();
    if !filters.level.is_empty() && !LEVELS.iter().any(|level| filters.level.eq_ignore_ascii_case(level)) {
        return super::errors::bad_request(
            StatusCode::BAD_REQUEST,
            "That is not a level: error, warn, info, debug or trace.",
        );
    }
    let document = match ask(&state.admin, filters.request(0, SHOWN)).await {
        Ok(document) => document,
        Err(response) => return *response,
    };
    let secrets = state.secrets.now();
    page(
        StatusCode::OK,
        "Logs",
        "/logs",
        Some(Viewer { csrf: &signed_in.csrf }),
        &body(&document, &filters, &secrets),
    )
}

/// The page's body: the filters, the live marker, the lines.
pub fn body(document: &Value, filters: &Filters, secrets: &Secrets) -> String {
    let last = document["last"].as_u64().unwrap_or(0);
    let mut out = format!(
        r#"<p class="meta"><span id="live" class="live" data-stream="/logs/events?{}">New lines appear by themselves.</span></p>"#,
        Escaped(&filters.query(last))
    );
    out += r#"<form method="get" action="/logs" class="filters"><label>Level <select name="level">"#;
    let _ = write!(
        out,
        r#"<option value=""{}>every level</option>"#,
        if filters.level.is_empty() { " selected" } else { "" }
    );
    for level in LEVELS {
        let chosen = filters.level.eq_ignore_ascii_case(level);
        let _ = write!(
            out,
            r#"<option value="{level}"{}>{level} and worse</option>"#,
            if chosen { " selected" } else { "" }
        );
    }
    let _ = write!(
        out,
        r#"</select></label> <label>Target <input name="target" value="{}" placeholder="passepartout_telegram" size="24"></label> <button type="submit">Show</button></form>"#,
        Escaped(&filters.target)
    );
    if document["kept"] == false {
        out += r#"<p class="warn">This daemon keeps no log lines in memory (it was not started by <code>passepartout run</code>); its log is on its standard error.</p>"#;
        return out;
    }
    let lines: Vec<&Value> = items(&document["lines"]).collect();
    let _ = write!(
        out,
        r#"<p class="meta">The newest {SHOWN} lines that match at most, newest first; the daemon keeps its recent lines only, and none from before it started.</p>"#
    );
    if lines.is_empty() {
        return out + "<p>No line matches yet.</p>";
    }
    out += r#"<ol class="logs">"#;
    for line in lines.into_iter().rev() {
        let level = line["level"].as_str().unwrap_or_default();
        let at = line["at_ms"].as_u64();
        let _ = write!(
            out,
            r#"<li><time title="{}">{}</time> <span class="level {}">{}</span> <code class="target">{}</code> <span class="line">{}</span></li>"#,
            Escaped(&when(at)),
            Escaped(&clock(at.unwrap_or(0))),
            Escaped(&level.to_ascii_lowercase()),
            Escaped(level),
            Escaped(&secrets.redact(line["target"].as_str().unwrap_or_default())),
            Escaped(&secrets.redact(line["text"].as_str().unwrap_or_default())),
        );
    }
    out + "</ol>"
}

/// A moment's time of day, to the second (UTC): `14:05:09`.
fn clock(ms: u64) -> String {
    let of_day = ms % 86_400_000 / 1000;
    format!("{:02}:{:02}:{:02}", of_day / 3600, of_day / 60 % 60, of_day % 60)
}

/// `GET /logs/events`: a `status` event whenever lines the page would show
/// came after `after`.
pub async fn events(
    State(state): State<Arc<AppState>>,
    _signed_in: SignedIn,
    filters: Result<Form<Filters>, FormRejection>,
) -> Response {
    let filters = filters.map(|Form(f)| f).unwrap_or_default();
    let (closed, opened) = crate::events::open_other(&state);
    let start = (state.admin.clone(), filters, closed, opened);
    let stream = stream::unfold(start, |(admin, mut filters, closed, opened)| async move {
        loop {
            tokio::select! {
                () = closed.cancelled() => return None,
                () = tokio::time::sleep(EVERY) => {}
            }
            let last = newest(&admin, &filters).await?;
            if let Some(last) = last {
                filters.after = last;
                let event = Event::default().event("status").data("lines");
                return Some((Ok::<_, Infallible>(event), (admin, filters, closed, opened)));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

/// The newest line the filters let through after theirs, if any came;
/// none at all once the daemon no longer answers.
async fn newest(admin: &AdminAs, filters: &Filters) -> Option<Option<u64>> {
    let document = ask(admin, filters.request(filters.after, 1)).await.ok()?;
    Some(items(&document["lines"]).filter_map(|line| line["seq"].as_u64()).max())
}

/// The Logs page and its stream.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/logs", get(logs))
        .route("/logs/events", get(events))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lines_show_newest_first_escaped_and_redacted_with_the_filters_kept() {
        let document = json!({"kept": true, "last": 9, "lines": [
            {"seq": 8, "at_ms": 0, "level": "INFO", "target": "passepartout::daemon", "text": "ready <now>"},
            {"seq": 9, "at_ms": 0, "level": "WARN", "target": "passepartout_telegram", "text": "key sk-canary-1 refused"},
        ]});
        let filters = Filters {
            level: "warn".into(),
            target: "pass<".into(),
            after: 0,
        };
        let secrets = Secrets::new(["sk-canary-1".to_owned()]);
        let html = body(&document, &filters, &secrets);
        assert!(!html.contains("sk-canary-1"), "{html}");
        assert!(html.contains("key [redacted] refused"), "{html}");
        assert!(html.contains("ready &lt;now&gt;"), "{html}");
        assert!(
            html.find("refused").unwrap() < html.find("ready").unwrap(),
            "newest first: {html}"
        );
        assert!(html.contains(r#"<option value="warn" selected>"#), "{html}");
        assert!(
            html.contains(r#"<time title="1970-01-01 00:00 UTC">00:00:00</time>"#),
            "{html}"
        );
        assert_eq!(clock(3_723_000), "01:02:03");
        assert!(html.contains(r#"value="pass&lt;""#), "{html}");
        assert!(
            html.contains("data-stream=\"/logs/events?after=9&amp;level=warn&amp;target=pass%3C\""),
            "{html}"
        );
    }
}
