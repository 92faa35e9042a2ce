//! `GET /metrics`: what the daemon counts, in Prometheus' text format
//! (version 0.0.4), for a scraper. Read from the status document the core
//! already keeps (turns and how long they took, intake, queues, outbox,
//! store, providers and their failures by kind, tools, approvals pending and
//! decided, gateways and their restarts), plus the latency of the API's answers, which this
//! gateway times itself. It asks for an API key or a signed-in
//! browser, unless `[web] open_metrics` opens it: on this machine every
//! local user could read it otherwise.
//!
//! The format is a handful of lines per metric, written here rather than
//! through a metrics registry: every value is read fresh from the status
//! document on each scrape, so there is nothing to register or keep.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use passepartout_admin::{AdminReply, AdminRequest};
use serde_json::Value;

use crate::api::ApiError;
use crate::latency::Latency;
use crate::state::AppState;

/// Writes how long the API's answers took, as a histogram.
fn write_latency(latency: &Latency, out: &mut Text) {
    let (sum, count) = latency.sum_and_count();
    out.histogram(
        "passepartout_api_answer_seconds",
        "Time from an API message taken to the end of its turn.",
        latency.buckets(),
        sum,
        count,
    );
}

/// `GET /metrics`.
pub async fn metrics(
    State(state): State<Arc<AppState>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    if !state.metrics_open
        && !signed_in(&state, &headers)
        && let Err(refused) = crate::api::caller(&state, client.ip(), &headers)
    {
        return refused.into_response();
    }
    let Ok(AdminReply::Status(status)) = state.admin.ask(AdminRequest::Status).await else {
        return ApiError::status(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "The daemon is shutting down.",
        )
        .into_response();
    };
    let mut out = Text::default();
    from_status(&status, &mut out);
    write_latency(&state.latency, &mut out);
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        out.0,
    )
        .into_response()
}

/// Whether the request comes from a signed-in browser.
fn signed_in(state: &AppState, headers: &HeaderMap) -> bool {
    crate::session::session_id(headers).is_some_and(|session| state.sessions.check(session).unwrap_or(false))
}

/// The status document's numbers as metrics.
/// The status document's single numbers: each metric's name, kind, help,
/// and where the document keeps it.
const SINGLES: [(&str, &str, &str, &[&str]); 10] = [
    (
        "passepartout_uptime_seconds",
        "gauge",
        "Seconds since the daemon started.",
        &["uptime_s"],
    ),
    (
        "passepartout_turns_total",
        "counter",
        "Turns finished.",
        &["turns", "finished"],
    ),
    (
        "passepartout_turn_failures_total",
        "counter",
        "Turns that failed.",
        &["turns", "failed"],
    ),
    (
        "passepartout_delivered_total",
        "counter",
        "Messages delivered.",
        &["delivered"],
    ),
    (
        "passepartout_queue_depth",
        "gauge",
        "Messages waiting in the conversations' queues.",
        &["conversations", "queued"],
    ),
    (
        "passepartout_conversations_active",
        "gauge",
        "Conversations with a worker.",
        &["conversations", "active"],
    ),
    (
        "passepartout_outbox_depth",
        "gauge",
        "Replies waiting in the outbox.",
        &["store", "outbox"],
    ),
    (
        "passepartout_journal_pending",
        "gauge",
        "Messages journaled and not yet answered.",
        &["store", "pending"],
    ),
    (
        "passepartout_store_size_bytes",
        "gauge",
        "The store's size on disk.",
        &["store", "size_bytes"],
    ),
    (
        "passepartout_approvals_pending",
        "gauge",
        "Approvals waiting for a decision.",
        &["approvals", "pending"],
    ),
];

/// Writes the status document's single numbers ([`SINGLES`]).
fn singles(status: &Value, out: &mut Text) {
    for (name, kind, help, path) in SINGLES {
        if let Some(value) = path.iter().fold(status, |value, key| &value[*key]).as_f64() {
            out.help(name, kind, help);
            out.sample(name, &[], value);
        }
    }
}

/// Writes each model provider's calls, failures by kind and tokens.
fn providers(status: &Value, out: &mut Text) {
    let number = |value: &Value| value.as_f64();
    let providers = status["providers"].as_array().cloned().unwrap_or_default();
    let calls = [
        (
            "passepartout_provider_calls_total",
            "calls",
            "Calls to each model provider.",
        ),
        (
            "passepartout_provider_failures_total",
            "failures",
            "Failed calls to each model provider.",
        ),
    ];
    for (name, field, help) in calls {
        out.help(name, "counter", help);
        for provider in &providers {
            if let (Some(p), Some(value)) = (provider["name"].as_str(), number(&provider[field])) {
                out.sample(name, &[("provider", p)], value);
            }
        }
    }
    let kinds = "passepartout_provider_failure_kinds_total";
    out.help(
        kinds,
        "counter",
        "Failed calls to each model provider, by kind (timeout, unreachable, rate_limited, server_error, ...).",
    );
    for provider in &providers {
        let Some(p) = provider["name"].as_str() else { continue };
        for (kind, value) in provider["failure_kinds"].as_object().into_iter().flatten() {
            if let Some(value) = number(value) {
                out.sample(kinds, &[("provider", p), ("kind", kind)], value);
            }
        }
    }
    let tokens = "passepartout_provider_tokens_total";
    out.help(
        tokens,
        "counter",
        "Tokens each model provider read (in) and wrote (out).",
    );
    for provider in &providers {
        let Some(p) = provider["name"].as_str() else { continue };
        for (direction, field) in [("in", "tokens_in"), ("out", "tokens_out")] {
            out.sample(
                tokens,
                &[("provider", p), ("direction", direction)],
                number(&provider[field]).unwrap_or(0.0),
            );
        }
    }
}

fn from_status(status: &Value, out: &mut Text) {
    let number = |value: &Value| value.as_f64();
    singles(status, out);

    let seconds = &status["turns"]["seconds"];
    if let (Some(sum), Some(count)) = (number(&seconds["sum"]), number(&seconds["count"])) {
        let buckets = seconds["buckets"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|bucket| Some((number(&bucket["le"])?, number(&bucket["count"])?)));
        out.histogram(
            "passepartout_turn_seconds",
            "Time from a turn's start to its commit.",
            buckets,
            sum,
            count,
        );
    }

    let decided = "passepartout_approvals_decided_total";
    out.help(decided, "counter", "Approvals decided, by outcome.");
    for outcome in ["approved", "denied", "cancelled", "expired"] {
        if let Some(value) = number(&status["approvals"]["decided"][outcome]) {
            out.sample(decided, &[("outcome", outcome)], value);
        }
    }

    let intake = "passepartout_intake_messages_total";
    out.help(intake, "counter", "Messages handed in, by what the core made of them.");
    for outcome in ["accepted", "duplicates", "busy", "refused"] {
        if let Some(value) = number(&status["intake"][outcome]) {
            out.sample(intake, &[("outcome", outcome)], value);
        }
    }

    providers(status, out);

    let tools = "passepartout_tool_executions_total";
    out.help(tools, "counter", "Tool calls run, and how many failed.");
    if let Some(by_tool) = status["tools"].as_object() {
        for (tool, stats) in by_tool {
            for (outcome, field) in [("run", "executions"), ("failed", "failures")] {
                if let Some(value) = number(&stats[field]) {
                    out.sample(tools, &[("tool", tool), ("outcome", outcome)], value);
                }
            }
        }
    }

    let gateways = status["gateways"].as_array().cloned().unwrap_or_default();
    let up = "passepartout_gateway_up";
    out.help(up, "gauge", "Whether each gateway is up (1) or not (0).");
    for gateway in &gateways {
        if let Some(name) = gateway["name"].as_str() {
            let value = if gateway["state"] == "up" { 1.0 } else { 0.0 };
            out.sample(up, &[("gateway", name)], value);
        }
    }
    let restarts = "passepartout_gateway_restarts_total";
    out.help(
        restarts,
        "counter",
        "Times each gateway's listening half failed and was restarted.",
    );
    for gateway in &gateways {
        if let (Some(name), Some(value)) = (gateway["name"].as_str(), number(&gateway["restarts"])) {
            out.sample(restarts, &[("gateway", name)], value);
        }
    }
}

/// Prometheus text being written.
#[derive(Default)]
struct Text(String);

impl Text {
    fn help(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.0, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    /// A histogram: `buckets` are (upper bound in seconds, values at most
    /// that), cumulative; the `+Inf` bucket is `count`.
    fn histogram(&mut self, name: &str, help: &str, buckets: impl Iterator<Item = (f64, f64)>, sum: f64, count: f64) {
        self.help(name, "histogram", help);
        let bucket = format!("{name}_bucket");
        for (bound, value) in buckets {
            self.sample(&bucket, &[("le", &bound.to_string())], value);
        }
        self.sample(&bucket, &[("le", "+Inf")], count);
        self.sample(&format!("{name}_sum"), &[], sum);
        self.sample(&format!("{name}_count"), &[], count);
    }

    fn sample(&mut self, name: &str, labels: &[(&str, &str)], value: f64) {
        self.0.push_str(name);
        if !labels.is_empty() {
            let labels: Vec<String> = labels
                .iter()
                .map(|(label, value)| format!("{label}=\"{}\"", escape(value)))
                .collect();
            let _ = write!(self.0, "{{{}}}", labels.join(","));
        }
        let _ = writeln!(self.0, " {value}");
    }
}

/// A label value as the format quotes it.
fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// `/metrics`.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/metrics", get(metrics))
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;

    #[test]
    fn the_status_documents_numbers_become_labelled_samples() {
        let status = json!({
            "uptime_s": 3, "delivered": 6,
            "turns": {"finished": 5, "failed": 1, "seconds": {
                "buckets": [{"le": 0.5, "count": 2}, {"le": 5.0, "count": 5}], "sum": 7.25, "count": 6}},
            "conversations": {"active": 1, "queued": 2}, "store": {"outbox": 0, "pending": 0, "size_bytes": 100},
            "approvals": {"pending": 1, "decided": {"approved": 2, "denied": 1, "cancelled": 0, "expired": 3}}, "intake": {"accepted": 5, "duplicates": 0, "busy": 0, "refused": 1},
            "providers": [{"name": "lo\"cal", "calls": 4, "failures": 1, "failure_kinds": {"timeout": 1}, "tokens_in": 10, "tokens_out": 5}],
            "tools": {"read_file": {"executions": 2, "failures": 0}},
            "gateways": [{"name": "web", "state": "up", "restarts": 0}, {"name": "socket", "state": "down", "restarts": 4}],
        });
        let mut out = Text::default();
        from_status(&status, &mut out);
        let text = out.0;
        for line in [
            "passepartout_turns_total 5",
            "passepartout_queue_depth 2",
            "passepartout_intake_messages_total{outcome=\"refused\"} 1",
            "passepartout_provider_failures_total{provider=\"lo\\\"cal\"} 1",
            "passepartout_provider_tokens_total{provider=\"lo\\\"cal\",direction=\"out\"} 5",
            "passepartout_tool_executions_total{tool=\"read_file\",outcome=\"run\"} 2",
            "passepartout_gateway_up{gateway=\"socket\"} 0",
            "# TYPE passepartout_turns_total counter",
            "# TYPE passepartout_turn_seconds histogram",
            "passepartout_turn_seconds_bucket{le=\"0.5\"} 2",
            "passepartout_turn_seconds_bucket{le=\"5\"} 5",
            "passepartout_turn_seconds_bucket{le=\"+Inf\"} 6",
            "passepartout_turn_seconds_sum 7.25",
            "passepartout_turn_seconds_count 6",
            "passepartout_approvals_decided_total{outcome=\"expired\"} 3",
            "passepartout_provider_failure_kinds_total{provider=\"lo\\\"cal\",kind=\"timeout\"} 1",
            "passepartout_gateway_restarts_total{gateway=\"socket\"} 4",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from:\n{text}");
        }
    }

    #[test]
    fn the_latency_histogram_counts_each_answer_in_every_bucket_it_fits() {
        let latency = Latency::default();
        latency.record(Duration::from_millis(80));
        latency.record(Duration::from_secs(3));
        let mut out = Text::default();
        write_latency(&latency, &mut out);
        let text = out.0;
        assert!(
            text.contains("passepartout_api_answer_seconds_bucket{le=\"0.05\"} 0\n"),
            "{text}"
        );
        assert!(
            text.contains("passepartout_api_answer_seconds_bucket{le=\"0.1\"} 1\n"),
            "{text}"
        );
        assert!(
            text.contains("passepartout_api_answer_seconds_bucket{le=\"5\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("passepartout_api_answer_seconds_bucket{le=\"+Inf\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("passepartout_api_answer_seconds_count 2\n"), "{text}");
    }
}
