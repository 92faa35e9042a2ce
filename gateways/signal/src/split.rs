//! Splitting long replies into messages Signal shows inline, text styles
//! and all.
//!
//! Signal clients send a body over 2000 bytes as a "long text" attachment,
//! which not every client shows inline; the gateway sends such replies as
//! several messages instead, each at most [`SIGNAL_TEXT_LIMIT`] bytes of
//! UTF-8. The contract's [`split`](passepartout_gateway::markup::split())
//! cuts where a reader would (paragraph, line, space, else mid-word, never
//! inside a `char`) and carries a style cut by the split on into the next
//! part; here each part loses the whitespace it ends in, and a part left
//! empty is dropped.

use passepartout_gateway::markup::{self, Styled, Unit};

/// The most bytes of UTF-8 one Signal message carries as its body.
pub const SIGNAL_TEXT_LIMIT: usize = 2000;

/// `styled` in the messages to send, in order: each at most `limit` bytes
/// (at least one character), none empty, none ending in whitespace. Blank
/// text gives no parts.
pub fn split(styled: &Styled, limit: usize) -> Vec<Styled> {
    markup::split(styled, limit, Unit::Utf8)
        .into_iter()
        .map(Styled::trim_end)
        .filter(|part| !part.text.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(text: &str, limit: usize) -> Vec<String> {
        split(&Styled::plain(text), limit)
            .into_iter()
            .map(|part| part.text)
            .collect()
    }

    #[test]
    fn short_text_is_one_part_and_blank_text_none() {
        assert_eq!(texts("hello", 10), ["hello"]);
        assert!(texts("", 10).is_empty());
        assert!(texts(" \n ", 10).is_empty());
    }

    #[test]
    fn cuts_at_line_breaks_then_spaces_then_anywhere() {
        assert_eq!(texts("aaaa\nbbbb cc", 8), ["aaaa", "bbbb cc"]);
        assert_eq!(texts("aaaa bbbb cc", 8), ["aaaa", "bbbb cc"]);
        assert_eq!(texts("abcdefghijkl", 5), ["abcde", "fghij", "kl"]);
    }

    #[test]
    fn never_cuts_a_character_and_respects_the_limit() {
        let text = "é".repeat(3000);
        let parts = texts(&text, SIGNAL_TEXT_LIMIT);
        assert!(parts.iter().all(|part| part.len() <= SIGNAL_TEXT_LIMIT));
        assert_eq!(parts.concat(), text);
        assert_eq!(texts("😀😀", 3), ["😀", "😀"]);
    }
}
