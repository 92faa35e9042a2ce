//! Escaping for Telegram's HTML parse mode.
//!
//! Replies go out as plain text with entities (see [`crate::reply`]); HTML
//! is for markup the gateway itself adds, and then every piece of text that
//! came from elsewhere goes through [`escape_html`] first.

/// Escapes `text` for a message sent with `parse_mode = HTML`.
///
/// Telegram's HTML mode requires exactly `&`, `<` and `>` to be written as
/// entities; quotes need no escaping outside attribute values, and the gateway
/// writes no attributes from untrusted text.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_the_three_special_characters() {
        assert_eq!(escape_html("a < b && c > d"), "a &lt; b &amp;&amp; c &gt; d");
    }

    #[test]
    fn escapes_markup_so_it_shows_as_text() {
        assert_eq!(escape_html("<b>rm -rf</b>"), "&lt;b&gt;rm -rf&lt;/b&gt;");
    }

    #[test]
    fn escapes_an_existing_entity_again() {
        // `&amp;` typed by a person must show as `&amp;`, not as `&`.
        assert_eq!(escape_html("&amp;"), "&amp;amp;");
    }

    #[test]
    fn leaves_everything_else_alone() {
        let text = "quotes \" ' stay, emoji 😀 and 中文 too\n";
        assert_eq!(escape_html(text), text);
        assert_eq!(escape_html(""), "");
    }
}
