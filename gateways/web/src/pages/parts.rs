//! Pieces the Conversations, Usage and Configuration pages share: asking
//! the core for a page's document, a table of escaped cells, a value as
//! escaped text (hiding nothing, for what is decided on), a moment as a person reads it, a conversation's key in a
//! URL, a count of bytes in KB or MB.

use std::fmt::Write as _;

use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use passepartout_admin::{AdminAs, AdminReply, AdminRequest, DashboardRequest};
use passepartout_gateway::{ChatId, ConversationKey, GatewayId, visible};
use serde_json::Value;

use super::errors;
use crate::escape::Escaped;

/// The document `request` asks the core for, or the page that says why
/// there is none.
pub async fn ask(admin: &AdminAs, request: DashboardRequest) -> Result<Value, Box<Response>> {
    match admin.ask(AdminRequest::Dashboard { request }).await {
        Ok(AdminReply::Dashboard(Ok(document))) => Ok(document),
        Ok(AdminReply::Dashboard(Err(unreadable))) => Err(Box::new(errors::unavailable(&unreadable.message))),
        Ok(_) => Err(Box::new(errors::unavailable("the daemon answered another question"))),
        Err(closed) => Err(Box::new(errors::unavailable(&closed.to_string()))),
    }
}

/// A table of cells already escaped, or `empty` (a sentence) when there
/// are no rows.
pub fn table(head: &[&str], body: Vec<Vec<String>>, empty: &str) -> String {
    if body.is_empty() {
        return format!("<p>{}</p>", Escaped(empty));
    }
    let mut out = String::from("<table><thead><tr>");
    for cell in head {
        let _ = write!(out, "<th>{}</th>", Escaped(cell));
    }
    out += "</tr></thead><tbody>";
    out += &labelled_rows(head, &body);
    out + "</tbody></table>"
}

/// Rows of cells already escaped, each cell labelled with its column's
/// heading (`data-label`), which the stylesheet shows beside the value
/// when a narrow screen folds the table into a list.
pub fn labelled_rows(head: &[&str], body: &[Vec<String>]) -> String {
    let mut out = String::new();
    for row in body {
        out += "<tr>";
        for (at, cell) in row.iter().enumerate() {
            let label = head.get(at).copied().unwrap_or_default();
            let _ = write!(out, r#"<td data-label="{}">{cell}</td>"#, Escaped(label));
        }
        out += "</tr>";
    }
    out
}

/// A count of bytes as a person reads it: "512 bytes", "1.5 KB",
/// "12.3 MB", "2.0 GB" (of 1024).
pub fn bytes(count: u64) -> String {
    const KB: u64 = 1024;
    const MB: u64 = KB * 1024;
    const GB: u64 = MB * 1024;
    match count {
        1 => "1 byte".to_owned(),
        0..KB => format!("{count} bytes"),
        KB..MB => format!("{:.1} KB", count as f64 / KB as f64),
        MB..GB => format!("{:.1} MB", count as f64 / MB as f64),
        _ => format!("{:.1} GB", count as f64 / GB as f64),
    }
}

/// The items of a JSON list; none for anything else.
pub fn items(list: &Value) -> impl Iterator<Item = &Value> {
    list.as_array().into_iter().flatten()
}

/// A value as escaped text: a string as it is, a number written out,
/// nothing for a missing one.
pub fn text(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::String(s) => Escaped(s).to_string(),
        other => Escaped(&other.to_string()).to_string(),
    }
}

/// A value as [`text`] on one line, with every character that could
/// reorder or hide what it says (a bidirectional override, a zero-width
/// space, a control) shown as an escape: for what a person decides on.
pub fn exact(value: &Value) -> String {
    match value {
        Value::String(s) => Escaped(&visible::line(s)).to_string(),
        other => text(other),
    }
}

/// A line the daemon wrote (an audit event) as [`exact`] shows it, its
/// code spans (`` `shell: ls` ``, fenced by as many backticks as the
/// value needs) shown as code rather than between raw backticks.
pub fn coded(value: &Value) -> String {
    let Value::String(line) = value else {
        return text(value);
    };
    let line = visible::line(line);
    let mut out = String::new();
    let mut rest: &str = &line;
    while let Some(start) = rest.find('`') {
        let fence = rest[start..].chars().take_while(|c| *c == '`').count();
        let after = &rest[start + fence..];
        // The span ends at the next run of exactly as many backticks.
        let end = (0..after.len())
            .filter(|at| after.is_char_boundary(*at) && after[*at..].starts_with('`'))
            .filter(|at| *at == 0 || !after[..*at].ends_with('`'))
            .find(|at| after[*at..].chars().take_while(|c| *c == '`').count() == fence);
        let Some(end) = end else {
            let _ = write!(out, "{}", Escaped(&rest[..start + fence]));
            rest = after;
            continue;
        };
        let inner = &after[..end];
        let padded = inner.len() > 1 && inner.starts_with(' ') && inner.ends_with(' ') && inner.trim() != "";
        let inner = if padded { &inner[1..inner.len() - 1] } else { inner };
        let _ = write!(out, "{}<code>{}</code>", Escaped(&rest[..start]), Escaped(inner));
        rest = &after[end + fence..];
    }
    let _ = write!(out, "{}", Escaped(rest));
    out
}

/// A moment (milliseconds since the epoch) as `2026-03-03 14:05 UTC`;
/// "undated" when it is not known.
pub fn when(ms: Option<u64>) -> String {
    let Some(ms) = ms else {
        return "undated".into();
    };
    let (days, of_day) = (ms / 86_400_000, ms % 86_400_000 / 60_000);
    let (year, month, day) = civil(days);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02} UTC",
        of_day / 60,
        of_day % 60
    )
}

/// The date of a day counted from 1970-01-01 (the proleptic Gregorian
/// calendar, as in H. Hinnant's `civil_from_days`).
fn civil(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// A conversation as people read it: `telegram:42`.
pub fn conversation_name(item: &Value) -> String {
    // `shown`: an API key's conversation, by the key's name.
    let chat = if item["shown"].is_string() {
        &item["shown"]
    } else {
        &item["chat"]
    };
    format!("{}:{}", text(&item["gateway"]), text(chat))
}

/// The path of a conversation's page: its key in base64url, so that any
/// chat id (slashes, spaces, anything) is one path segment.
pub fn conversation_path(item: &Value) -> String {
    let key = format!(
        "{}:{}",
        item["gateway"].as_str().unwrap_or(""),
        item["chat"].as_str().unwrap_or("")
    );
    format!("/conversations/{}", URL_SAFE_NO_PAD.encode(key))
}

/// The conversation a page's path segment names; none when it names none.
pub fn conversation_of(segment: &str) -> Option<ConversationKey> {
    let key = String::from_utf8(URL_SAFE_NO_PAD.decode(segment).ok()?).ok()?;
    let (gateway, chat) = key.split_once(':')?;
    Some(ConversationKey::new(
        GatewayId::new(gateway).ok()?,
        ChatId::new(chat).ok()?,
    ))
}

#[cfg(test)]
mod coded_tests {
    use serde_json::json;

    use super::coded;

    #[test]
    fn code_spans_show_as_code_and_everything_else_escaped() {
        assert_eq!(
            coded(&json!("denied AB12 `shell: ls <x>` from the web")),
            "denied AB12 <code>shell: ls &lt;x&gt;</code> from the web"
        );
        assert_eq!(
            coded(&json!("ran `` echo `a` `` for 5")),
            "ran <code>echo `a`</code> for 5"
        );
        assert_eq!(coded(&json!("a lone ` stays")), "a lone ` stays");
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn moments_read_as_utc_dates_and_times() {
        assert_eq!(when(Some(0)), "1970-01-01 00:00 UTC");
        // 2026-03-03T14:05:00Z
        assert_eq!(when(Some(1_772_546_700_000)), "2026-03-03 14:05 UTC");
        assert_eq!(when(Some(951_782_400_000)), "2000-02-29 00:00 UTC", "a leap day");
        assert_eq!(when(None), "undated");
    }

    #[test]
    fn a_conversations_key_round_trips_through_its_path() {
        let item = json!({"gateway": "signal", "chat": "group/ab cd:ef"});
        let path = conversation_path(&item);
        let segment = path.strip_prefix("/conversations/").unwrap();
        assert!(
            segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        );
        let key = conversation_of(segment).unwrap();
        assert_eq!((key.gateway.as_str(), key.chat.as_str()), ("signal", "group/ab cd:ef"));
        assert_eq!(conversation_of("not base64!"), None);
        assert_eq!(conversation_of(&URL_SAFE_NO_PAD.encode("no colon")), None);
    }

    #[test]
    fn an_empty_table_is_a_sentence_and_cells_are_kept_as_given() {
        assert_eq!(table(&["A"], vec![], "None <yet>."), "<p>None &lt;yet&gt;.</p>");
        let html = table(&["A & B"], vec![vec!["<i>x</i>".into()]], "");
        assert!(
            html.contains("<th>A &amp; B</th>") && html.contains(r#"<td data-label="A &amp; B"><i>x</i></td>"#),
            "{html}"
        );
    }

    #[test]
    fn byte_counts_read_in_kb_mb_and_gb() {
        assert_eq!(bytes(0), "0 bytes");
        assert_eq!(bytes(1), "1 byte");
        assert_eq!(bytes(1023), "1023 bytes");
        assert_eq!(bytes(1024), "1.0 KB");
        assert_eq!(bytes(1536), "1.5 KB");
        assert_eq!(bytes(5 * 1024 * 1024 + 300 * 1024), "5.3 MB");
        assert_eq!(bytes(3 * 1024 * 1024 * 1024), "3.0 GB");
    }
}
