//! The Loops & tools page (`GET /loops`): each background loop with its
//! state, its last and next run and its errors, with Run now and Stop (or
//! Start, for a loop stopped on request); then
//! each tool the model may call with its gate (allowed, needs approval,
//! denied) and each tool server (MCP) with its state.
//!
//! Rendered from the loop statuses `passepartout loops --json` prints, the
//! tools listing `passepartout tools --json` prints, and the status
//! document's MCP servers; every value from them is escaped.

use std::fmt::Write as _;

use serde_json::Value;

use super::shown::{badge, button, items, relative, table, text};
use crate::escape::Escaped;

/// Where the Run now forms post.
pub const RUN: &str = "/loops/run";

/// Where the Stop forms post.
pub const STOP: &str = "/loops/stop";

/// Where the Start forms post.
pub const START: &str = "/loops/start";

/// The field a Stop form carries once the person confirmed it.
pub const CONFIRM: &str = "confirm";

/// The built-in loop that also writes the backups and expires approvals.
const HEARTBEAT: &str = "heartbeat";

/// What the page says first, after a button was pressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Notice {
    /// Loop `name` was asked to run now.
    Ran(String),
    /// Loop `name` was stopped.
    Stopped(String),
    /// Loop `name` was started again.
    Started(String),
}

/// The page's body: the loops (a list, or `{"error": …}`), the tools
/// listing, the status document (for the MCP servers).
/// `seen` is what its live updates start from.
pub fn body(
    loops: &Value,
    tools: &Value,
    status: &Value,
    notice: Option<&Notice>,
    csrf: &str,
    seen: Option<&str>,
) -> String {
    let mut out = format!(
        r#"<p class="meta"><span id="live" class="live" data-seen="{}">Updates by itself when something changes.</span></p>"#,
        Escaped(seen.unwrap_or_default())
    );
    if let Some(notice) = notice {
        let line = match notice {
            Notice::Ran(name) => format!("Loop <strong>{}</strong> runs now.", Escaped(name)),
            Notice::Stopped(name) => format!(
                "Loop <strong>{}</strong> is stopped; <strong>Start</strong> starts it again. If the daemon \
                 restarts first, a loop from the configuration file starts again; one made in a chat is gone for good.",
                Escaped(name)
            ),
            Notice::Started(name) => format!(
                "Loop <strong>{}</strong> is started again; it runs at its next time.",
                Escaped(name)
            ),
        };
        let _ = write!(out, r#"<p class="notice" role="status">{line}</p>"#);
    }
    out += &loops_section(loops, csrf);
    out += &tools_section(tools);
    out += &servers_section(&status["mcp"], tools);
    out
}

/// What asks before loop `name` is stopped: what stopping it does (for
/// the heartbeat, what else stops with it), a Stop button that posts the
/// confirmation, and the way back that leaves it running.
pub fn confirm_stop(name: &str, csrf: &str) -> String {
    let mut out = format!(
        r#"<div class="confirm"><p>Stopping <strong>{name}</strong> keeps it from running until <strong>Start</strong> on the Loops &amp; tools page starts it again. If the daemon restarts first, a loop from the configuration file starts again; one made in a chat is gone for good.</p>"#,
        name = Escaped(name)
    );
    if name == HEARTBEAT {
        out += "<p><strong>The heartbeat also keeps the daemon in order:</strong> it writes the periodic backups of the \
                store and expires the approvals nobody answered in time. Both stop with it until it is started \
                again or the daemon restarts.</p>";
    }
    out += r#"<div class="actions">"#;
    out += &button(
        STOP,
        csrf,
        &[("name", name), (CONFIRM, "yes")],
        &format!("Stop {name}"),
        "deny",
    );
    out + r#"<a class="button" href="/loops">Keep it running</a></div></div>"#
}

/// The class a loop's state is coloured by.
fn state_class(state: &str) -> &'static str {
    match state {
        "sleeping" | "waiting" | "processing" => "good",
        "pending" => "waiting",
        _ => "bad",
    }
}

/// A loop's state in words a person reads.
fn state_words(state: &str) -> &str {
    match state {
        "pending" => "starting",
        "sleeping" => "sleeping until its next run",
        "waiting" => "waiting to be triggered",
        "processing" => "running now",
        "error" => "failed; trying again",
        "stopped" => "stopped",
        other => other,
    }
}

fn loops_section(loops: &Value, csrf: &str) -> String {
    let mut out = String::from(
        "<section id=\"loops\"><h2>Background loops</h2><p class=\"help\">Work the assistant does on its own, on a schedule. \
         <strong>Run now</strong> runs one at once instead of at its next time; <strong>Stop</strong> (once you \
         confirm it) stops it until <strong>Start</strong> starts it again, at its next time (if the daemon restarts first, one made \
         in a chat is forgotten).</p>",
    );
    if let Some(error) = loops["error"].as_str() {
        let _ = write!(
            out,
            r#"<p class="error">The loops cannot be read: {}</p>"#,
            Escaped(error)
        );
        return out + "</section>";
    }
    let rows: Vec<Vec<String>> = items(loops).map(|l| loop_row(l, csrf)).collect();
    if rows.is_empty() {
        out += "<p>No loops run.</p>";
    } else {
        out += &table(
            "Background loops",
            &["Loop", "State", "Last run", "Next run", "Errors", ""],
            &rows,
        );
    }
    out + "</section>"
}

/// One loop's cells, with its buttons.
pub fn loop_row(l: &Value, csrf: &str) -> Vec<String> {
    let name = l["name"].as_str().unwrap_or_default();
    let state = l["state"].as_str().unwrap_or("unknown");
    let what = match (l["what"].as_str(), l["handler"].as_str()) {
        (Some(what), _) => Escaped(what).to_string(),
        (None, Some(handler)) => format!("built in: {}", Escaped(handler)),
        (None, None) => String::new(),
    };
    let schedule = l["schedule"]
        .as_str()
        .map(|s| format!(r#"<br><span class="meta">{}</span>"#, Escaped(s)))
        .unwrap_or_default();
    let mut state_cell = badge(state_words(state), state_class(state));
    if let Some(reason) = l["stop_reason"].as_str() {
        let _ = write!(
            state_cell,
            r#"<br><span class="meta">{}</span>"#,
            Escaped(&reason.replace('_', " "))
        );
    }
    let last = items(&l["recent"]).next().map_or_else(
        || "never".to_owned(),
        |run| {
            let outcome = match run["outcome"].as_str() {
                Some("done") => "done".to_owned(),
                Some("failed") => "failed".to_owned(),
                Some(other) => other.to_owned(),
                None => String::new(),
            };
            format!("{}, {}", Escaped(&relative(run, "started")), Escaped(&outcome))
        },
    );
    let next = match state {
        "stopped" => "—".to_owned(),
        "waiting" => "when triggered".to_owned(),
        "processing" => "running now".to_owned(),
        _ => Escaped(&relative(l, "next_wake")).to_string(),
    };
    let errors = match (l["consecutive_errors"].as_u64().unwrap_or(0), l["last_error"].as_str()) {
        (0, _) => "none".to_owned(),
        (n, Some(error)) => format!(r#"<span class="error">{n} in a row: {}</span>"#, Escaped(error)),
        (n, None) => format!(r#"<span class="error">{n} in a row</span>"#),
    };
    let actions = if state != "stopped" {
        button(RUN, csrf, &[("name", name)], "Run now", "approve")
            + &button(STOP, csrf, &[("name", name)], "Stop", "deny")
    } else if l["stop_reason"].as_str() == Some("requested") {
        button(START, csrf, &[("name", name)], "Start", "approve")
    } else {
        // Ended by itself: starting it again is not on offer (the daemon refuses).
        r#"<span class="meta">starts again at the next restart, if it is in the configuration</span>"#.to_owned()
    };
    vec![
        format!("<strong>{}</strong><br>{what}{schedule}", Escaped(name)),
        state_cell,
        last,
        next,
        errors,
        actions,
    ]
}

/// The class a gate is coloured by.
fn gate_class(gate: &str) -> &'static str {
    match gate {
        "allowed" => "good",
        "needs approval" => "waiting",
        _ => "bad",
    }
}

fn tools_section(tools: &Value) -> String {
    let mut out = String::from(
        "<section id=\"tools\"><h2>Tools</h2><p class=\"help\">What the model may call in a chat, and what happens when it \
         does: <strong>allowed</strong> runs at once, <strong>needs approval</strong> waits for a person's \
         answer (see Approvals), <strong>denied</strong> never runs. A skill can set other gates for some chats.</p>",
    );
    let rows: Vec<Vec<String>> = items(tools)
        .map(|tool| {
            let gate = tool["gate"].as_str().unwrap_or("unknown");
            vec![
                format!("<code>{}</code>", text(&tool["name"])),
                text(&tool["source"]),
                badge(gate, gate_class(gate)),
                text(&tool["reason"]),
            ]
        })
        .collect();
    if rows.is_empty() {
        out += "<p>No tools are offered.</p>";
    } else {
        out += &table("Tools", &["Tool", "From", "Gate", "Why"], &rows);
    }
    out + "</section>"
}

fn servers_section(servers: &Value, tools: &Value) -> String {
    let mut out = String::from(r#"<section id="servers"><h2>Tool servers (MCP)</h2>"#);
    let rows: Vec<Vec<String>> = items(servers)
        .map(|server| {
            let name = server["name"].as_str().unwrap_or_default();
            let source = format!("mcp:{name}");
            let mut gates: Vec<String> = Vec::new();
            for gate in ["allowed", "needs approval", "denied"] {
                let count = items(tools)
                    .filter(|t| t["source"] == source.as_str() && t["gate"] == gate)
                    .count();
                if count > 0 {
                    gates.push(format!("{count} {gate}"));
                }
            }
            let state = server["state"].as_str().unwrap_or("unknown");
            let class = match state {
                "running" | "ready" | "up" => "good",
                "starting" | "connecting" => "waiting",
                _ => "bad",
            };
            vec![
                Escaped(name).to_string(),
                badge(state, class),
                text(&server["tools"]),
                Escaped(&gates.join(", ")).to_string(),
                text(&server["last_error"]),
            ]
        })
        .collect();
    if rows.is_empty() {
        out += "<p>None configured (<code>[[mcp.servers]]</code> in the configuration file adds one).</p>";
    } else {
        out += &table(
            "Tool servers",
            &["Server", "State", "Tools", "Gates", "Last error"],
            &rows,
        );
    }
    out + "</section>"
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_loop_shows_its_state_runs_and_buttons_escaped() {
        let l = json!({
            "name": "digest<1>", "what": "summarise <news>", "schedule": "every 15 min",
            "state": "sleeping", "next_wake_in_s": 120, "consecutive_errors": 2,
            "last_error": "feed <down>",
            "recent": [{"started_ago_s": 300, "outcome": "failed"}],
        });
        let row = loop_row(&l, "tok").concat();
        for fact in [
            "digest&lt;1&gt;",
            "summarise &lt;news&gt;",
            "every 15 min",
            "sleeping until its next run",
            "5 min ago, failed",
            "in 2 min",
            "2 in a row: feed &lt;down&gt;",
            r#"action="/loops/run""#,
            r#"action="/loops/stop""#,
            r#"name="name" value="digest&lt;1&gt;""#,
        ] {
            assert!(row.contains(fact), "{fact} missing from {row}");
        }
        assert!(!row.contains("<news>") && !row.contains("<down>"), "{row}");
    }

    #[test]
    fn stopping_asks_first_and_the_heartbeat_says_what_stops_with_it() {
        let asked = confirm_stop("heartbeat", "tok");
        for fact in [
            "periodic backups",
            "expires the approvals",
            r#"action="/loops/stop""#,
            r#"name="name" value="heartbeat""#,
            r#"name="confirm" value="yes""#,
            r#"href="/loops">Keep it running</a>"#,
            "Stop heartbeat</button>",
        ] {
            assert!(asked.contains(fact), "{fact} missing from {asked}");
        }
        let other = confirm_stop("digest<1>", "tok");
        assert!(other.contains("digest&lt;1&gt;") && !other.contains("<1>"), "{other}");
        assert!(!other.contains("periodic backups"), "{other}");
    }

    #[test]
    fn a_loop_stopped_on_request_has_start_only() {
        let l = json!({"name": "standup", "state": "stopped", "stop_reason": "requested", "recent": []});
        let row = loop_row(&l, "tok").concat();
        assert!(row.contains(r#"action="/loops/start""#), "{row}");
        assert!(row.contains(r#"name="name" value="standup""#), "{row}");
        assert!(!row.contains(r#"action="/loops/stop""#), "{row}");
        assert!(!row.contains(r#"action="/loops/run""#), "{row}");
        assert!(row.contains("never"), "{row}");
    }

    #[test]
    fn a_loop_that_ended_by_itself_has_no_buttons_and_says_how_it_comes_back() {
        let l = json!({"name": "tea", "state": "stopped", "stop_reason": "spent", "recent": []});
        let row = loop_row(&l, "tok").concat();
        assert!(!row.contains("<form"), "{row}");
        assert!(row.contains("starts again at the next restart"), "{row}");
    }

    #[test]
    fn a_running_loop_has_no_start() {
        let l = json!({"name": "standup", "state": "waiting", "recent": []});
        let row = loop_row(&l, "tok").concat();
        assert!(!row.contains(r#"action="/loops/start""#), "{row}");
        assert!(row.contains(r#"action="/loops/stop""#), "{row}");
    }

    #[test]
    fn tools_and_servers_show_their_gates() {
        let tools = json!([
            {"name": "shell", "source": "built-in", "gate": "needs approval", "reason": "tools.require_approval"},
            {"name": "read", "source": "mcp:files", "gate": "allowed"},
            {"name": "rm", "source": "mcp:files", "gate": "denied", "reason": "<never>"},
        ]);
        let status = json!({"mcp": [{"name": "files", "state": "running", "tools": 2, "last_error": null}]});
        let html = body(&json!([]), &tools, &status, None, "tok", None);
        for fact in [
            r#"<span class="state waiting">needs approval</span>"#,
            r#"<span class="state bad">denied</span>"#,
            "&lt;never&gt;",
            "1 allowed, 1 denied",
            "No loops run.",
        ] {
            assert!(html.contains(fact), "{fact} missing from {html}");
        }
    }
}
