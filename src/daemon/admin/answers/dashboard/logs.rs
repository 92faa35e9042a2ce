//! The daemon's recent log lines for the dashboard's Logs page, from the
//! ring the log fills ([`crate::daemon::recent_logs`]), each line's text and target
//! redacted of every configured secret.

use passepartout_admin::Unreadable;
use serde_json::{Value, json};

use crate::daemon::recent_logs::{RecentLogs, Wanted};

/// Lines a page asks for at most.
const MOST: u32 = 1000;

/// The lines after `after`, at `level` or more severe, from targets that
/// start with `target`, the newest `limit`.
pub(super) fn lines(
    logs: Option<&RecentLogs>,
    after: u64,
    level: Option<&str>,
    target: Option<&str>,
    limit: u32,
    redact: &dyn Fn(&str) -> String,
) -> Result<Value, Unreadable> {
    let level = match level.map(str::trim).filter(|level| !level.is_empty()) {
        None => None,
        Some(level) => Some(level.parse::<tracing::Level>().map_err(|_| Unreadable {
            message: format!("{level:?} is not a level: error, warn, info, debug or trace"),
        })?),
    };
    let Some(logs) = logs else {
        return Ok(json!({ "kept": false, "last": 0, "lines": [] }));
    };
    let wanted = Wanted {
        after,
        level,
        target: target.map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned),
        limit: limit.min(MOST) as usize,
    };
    let (lines, last) = logs.lines(&wanted);
    let lines: Vec<Value> = lines
        .into_iter()
        .map(|line| {
            json!({
                "seq": line.seq,
                "at_ms": line.at_ms,
                "level": line.level,
                "target": redact(&line.target),
                "text": redact(&line.text),
            })
        })
        .collect();
    Ok(json!({ "kept": true, "last": last, "lines": lines }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_redacted_filtered_and_a_bad_level_is_said() {
        let logs = RecentLogs::new();
        logs.push(1, "INFO", "passepartout::daemon", "ready".into());
        logs.push(2, "WARN", "passepartout_telegram", "token sk-canary refused".into());
        let redact = |text: &str| text.replace("sk-canary", "[redacted]");
        let all = lines(Some(&logs), 0, None, None, 10, &redact).unwrap();
        assert_eq!(all["last"], 2);
        assert_eq!(all["lines"][1]["text"], "token [redacted] refused");
        let warn = lines(Some(&logs), 0, Some("warn"), None, 10, &redact).unwrap();
        assert_eq!(warn["lines"].as_array().unwrap().len(), 1);
        let daemon = lines(Some(&logs), 0, None, Some("passepartout::"), 10, &redact).unwrap();
        assert_eq!(daemon["lines"][0]["text"], "ready");
        let bad = lines(Some(&logs), 0, Some("loud"), None, 10, &redact).unwrap_err();
        assert!(bad.message.contains("not a level"), "{bad}");
        let none = lines(None, 0, None, None, 10, &redact).unwrap();
        assert_eq!(none["kept"], false);
    }
}
