//! `passepartout approvals`: what waits for approval (with `--all`, every
//! approval and the audit trail), and `approvals approve|deny TOKEN`.

use std::process::ExitCode;

use serde_json::Value;

use super::client::{EXIT_UNREACHABLE, connect, listing};
use crate::config::Config;

/// Lists approvals. Exit 0, or 3 when the daemon is unreachable.
pub async fn list(config: &Config, all: bool, json: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let listing = match listing(client.approvals(all).await) {
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

/// Approves or denies. Exit 0 when this decided it, 1 when it did not (no
/// such token, decided before), 3 when the daemon is unreachable.
pub async fn decide(config: &Config, token: &str, approve: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    match client.decide(token, approve).await {
        Ok(answer) => {
            let message = answer["message"].as_str().unwrap_or_default();
            if answer["decided"].as_bool() == Some(true) {
                println!("{message}");
                ExitCode::SUCCESS
            } else {
                eprintln!("passepartout: {message}");
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
    }
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
        let text = |key: &str| approval[key].as_str().unwrap_or_default().to_owned();
        let status = text("status");
        let when = if status == "pending" {
            format!(
                "expires in {}",
                seconds(approval["expires_in_s"].as_u64().unwrap_or_default())
            )
        } else {
            let decision = &approval["decision"];
            match decision["by"].as_str() {
                Some(by) => format!("by {by} ({})", decision["how"].as_str().unwrap_or_default()),
                None => decision["how"].as_str().unwrap_or_default().to_owned(),
            }
        };
        out.push_str(&format!(
            "{}  {status}  {}\n    in {}, asked by {}; {when}\n",
            text("token"),
            text("action"),
            text("conversation"),
            text("requester"),
        ));
        if let Some(votes) = approval["votes"].as_str() {
            out.push_str(&format!("    models: {votes}\n"));
        }
    }
    if let Some(audit) = listing["audit"].as_array() {
        out.push_str("\nAudit trail (oldest first):\n");
        for event in audit {
            out.push_str(&format!(
                "{}  {}\n",
                timestamp(event["at_ms"].as_u64().unwrap_or_default()),
                event["event"].as_str().unwrap_or_default()
            ));
        }
    }
    out
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
}
