//! How the Approvals and Loops pages show the daemon's values: escaped
//! text, spans of time in words ("4 min 20 s left", "3 min ago"), a
//! state with the class the stylesheet colours it by, a table. The values
//! come from the core's JSON documents; every one is escaped here.

use std::fmt::Write as _;

use serde_json::Value;

use crate::escape::Escaped;

pub use super::parts::{exact, items, text};

/// `s` seconds as a person reads a span: "40 s", "4 min 20 s", "2 h 5 min",
/// "3 d 4 h".
pub fn span(s: u64) -> String {
    match s {
        0..60 => format!("{s} s"),
        60..3600 if s.is_multiple_of(60) => format!("{} min", s / 60),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        3600..86_400 => format!("{} h {} min", s / 3600, s % 3600 / 60),
        _ => format!("{} d {} h", s / 86_400, s % 86_400 / 3600),
    }
}

/// What is left of an approval's time before nobody may answer it.
pub fn time_left(s: u64) -> String {
    match s {
        0 => "no time left: it times out now".to_owned(),
        _ => format!("{} left", span(s)),
    }
}

/// When `item`'s moment `stem` (`at`, `next_wake`, …) was or will be, as
/// the core counted it with its own clock (`STEM_ago_s`, `STEM_in_s`):
/// "3 min ago", "in 20 s", "just now"; a missing time is "—". The page
/// never reads its own clock: the daemon's is the one that expires a rule
/// or wakes a loop.
pub fn relative(item: &Value, stem: &str) -> String {
    if let Some(ago) = item[format!("{stem}_ago_s")].as_u64() {
        match ago {
            0 => "just now".to_owned(),
            _ => format!("{} ago", span(ago)),
        }
    } else if let Some(ahead) = item[format!("{stem}_in_s")].as_u64() {
        match ahead {
            0 => "just now".to_owned(),
            _ => format!("in {}", span(ahead)),
        }
    } else {
        "—".to_owned()
    }
}

/// A state in words, with a class a stylesheet colours by: `good`,
/// `waiting` or `bad`.
pub fn badge(state: &str, class: &str) -> String {
    format!(r#"<span class="state {class}">{}</span>"#, Escaped(state))
}

/// A table of cells already escaped, with a caption read to screen readers.
pub fn table(caption: &str, head: &[&str], body: &[Vec<String>]) -> String {
    let mut out = format!(
        r#"<table><caption class="hidden">{}</caption><thead><tr>"#,
        Escaped(caption)
    );
    for cell in head {
        let _ = write!(out, r#"<th scope="col">{cell}</th>"#);
    }
    out += "</tr></thead><tbody>";
    // Each cell labelled with its heading, for a narrow screen.
    out += &super::parts::labelled_rows(head, body);
    out + "</tbody></table>"
}

/// A form posting `fields` (and the CSRF token) to `action`, shown as one
/// button labelled `label`; `class` styles it (`approve`, `deny`, …).
pub fn button(action: &str, csrf: &str, fields: &[(&str, &str)], label: &str, class: &str) -> String {
    let mut out = format!(
        r#"<form method="post" action="{}" class="inline"><input type="hidden" name="csrf" value="{}">"#,
        Escaped(action),
        Escaped(csrf)
    );
    for (name, value) in fields {
        let _ = write!(
            out,
            r#"<input type="hidden" name="{}" value="{}">"#,
            Escaped(name),
            Escaped(value)
        );
    }
    let _ = write!(
        out,
        r#"<button type="submit" class="{}">{}</button></form>"#,
        Escaped(class),
        Escaped(label)
    );
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn time_left_reads_as_a_person_says_it() {
        assert_eq!(time_left(0), "no time left: it times out now");
        assert_eq!(time_left(1), "1 s left");
        assert_eq!(time_left(59), "59 s left");
        assert_eq!(time_left(60), "1 min left");
        assert_eq!(time_left(260), "4 min 20 s left");
        assert_eq!(time_left(3600 + 5 * 60 + 9), "1 h 5 min left");
        assert_eq!(time_left(2 * 86_400 + 3 * 3600), "2 d 3 h left");
    }

    #[test]
    fn times_are_ago_or_ahead_and_a_missing_one_is_a_dash() {
        assert_eq!(relative(&json!({"at_ago_s": 180}), "at"), "3 min ago");
        assert_eq!(relative(&json!({"next_wake_in_s": 20}), "next_wake"), "in 20 s");
        assert_eq!(relative(&json!({"at_ago_s": 0}), "at"), "just now");
        assert_eq!(
            relative(&json!({"at_ms": 5}), "at"),
            "—",
            "the page never counts from a moment itself"
        );
    }

    #[test]
    fn a_button_escapes_what_it_posts() {
        let html = button("/loops/run", "tok\"en", &[("name", "a<b")], "Run <now>", "go");
        assert!(html.contains(r#"value="tok&quot;en""#), "{html}");
        assert!(html.contains(r#"name="name" value="a&lt;b""#), "{html}");
        assert!(html.contains("Run &lt;now&gt;"), "{html}");
        assert!(!html.contains("<now>") && !html.contains("a<b"), "{html}");
    }
}
