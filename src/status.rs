//! The status document and its text: what `passepartout status` prints and
//! what the `/status` chat command answers — one rendering of the same facts.
//! [`StatusSources`] gathers the document from the parts the daemon built,
//! each handed to it directly; it also answers the chat's `/loops`, as
//! `passepartout loops` does.

use std::sync::Arc;
use std::time::Instant;

use passepartout_gateway::{Health, Listen};
use serde_json::{Value, json};

use crate::approvals::Approvals;
use crate::clock::Clock;
use crate::conversations::{Conversations, Stats, Views};
use crate::loops::daemon::Loops;
use crate::loops::status::State;
use crate::pipeline::cascade::{Cascade, EntryState, ProviderHealth};
use crate::pipeline::commands::View;
use crate::store::Store;
use crate::telemetry::Telemetry;

/// What the status reads of the pipeline's parts.
#[derive(Clone)]
pub struct PipelineGauges {
    /// The model providers' health and usage.
    pub cascade: Arc<Cascade>,
    /// The tools' counters.
    pub tools: Arc<Telemetry>,
    /// The skills' counters.
    pub skills: Arc<Telemetry>,
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
    pub loops: Arc<Loops>,
    pub clock: Clock,
    pub started: Instant,
}

impl StatusSources {
    /// The status document served to `passepartout status`.
    pub fn document(&self) -> Value {
        let (pipeline, store) = (&self.pipeline, &self.store);
        let stats = &self.conversations.stats;
        let stat = Stats::read;
        let workers = self.conversations.queue_depths();
        let gateways: Vec<_> = self
            .gateway_health()
            .into_iter()
            .map(|(name, health)| json!({ "name": name, "state": health.state, "detail": health.detail }))
            .collect();
        json!({
            "version": env!("CARGO_PKG_VERSION"),
            "uptime_s": self.started.elapsed().as_secs(),
            "gateways": gateways,
            "providers": pipeline.cascade.health(),
            "tools": pipeline.tools.snapshot(),
            "skills": pipeline.skills.snapshot(),
            "conversations": {
                "active": workers.len(),
                "queued": workers.iter().map(|(_, depth)| depth).sum::<usize>(),
                "queues": workers.iter().map(|(key, depth)| json!({ "conversation": key.to_string(), "queued": depth })).collect::<Vec<_>>(),
            },
            "approvals": { "pending": self.approvals.pending_count().ok() },
            "loops": self.loops_summary(),
            "store": {
                "path": store.path(),
                "failed": store.is_poisoned(),
                "error": store.failure(),
                "size_bytes": store.size_on_disk().ok(),
                "pending": store.pending_count(),
                "outbox": store.outbox_len(),
            },
            "intake": {
                "accepted": stat(&stats.accepted),
                "duplicates": stat(&stats.duplicates),
                "busy": stat(&stats.busy),
                "refused": stat(&stats.refused),
            },
            "turns": { "finished": stat(&stats.turns), "failed": stat(&stats.turn_failures) },
            "delivered": stat(&stats.delivered),
        })
    }

    /// The `/status` chat command's answer: the same text as `passepartout status`.
    pub fn text(&self) -> String {
        render(&self.document())
    }

    /// The `/loops` chat command's answer: the same text as `passepartout loops`.
    pub fn loops_text(&self) -> String {
        crate::loops::status::render(&self.loops.statuses(), self.clock.now_ms())
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

    fn gateway_health(&self) -> Vec<(String, Health)> {
        let mut gateways: Vec<_> = self
            .gateways
            .iter()
            .map(|listen| (listen.id().to_string(), listen.health()))
            .collect();
        gateways.sort_by(|a, b| a.0.cmp(&b.0));
        gateways
    }
}

impl Views for StatusSources {
    fn show(&self, view: View) -> String {
        match view {
            View::Status => self.text(),
            View::Loops => self.loops_text(),
        }
    }
}

/// The providers of a status document; none if it has no readable list.
pub fn providers(status: &Value) -> Vec<ProviderHealth> {
    serde_json::from_value(status["providers"].clone()).unwrap_or_default()
}

/// Renders the document served by [`StatusSources::document`].
pub fn render(status: &Value) -> String {
    let mut out = format!(
        "passepartout {} — up {} s\n",
        status["version"].as_str().unwrap_or("?"),
        status["uptime_s"]
    );
    for gateway in status["gateways"].as_array().into_iter().flatten() {
        out += &format!(
            "gateway  {:<12} {}\n",
            gateway["name"].as_str().unwrap_or("?"),
            gateway["state"].as_str().unwrap_or("?")
        );
    }
    for provider in providers(status) {
        let state = match provider.state {
            EntryState::CoolingDown => format!("cooling down, {} s left", provider.cooldown_s.unwrap_or(0)),
            EntryState::Unhealthy => "unhealthy: credentials refused (fix the key, then run doctor)".into(),
            EntryState::Ok => "ok".into(),
        };
        let last_error = provider
            .last_error
            .map(|e| format!("; last error: {e}"))
            .unwrap_or_default();
        out += &format!(
            "model    {:<12} {} — {state}; {} calls, {} failed, {} tokens in, {} out{last_error}\n",
            provider.name,
            provider.endpoint,
            provider.calls,
            provider.failures,
            provider.tokens_in,
            provider.tokens_out,
        );
    }
    for (section, label, failed) in [("tools", "tool", "failed"), ("skills", "skill", "rejected")] {
        for (name, stats) in status[section].as_object().into_iter().flatten() {
            out += &format!(
                "{label:<8} {name:<12} {} runs, {} {failed}, {} ms in all\n",
                stats["executions"], stats["failures"], stats["total_ms"]
            );
        }
    }
    let conversations = &status["conversations"];
    out += &format!(
        "conversations  {} active, {} queued\n",
        conversations["active"], conversations["queued"]
    );
    if let Some(pending) = status["approvals"]["pending"].as_u64() {
        out += &format!("approvals      {pending} pending (passepartout approvals)\n");
    }
    let loops = &status["loops"];
    if let Some(running) = loops["running"].as_u64() {
        out += &format!(
            "loops          {running} running, {} heartbeats (passepartout loops)\n",
            loops["heartbeats"].as_u64().unwrap_or(0)
        );
        for failing in loops["failing"].as_array().into_iter().flatten() {
            out += &format!(
                "loop     {:<12} failing: {}\n",
                failing["name"].as_str().unwrap_or("?"),
                failing["error"].as_str().unwrap_or("?")
            );
        }
    }
    let store = &status["store"];
    out += &format!(
        "store    {} bytes, {} pending, {} undelivered\n",
        store["size_bytes"], store["pending"], store["outbox"]
    );
    if let Some(error) = store["error"].as_str() {
        out += &format!(
            "store    FAILED: {error}; nothing more is acknowledged until space returns and the daemon restarts\n"
        );
    }
    out
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
            "store": {"size_bytes": 10, "pending": 0, "outbox": 0},
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
        ] {
            assert!(text.contains(part), "{part} missing from {text}");
        }
    }
}
