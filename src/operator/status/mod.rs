//! The status document and its text: what `passepartout status` prints and
//! what the `/status` chat command answers — one rendering of the same facts.
//! [`StatusSources`] gathers the document from the parts the daemon built,
//! each handed to it directly; it also answers the chat's `/loops`, as
//! `passepartout loops` does. A chat's `/status` gets the short
//! [`summary`] instead of the aligned table, which only a terminal shows
//! well (in a code block there, so its columns stay aligned).

mod summary;

pub use summary::summary;

use std::sync::Arc;
use std::time::Instant;

use passepartout_gateway::markup::code_block;
use passepartout_gateway::{GatewayId, Health, Listen, Surface};
use serde_json::{Value, json};

use crate::engine::conversations::{Conversations, Views};
use crate::engine::loops::daemon::Loops;
use crate::engine::loops::heartbeat::HEARTBEAT;
use crate::engine::loops::status::{State, human};
use crate::engine::pipeline::cascade::{Cascade, EntryState, ProviderHealth};
use crate::engine::pipeline::commands::View;
use crate::engine::pipeline::usage_report::UsagePeriods;
use crate::foundation::clock::Clock;
use crate::foundation::telemetry::Telemetry;
use crate::gateways::restarts::Restarts;
use crate::safety::approvals::Approvals;
use crate::safety::mcp::McpServers;
use crate::safety::sandbox::Policy;
use crate::store::Store;

/// What the status reads of the pipeline's parts.
#[derive(Clone)]
pub struct PipelineGauges {
    /// The model providers' health and usage.
    pub cascade: Arc<Cascade>,
    /// The tools' counters.
    pub tools: Arc<Telemetry>,
    /// The skills' counters.
    pub skills: Arc<Telemetry>,
    /// The tool servers' states.
    pub mcp: Arc<McpServers>,
    /// What the tools' processes run confined by.
    pub sandbox: Policy,
}

/// Where the status document's facts come from.
pub struct StatusSources {
    /// The workers' queues and counters.
    pub conversations: Arc<Conversations>,
    pub pipeline: PipelineGauges,
    pub approvals: Arc<Approvals>,
    pub store: Store,
    /// The running gateways' listening halves, for their health.
    pub gateways: Vec<Arc<dyn Listen>>,
    /// How often each gateway was restarted after failing.
    pub restarts: Arc<Restarts>,
    pub loops: Arc<Loops>,
    pub clock: Clock,
    pub started: Instant,
}

impl StatusSources {
    /// The status document served to `passepartout status`.
    pub fn document(&self) -> Value {
        let (pipeline, store) = (&self.pipeline, &self.store);
        let counts = self.conversations.counts();
        let workers = self.conversations.queue_depths();
        let gateways: Vec<_> = self
            .gateway_health()
            .into_iter()
            .map(|(id, health)| {
                json!({
                    "name": id.to_string(),
                    "state": health.state,
                    "detail": health.detail,
                    "restarts": self.restarts.of(&id),
                })
            })
            .collect();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_s": self.started.elapsed().as_secs(),
            "gateways": gateways,
            "providers": pipeline.cascade.health(),
            "tools": pipeline.tools.snapshot(),
            "skills": pipeline.skills.snapshot(),
            "mcp": pipeline.mcp.status(),
            "sandbox": {
                "landlock_abi": pipeline.sandbox.support().abi(),
                "filesystem": pipeline.sandbox.confines(),
                "network_closed": pipeline.sandbox.network_closed(),
                "detail": pipeline.sandbox.describe(),
            },
            "conversations": {
                "active": workers.len(),
                "queued": workers.iter().map(|(_, depth)| depth).sum::<usize>(),
                "queues": workers.iter().map(|(key, depth)| json!({ "conversation": key.to_string(), "queued": depth })).collect::<Vec<_>>(),
            },
            "approvals": {
                "pending": self.approvals.pending_count().ok(),
                "decided": self.approvals.decisions(),
            },
            "loops": self.loops_summary(),
            "backups": self.backups(),
            "store": {
                "path": store.path(),
                "failed": store.is_poisoned(),
                "error": store.failure(),
                "size_bytes": store.size_on_disk().ok(),
                "pending": store.pending_count(),
                "outbox": store.outbox_len(),
            },
            "intake": {
                "accepted": counts.accepted,
                "duplicates": counts.duplicates,
                "busy": counts.busy,
                "refused": counts.refused,
            },
            "turns": {
                "finished": counts.turns,
                "failed": counts.turn_failures,
                "seconds": self.conversations.turn_times(),
            },
            "delivered": counts.delivered,
            "bridges": self.conversations.bridges_status(),
            "usage": self.conversations.usage().ok(),
        })
    }

    /// The text `passepartout status` prints.
    pub fn text(&self) -> String {
        render(&self.document())
    }

    /// The `/loops` chat command's answer: the same text as `passepartout loops`.
    pub fn loops_text(&self) -> String {
        crate::engine::loops::status::render(&self.loops.statuses(), self.clock.now_ms())
    }

    /// The loops' part of the status document: how many run, how many
    /// heartbeats ran, and the loops in error.
    fn loops_summary(&self) -> Value {
        let statuses = self.loops.statuses();
        let failing: Vec<_> = statuses
            .iter()
            .filter(|s| s.state == State::Error || s.consecutive_errors > 0)
            .map(|s| json!({ "name": s.name, "error": s.last_error, "consecutive_errors": s.consecutive_errors }))
            .collect();
        json!({
            "running": self.loops.running_count(),
            "total": statuses.len(),
            "heartbeats": self.loops.heartbeats(),
            "failing": failing,
        })
    }

    /// When the periodic backup last ran and is next due, and whether the
    /// heartbeat that writes it was stopped: then no backup is written
    /// until it is started again or the daemon restarts.
    fn backups(&self) -> Value {
        let times = self.store.backup_times().unwrap_or_default();
        let stopped = self
            .loops
            .statuses()
            .iter()
            .any(|s| s.name.as_str() == HEARTBEAT && s.state == State::Stopped);
        json!({
            "last_ms": times.last_ms,
            "next_ms": times.next_ms,
            "stopped": stopped,
            "now_ms": self.clock.now_ms(),
        })
    }

    fn gateway_health(&self) -> Vec<(GatewayId, Health)> {
        let mut gateways: Vec<_> = self
            .gateways
            .iter()
            .map(|listen| (listen.id(), listen.health()))
            .collect();
        gateways.sort_by(|a, b| a.0.cmp(&b.0));
        gateways
    }
}

impl Views for StatusSources {
    fn show(&self, view: View, surface: Surface) -> String {
        match view {
            View::Status if surface.terminal => code_block(&self.text()),
            View::Status => summary::summary(&self.document()),
            View::Loops => code_block(&self.loops_text()),
            // Rendered by the conversation's worker, which knows which one asks.
            View::Usage | View::Stopped | View::Help => String::new(),
        }
    }
}

/// The providers of a status document; none if it has no readable list.
pub fn providers(status: &Value) -> Vec<ProviderHealth> {
    serde_json::from_value(status["providers"].clone()).unwrap_or_default()
}

/// A bridge's line: its chats, what waits to be relayed to each, and why
/// the last relay to one failed.
fn bridge_line(bridge: &Value) -> String {
    let chats: Vec<String> = bridge["chats"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|chat| {
            let name = chat["chat"].as_str().unwrap_or("?");
            let waiting = match chat["waiting"].as_u64() {
                Some(0) => String::new(),
                Some(n) => format!(" ({n} waiting)"),
                None => " (outbox unreadable)".to_owned(),
            };
            let error = chat["last_error"]
                .as_str()
                .map(|error| format!(" [last error: {error}]"))
                .unwrap_or_default();
            format!("{name}{waiting}{error}")
        })
        .collect();
    format!(
        "bridge   {:<12} {}\n",
        bridge["name"].as_str().unwrap_or("?"),
        chats.join(" <-> ")
    )
}

/// Renders the document served by [`StatusSources::document`].
pub fn render(status: &Value) -> String {
    let mut out = format!(
        "passepartout {} — up {} s\n",
        status["version"].as_str().unwrap_or("?"),
        status["uptime_s"]
    );
    for gateway in status["gateways"].as_array().into_iter().flatten() {
        let state = gateway["state"].as_str().unwrap_or("?");
        // Why one is down: a port another program holds, say.
        let why = match gateway["detail"].as_str() {
            Some(detail) if state == "down" => format!(": {detail}"),
            _ => String::new(),
        };
        out += &*format!(
            "gateway  {:<12} {state}{why}\n",
            gateway["name"].as_str().unwrap_or("?"),
        );
    }
    for provider in providers(status) {
        let state = match provider.state {
            EntryState::CoolingDown => format!("cooling down, {} s left", provider.cooldown_s.unwrap_or(0)),
            EntryState::Unhealthy => "unhealthy: credentials refused (fix the key, then run doctor)".into(),
            EntryState::Unreachable => "unreachable at the last call".into(),
            EntryState::Ok => "ok".into(),
        };
        let last_error = provider
            .last_error
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default();
        out += &*format!(
            "model    {:<12} {} — {state}; {} calls, {} failed, {} tokens in, {} out{last_error}\n",
            provider.name,
            provider.endpoint,
            provider.calls,
            provider.failures,
            provider.tokens_in,
            provider.tokens_out,
        );
    }
    out += &*mcp_lines(&status["mcp"]);
    if let Some(detail) = status["sandbox"]["detail"].as_str() {
        out += &*format!("sandbox  {detail}\n");
    }
    for (section, label, failed) in [("tools", "tool", "failed"), ("skills", "skill", "rejected")] {
        for (name, stats) in status[section].as_object().into_iter().flatten() {
            out += &*format!(
                "{label:<8} {name:<12} {} runs, {} {failed}, {} ms in all\n",
                stats["executions"], stats["failures"], stats["total_ms"]
            );
        }
    }
    for bridge in status["bridges"].as_array().into_iter().flatten() {
        out += &*bridge_line(bridge);
    }
    let conversations = &status["conversations"];
    out += &*format!(
        "conversations  {} active, {} queued\n",
        conversations["active"], conversations["queued"]
    );
    if let Some(pending) = status["approvals"]["pending"].as_u64() {
        out += &*format!("approvals      {pending} pending (passepartout approvals)\n");
    }
    let loops = &status["loops"];
    if let Some(running) = loops["running"].as_u64() {
        out += &*format!(
            "loops          {running} running, {} heartbeats (passepartout loops)\n",
            loops["heartbeats"].as_u64().unwrap_or(0)
        );
        for failing in loops["failing"].as_array().into_iter().flatten() {
            out += &*format!(
                "loop     {:<12} failing: {}\n",
                failing["name"].as_str().unwrap_or("?"),
                failing["error"].as_str().unwrap_or("?")
            );
        }
    }
    out += &*usage_line(&status["usage"]);
    out += &*backups_line(&status["backups"]);
    let store = &status["store"];
    out += &*format!(
        "store    {} bytes, {} pending, {} undelivered\n",
        store["size_bytes"], store["pending"], store["outbox"]
    );
    if let Some(error) = store["error"].as_str() {
        out += &*format!(
            "store    FAILED: {error}; nothing more is acknowledged until space returns and the daemon restarts\n"
        );
    }
    out
}

/// One line per tool server: its state, its tool count, its last error.
fn mcp_lines(servers: &Value) -> String {
    let mut out = String::new();
    for server in servers.as_array().into_iter().flatten() {
        let restarts = match server["restarts"].as_u64() {
            Some(0) | None => String::new(),
            Some(n) => format!(", connected again {n} times"),
        };
        let error = server["last_error"]
            .as_str()
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default();
        out += &*format!(
            "mcp      {:<12} {}, {} tools{restarts}{error}\n",
            server["name"].as_str().unwrap_or("?"),
            server["state"].as_str().unwrap_or("?"),
            server["tools"],
        );
    }
    out
}

/// The tokens used by all conversations today and this month, with the
/// estimated cost when some provider has a price. Empty for a document
/// without usage.
fn usage_line(usage: &Value) -> String {
    if usage.is_null() {
        return String::new();
    }
    let Ok(periods) = serde_json::from_value::<UsagePeriods>(usage.clone()) else {
        return String::new();
    };
    let sum = |s: &crate::engine::pipeline::usage_report::UsageSum| {
        let cost = if s.cost_usd > 0.0 {
            format!(", about ${:.4}", s.cost_usd)
        } else {
            String::new()
        };
        format!("{} tokens in, {} out{cost}", s.tokens_in, s.tokens_out)
    };
    format!(
        "usage    today {}; this month {}\n",
        sum(&periods.today),
        sum(&periods.month)
    )
}

/// The backups' line: how long ago the last ran and when the next is due;
/// loud when the heartbeat that writes them is stopped. Empty for a
/// document without backups.
fn backups_line(backups: &Value) -> String {
    if backups.is_null() {
        return String::new();
    }
    let now = backups["now_ms"].as_u64().unwrap_or(0);
    let last = match backups["last_ms"].as_u64() {
        Some(last) => format!("last {} ago", human(now.saturating_sub(last))),
        None => "none written yet".into(),
    };
    if backups["stopped"].as_bool() == Some(true) {
        return format!(
            "backups  STOPPED: the heartbeat loop is stopped, no backup is written until it is started again (passepartout loops start heartbeat) or the daemon restarts; {last}\n"
        );
    }
    match backups["next_ms"].as_u64() {
        Some(next) => format!("backups  {last}, next in {}\n", human(next.saturating_sub(now))),
        None => format!("backups  {last}\n"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_part_is_rendered() {
        let status = serde_json::json!({
            "version": "0.1.0", "uptime_s": 3,
            "gateways": [{"name": "socket", "state": "up"}],
            "providers": [
                {"name": "local", "endpoint": "http://x/v1", "state": "ok", "calls": 2, "failures": 1, "tokens_in": 5, "tokens_out": 7, "last_error": "timeout"},
                {"name": "cloud", "endpoint": "https://y/v1", "state": "cooling_down", "cooldown_s": 12, "calls": 1, "failures": 1},
            ],
            "tools": {"read_file": {"executions": 3, "failures": 1, "total_ms": 4}},
            "skills": {"shell_safety": {"executions": 2, "failures": 2, "total_ms": 0}},
            "conversations": {"active": 1, "queued": 0},
            "approvals": {"pending": 2},
            "loops": {"running": 1, "heartbeats": 4, "failing": [{"name": "inbox", "error": "timed out"}]},
            "backups": {"last_ms": 1_000, "next_ms": 3_601_000, "stopped": false, "now_ms": 61_000},
            "store": {"size_bytes": 10, "pending": 0, "outbox": 0},
            "usage": {"today": {"tokens_in": 9, "tokens_out": 4, "cost_usd": 0.0}, "month": {"tokens_in": 90, "tokens_out": 40, "cost_usd": 0.25}},
        });
        let text = render(&status);
        for part in [
            "gateway  socket",
            "last error: timeout",
            "5 tokens in, 7 out",
            "cooling down, 12 s left",
            "tool     read_file    3 runs, 1 failed",
            "skill    shell_safety 2 runs, 2 rejected",
            "1 active",
            "approvals      2 pending",
            "loops          1 running, 4 heartbeats",
            "loop     inbox        failing: timed out",
            "10 bytes",
            "usage    today 9 tokens in, 4 out; this month 90 tokens in, 40 out, about $0.2500",
            "backups  last 1m0s ago, next in 59m0s",
        ] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
    }

    #[test]
    fn an_unreachable_provider_is_not_ok() {
        let status = serde_json::json!({
            "providers": [{"name": "local", "endpoint": "http://x/v1", "state": "unreachable", "calls": 1, "failures": 1, "last_error": "the provider is unreachable: connection refused"}],
        });
        let text = render(&status);
        assert!(
            text.contains("local        http://x/v1 — unreachable at the last call"),
            "{text}"
        );
        assert!(!text.contains("— ok"), "{text}");
    }

    #[test]
    fn a_stopped_heartbeat_is_flagged() {
        let backups = serde_json::json!({"last_ms": null, "next_ms": 5, "stopped": true, "now_ms": 1});
        let line = backups_line(&backups);
        assert!(line.contains("STOPPED"), "{line}");
        assert!(line.contains("none written yet"), "{line}");
    }
}
