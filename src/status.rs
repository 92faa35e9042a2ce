//! The status document as text: what `passepartout status` prints and what
//! the `/status` chat command answers — one rendering of the same facts.

use serde_json::Value;

use crate::pipeline::cascade::{EntryState, ProviderHealth};

/// The providers of a status document; none if it has no readable list.
pub fn providers(status: &Value) -> Vec<ProviderHealth> {
    serde_json::from_value(status["providers"].clone()).unwrap_or_default()
}

/// Renders the document served by [`crate::core::Core::status_document`].
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
