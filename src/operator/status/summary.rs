//! `/status` in a chat: the status document as a few short Markdown lines
//! that read well in a proportional font — the gateways, the models, what
//! waits, the loops — where `passepartout status` prints its aligned table.

use serde_json::Value;

use super::providers;
use crate::engine::pipeline::cascade::EntryState;
use passepartout_gateway::markup::escape;

/// The short summary of the status document `status`.
pub fn summary(status: &Value) -> String {
    let mut lines = vec![format!(
        "**passepartout {}**, up {}",
        escape(status["version"].as_str().unwrap_or("?")),
        uptime(status["uptime_s"].as_u64().unwrap_or(0))
    )];
    let gateways: Vec<String> = (status["gateways"].as_array().into_iter().flatten())
        .map(|gateway| {
            let name = gateway["name"].as_str().unwrap_or("?");
            let state = gateway["state"].as_str().unwrap_or("?");
            escape(&format!("{name} {state}"))
        })
        .collect();
    if !gateways.is_empty() {
        lines.push(format!("Gateways: {}", gateways.join(", ")));
    }
    let models: Vec<String> = providers(status)
        .into_iter()
        .map(|provider| {
            let state = match provider.state {
                EntryState::Ok => "ok".to_owned(),
                EntryState::CoolingDown => format!("cooling down ({} s)", provider.cooldown_s.unwrap_or(0)),
                EntryState::Unhealthy => "key refused".to_owned(),
                EntryState::Unreachable => "unreachable".to_owned(),
            };
            format!("{} {state}", escape(&provider.name))
        })
        .collect();
    if !models.is_empty() {
        lines.push(format!("Models: {}", models.join(", ")));
    }
    lines.push(waiting(status));
    let loops = &status["loops"];
    if let Some(running) = loops["running"].as_u64() {
        let mut line = format!("Loops: {running} running (/loops lists them)");
        for failing in loops["failing"].as_array().into_iter().flatten() {
            let name = failing["name"].as_str().unwrap_or("?");
            line += &*format!("; {} failing", escape(name));
        }
        lines.push(line);
    }
    if let Some(error) = status["store"]["error"].as_str() {
        lines.push(format!(
            "**Store failed**: {}. Nothing more is taken in until space returns and the daemon restarts.",
            escape(error)
        ));
    }
    lines.join("\n")
}

/// What waits: approvals, queued messages, undelivered replies.
fn waiting(status: &Value) -> String {
    let count = |value: &Value| value.as_u64().unwrap_or(0);
    let approvals = count(&status["approvals"]["pending"]);
    let queued = count(&status["conversations"]["queued"]);
    let undelivered = count(&status["store"]["outbox"]);
    if approvals + queued + undelivered == 0 {
        return "Waiting: nothing".to_owned();
    }
    let mut parts = Vec::new();
    for (n, one, many) in [
        (approvals, "approval (/approvals)", "approvals (/approvals)"),
        (queued, "queued message", "queued messages"),
        (undelivered, "reply to deliver", "replies to deliver"),
    ] {
        match n {
            0 => {}
            1 => parts.push(format!("1 {one}")),
            n => parts.push(format!("{n} {many}")),
        }
    }
    format!("Waiting: {}", parts.join(", "))
}

/// `42 s`, `5 min`, `3 h`, `2 days`.
fn uptime(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s} s"),
        s if s < 3600 => format!("{} min", s / 60),
        s if s < 2 * 86_400 => format!("{} h", s / 3600),
        s => format!("{} days", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::markup::{Flavor, render};

    use super::*;

    #[test]
    fn a_chat_gets_short_lines_without_markup_or_cli_hints() {
        let status = serde_json::json!({
            "version": "0.1.0", "uptime_s": 7300,
            "gateways": [{"name": "telegram", "state": "up"}, {"name": "signal", "state": "reconnecting"}],
            "providers": [
                {"name": "local_*model*", "endpoint": "http://x/v1", "state": "ok", "calls": 2, "failures": 1},
                {"name": "cloud", "endpoint": "https://y/v1", "state": "cooling_down", "cooldown_s": 12, "calls": 1, "failures": 1},
            ],
            "conversations": {"active": 1, "queued": 3},
            "approvals": {"pending": 1},
            "loops": {"running": 2, "heartbeats": 4, "failing": [{"name": "inbox", "error": "timed out"}]},
            "store": {"size_bytes": 10, "pending": 0, "outbox": 0},
        });
        let shown = render(&summary(&status), Flavor::RICH).text;
        assert_eq!(
            shown,
            "passepartout 0.1.0, up 2 h\n\
             Gateways: telegram up, signal reconnecting\n\
             Models: local_*model* ok, cloud cooling down (12 s)\n\
             Waiting: 1 approval (/approvals), 3 queued messages\n\
             Loops: 2 running (/loops lists them); inbox failing"
        );
        assert!(!shown.contains("passepartout approvals"), "no CLI hint in a chat");
        assert!(shown.lines().all(|line| line.chars().count() <= 80), "{shown}");
    }
}
