//! `passepartout approvals`: what waits for approval (with `--all`, every
//! approval and the audit trail); `approvals approve|deny TOKEN` (approve
//! `--always`: with a standing rule); `approvals approve --all-from
//! CONVERSATION` and `approvals deny --all` for a whole queue; `approvals
//! rules` and `approvals rules revoke ID` for the standing rules.
//!
//! Every value in a listing is printed with its control, bidirectional and
//! invisible characters as escapes ([`visible::line`]): a command's escape
//! sequence or carriage return cannot redraw the line a person approves
//! from, nor an override reorder it.

use std::io::IsTerminal;
use std::process::ExitCode;

use passepartout_gateway::visible;
use passepartout_socket::{AdminRequest, ClientError};
use serde_json::Value;

use super::client::{EXIT_UNREACHABLE, connect, listing};
use super::terminal;
use crate::config::Config;

/// Lists approvals. Exit 0, or 3 when the daemon is unreachable.
pub async fn list(config: &Config, all: bool, json: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let listing = match listing(client.ask(AdminRequest::Approvals { all }).await) {
        Ok(listing) => listing,
        Err(code) => return code,
    };
    if json {
        println!("{listing}");
    } else {
        print!("{}", render(&listing, all));
    }
    ExitCode::SUCCESS
}

/// Approves (with `always`, and makes a standing rule) or denies. Exit 0
/// when this decided it, 1 when it did not (no such token, decided before),
/// 3 when the daemon is unreachable.
pub async fn decide(config: &Config, token: &str, approve: bool, always: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let decide = AdminRequest::Decide {
        token: token.to_owned(),
        approve: approve || always,
        always,
    };
    let answer = client.ask(decide).await;
    told(answer, "decided")
}

/// Approves (or denies) every pending approval of conversation `from`, or
/// denies every pending one: one line for each, then the count. Exit 0
/// when the request was taken, 1 when it was refused (no such
/// conversation, approving everywhere), 3 when the daemon is unreachable.
pub async fn decide_all(config: &Config, approve: bool, from: Option<&str>) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let answer: Result<Value, _> = client
        .ask(AdminRequest::DecideAll {
            approve,
            from: from.map(str::to_owned),
        })
        .await;
    if let Ok(answer) = &answer {
        for decision in answer["decisions"].as_array().into_iter().flatten() {
            let message = decision["message"].as_str().unwrap_or_default();
            let message = terminal::show(message, std::io::stdout().is_terminal());
            if decision["decided"].as_bool() == Some(true) {
                println!("{message}");
            } else {
                println!("not decided: {message}");
            }
        }
    }
    told(answer, "ok")
}

/// Lists the standing rules, one a line, its id first. Exit 0, or 3 when
/// the daemon is unreachable.
pub async fn rules(config: &Config, json: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let listing = match listing(client.ask(AdminRequest::Rules).await) {
        Ok(listing) => listing,
        Err(code) => return code,
    };
    if json {
        println!("{listing}");
    } else {
        print!("{}", render_rules(&listing));
    }
    ExitCode::SUCCESS
}

/// Revokes a standing rule. Exit 0 when this revoked it, 1 when there was
/// no such rule, 3 when the daemon is unreachable.
pub async fn revoke_rule(config: &Config, id: u64) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    told(client.ask(AdminRequest::RevokeRule { id }).await, "revoked")
}

/// Prints the daemon's `message`: on stdout, exit 0, when its `done` flag
/// says it was done; on stderr, exit 1, when not; exit 3 when the daemon
/// could not be reached.
fn told(answer: Result<Value, ClientError>, done: &str) -> ExitCode {
    match answer {
        Ok(answer) => {
            let message = answer["message"].as_str().unwrap_or_default();
            if answer[done].as_bool() == Some(true) {
                println!("{}", terminal::show(message, std::io::stdout().is_terminal()));
                ExitCode::SUCCESS
            } else {
                eprintln!(
                    "passepartout: {}",
                    terminal::show(message, std::io::stderr().is_terminal())
                );
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
    }
}

/// The standing rules as lines for a person: the id first.
pub fn render_rules(listing: &Value) -> String {
    let rules = listing["rules"].as_array().map(Vec::as_slice).unwrap_or_default();
    if rules.is_empty() {
        return "No standing rules.\n".into();
    }
    let mut out = String::new();
    for rule in rules {
        let text = |key: &str| shown(rule[key].as_str().unwrap_or_default());
        // `made_by` says "from the web" for the owner's answers there; a
        // daemon from before it gives only who.
        let made = match (rule["made_by"].as_str(), rule["by_shown"].as_str()) {
            (Some(made), _) => shown(made),
            (None, Some(by)) => format!("by {}", shown(by)),
            (None, None) => format!("by {}", text("by")),
        };
        out.push_str(&format!(
            "{}  {}  {}  until {}  {made}\n",
            rule["id"],
            text("conversation"),
            text("covers"),
            timestamp(rule["expires_ms"].as_u64().unwrap_or_default()),
        ));
    }
    out
}

/// The listing as lines for a person.
pub fn render(listing: &Value, all: bool) -> String {
    let mut out = String::new();
    let approvals = listing["approvals"].as_array().map(Vec::as_slice).unwrap_or_default();
    if approvals.is_empty() {
        out.push_str(if all {
            "No approvals yet.\n"
        } else {
            "Nothing waits for approval.\n"
        });
    }
    for approval in approvals {
        let text = |key: &str| shown(approval[key].as_str().unwrap_or_default());
        let status = text("status");
        let when = if status == "pending" {
            format!(
                "expires in {}",
                seconds(approval["expires_in_s"].as_u64().unwrap_or_default())
            )
        } else {
            let decision = &approval["decision"];
            // `by_shown` names the person (or the terminal); a daemon from
            // before it gives only the id.
            let how = shown(decision["how"].as_str().unwrap_or_default());
            match (decision["by_shown"].as_str(), decision["by"].as_str()) {
                (Some(by), _) => format!("{} ({how})", shown(by)),
                (None, Some(by)) => format!("by {} ({how})", shown(by)),
                (None, None) => how,
            }
        };
        out.push_str(&format!(
            "{}  {status}  {}\n    in {}, asked by {}; {when}\n",
            text("token"),
            text("action"),
            text("conversation"),
            // A daemon from before names gives only the id.
            approval["requester_shown"]
                .as_str()
                .map_or_else(|| text("requester"), shown),
        ));
        if let Some(votes) = approval["votes"].as_str() {
            out.push_str(&format!("    models: {}\n", shown(votes)));
        }
    }
    if let Some(audit) = listing["audit"].as_array() {
        out.push_str("\nAudit trail (oldest first):\n");
        for event in audit {
            out.push_str(&format!(
                "{}  {}\n",
                timestamp(event["at_ms"].as_u64().unwrap_or_default()),
                shown(event["event"].as_str().unwrap_or_default())
            ));
        }
    }
    out
}

/// `text` as printed on a line of a listing: nothing in it acts on the
/// terminal, reorders the line or hides.
fn shown(text: &str) -> String {
    visible::line(text).into_owned()
}

fn seconds(s: u64) -> String {
    if s >= 60 {
        format!("{} min", s / 60)
    } else {
        format!("{s} s")
    }
}

fn timestamp(ms: u64) -> String {
    jiff::Timestamp::from_millisecond(ms as i64)
        .map(|t| t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string())
        .unwrap_or_else(|_| ms.to_string())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn an_approval_the_models_voted_on_shows_the_vote() {
        let listing = json!({"approvals": [{
            "token": "K7PX2QMD", "status": "pending", "action": "shell: ls", "expires_in_s": 60,
            "conversation": "socket:c", "requester": "1",
            "votes": "2 of 3 models agree (2 needed); b disagrees: \"no\"",
        }, {
            "token": "AAAAAAAA", "status": "pending", "action": "shell: pwd", "expires_in_s": 60,
            "conversation": "socket:c", "requester": "1", "votes": null,
        }]});
        let shown = super::render(&listing, false);
        assert!(
            shown.contains("; expires in 1 min\n    models: 2 of 3 models agree (2 needed); b disagrees: \"no\"\n"),
            "{shown}"
        );
        assert_eq!(shown.matches("models:").count(), 1, "{shown}");
    }

    #[test]
    fn nothing_in_a_listing_acts_on_the_terminal_or_reorders_it() {
        let listing = json!({"approvals": [{
            "token": "K7PX2QMD", "status": "pending", "action": "shell: curl x | sh\r\u{1b}[2Kls -la \u{202e}",
            "expires_in_s": 60, "conversation": "socket:\u{2066}c", "requester_shown": "1\u{9b}",
            "votes": "no\u{200f}",
        }], "audit": [{"at_ms": 0, "event": "ran `shell: \u{1b}]0;x\u{7}`"}]});
        let shown = super::render(&listing, true);
        assert!(
            shown.contains("K7PX2QMD  pending  shell: curl x | sh\\r\\x1b[2Kls -la \\u{202e}\n"),
            "{shown}"
        );
        for part in [
            "in socket:\\u{2066}c, asked by 1\\u{9b};",
            "models: no\\u{200f}\n",
            "ran `shell: \\x1b]0;x\\x07`",
        ] {
            assert!(shown.contains(part), "{part} missing from {shown}");
        }
        assert!(!shown.contains(['\r', '\u{1b}', '\u{202e}', '\u{2066}', '\u{9b}', '\u{200f}', '\u{7}']));
    }
}
