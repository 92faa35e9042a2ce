//! A reply as the Matrix messages that carry it: its Markdown rendered
//! once, split where a reader would, and each part as a message's content
//! (the plain `body` and its HTML), as an edit of an earlier message, or
//! in a thread.
//!
//! A homeserver refuses an event over 65,536 bytes, and an event carries
//! its text twice (plain and HTML, where every `<` is four bytes), twice
//! again when it is an edit (the new content beside the fallback), and a
//! third more once encrypted (base64). A part of at most [`PART_LIMIT`]
//! bytes of text stays under the limit in every one of these cases.

use passepartout_gateway::markup::{self, Flavor, Unit, render};
use serde_json::{Value, json};

use super::html;

/// The most bytes of UTF-8 text one message carries.
pub const PART_LIMIT: usize = 4000;

/// One message of a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The text every client can read.
    pub body: String,
    /// The same in the HTML subset Matrix clients show.
    pub html: String,
}

/// Where a message goes besides its room: quoting a message, in a thread.
#[derive(Clone, Copy, Debug, Default)]
pub struct Place<'a> {
    /// The message it answers.
    pub reply_to: Option<&'a str>,
    /// The thread's root, when the message it answers is in a thread.
    pub thread: Option<&'a str>,
}

/// The parts of Markdown `text`, in order: none for a blank text.
pub fn parts(text: &str) -> Vec<Part> {
    markup::split(&render(text, Flavor::RICH), PART_LIMIT, Unit::Utf8)
        .into_iter()
        .map(markup::Styled::trim_end)
        .filter(|part| !part.text.is_empty())
        .map(|part| Part {
            html: html::to_html(&part),
            body: part.text,
        })
        .collect()
}

/// The first part of `text`, for an edit that replaces one message: a
/// text longer than a message is cut at the first part's end.
pub fn first_part(text: &str) -> Part {
    parts(text).into_iter().next().unwrap_or_else(|| Part {
        body: " ".into(),
        html: " ".into(),
    })
}

/// The content of a message showing `part`: a notice for what the daemon
/// itself says (clients and other bots know it is no person's message),
/// at `place`.
pub fn content(part: &Part, notice: bool, place: Place<'_>) -> Value {
    let mut content = plain(part, notice);
    match (place.thread, place.reply_to) {
        (Some(root), reply_to) => {
            content["m.relates_to"] = json!({
                "rel_type": "m.thread",
                "event_id": root,
                "is_falling_back": reply_to.is_none(),
                "m.in_reply_to": { "event_id": reply_to.unwrap_or(root) },
            });
        }
        (None, Some(reply_to)) => {
            content["m.relates_to"] = json!({ "m.in_reply_to": { "event_id": reply_to } });
        }
        (None, None) => {}
    }
    content
}

/// The content of an edit of the message `target` to show `part`.
pub fn replacement(target: &str, part: &Part, notice: bool) -> Value {
    let new = plain(part, notice);
    json!({
        "msgtype": new["msgtype"],
        "body": format!("* {}", part.body),
        "format": "org.matrix.custom.html",
        "formatted_body": format!("* {}", part.html),
        "m.new_content": new,
        "m.relates_to": { "rel_type": "m.replace", "event_id": target },
    })
}

fn plain(part: &Part, notice: bool) -> Value {
    json!({
        "msgtype": if notice { "m.notice" } else { "m.text" },
        "body": part.body,
        "format": "org.matrix.custom.html",
        "formatted_body": part.html,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_reply_is_one_formatted_part() {
        let parts = parts("You said **hi**.\n\n");
        assert_eq!(
            parts,
            [Part {
                body: "You said hi.".into(),
                html: "You said <strong>hi</strong>.".into(),
            }]
        );
        assert!(super::parts(" \n ").is_empty(), "a blank text is no message");
    }

    #[test]
    fn a_long_reply_is_split_into_parts_that_each_fit_an_event() {
        let code: String = (0..600)
            .map(|i| format!("if a < {i} && b > {i} {{ \"x\" }}\n"))
            .collect();
        let text = format!("Here:\n\n```rust\n{code}```\n\n{}", "word ".repeat(3000));
        let parts = parts(&text);
        assert!(parts.len() >= 6, "{} parts", parts.len());
        for part in &parts {
            assert!(part.body.len() <= PART_LIMIT);
            // The worst case the limit is for: an encrypted edit.
            let edit = replacement("$target:example.org", part, false).to_string();
            assert!(edit.len() * 4 / 3 < 65_536, "{} bytes", edit.len());
        }
        let shown: String = parts
            .iter()
            .map(|part| part.body.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(shown.matches("word").count(), 3000, "no word lost at a cut");
        assert!(
            parts[1].html.starts_with("<pre><code class=\"language-rust\">"),
            "{}",
            parts[1].html
        );
    }

    #[test]
    fn a_reply_quotes_its_message_and_stays_in_its_thread() {
        let part = first_part("ok");
        let quoted = content(
            &part,
            false,
            Place {
                reply_to: Some("$q"),
                thread: None,
            },
        );
        assert_eq!(quoted["m.relates_to"], json!({ "m.in_reply_to": { "event_id": "$q" } }));
        let threaded = content(
            &part,
            true,
            Place {
                reply_to: Some("$q"),
                thread: Some("$root"),
            },
        );
        assert_eq!(threaded["msgtype"], "m.notice");
        assert_eq!(threaded["m.relates_to"]["rel_type"], "m.thread");
        assert_eq!(threaded["m.relates_to"]["event_id"], "$root");
        assert_eq!(threaded["m.relates_to"]["is_falling_back"], false);
        assert_eq!(threaded["m.relates_to"]["m.in_reply_to"]["event_id"], "$q");
    }

    #[test]
    fn an_edit_carries_the_new_content_and_a_fallback() {
        let edit = replacement("$old", &first_part("**new**"), false);
        assert_eq!(
            edit["m.relates_to"],
            json!({ "rel_type": "m.replace", "event_id": "$old" })
        );
        assert_eq!(edit["m.new_content"]["formatted_body"], "<strong>new</strong>");
        assert_eq!(edit["body"], "* new");
    }
}
