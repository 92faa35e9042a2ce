//! Splitting long replies into messages Signal takes as plain text.
//!
//! Signal clients send a body over 2000 bytes as a "long text" attachment,
//! which not every client shows inline; the gateway sends such replies as
//! several messages instead, each at most [`SIGNAL_TEXT_LIMIT`] bytes of
//! UTF-8, cut at a line break or a space when one is in the second half of the
//! window, else at a character boundary.

/// The most bytes of UTF-8 one Signal message carries as its body.
pub const SIGNAL_TEXT_LIMIT: usize = 2000;

/// `text` in parts of at most `limit` bytes (at least one character each).
pub fn split(text: &str, limit: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.len() > limit {
        let window = (1..=limit)
            .rev()
            .find(|&end| rest.is_char_boundary(end))
            .unwrap_or_else(|| {
                // `limit` is smaller than the first character: take it whole.
                rest.char_indices().nth(1).map_or(rest.len(), |(end, _)| end)
            });
        let separator = rest[..window]
            .rfind('\n')
            .filter(|&at| at >= window / 2)
            .or_else(|| rest[..window].rfind(' ').filter(|&at| at >= window / 2));
        let (part, next) = match separator {
            Some(at) => (&rest[..at], &rest[at + 1..]),
            None => (&rest[..window], &rest[window..]),
        };
        parts.push(part.to_owned());
        rest = next;
    }
    if !rest.is_empty() || parts.is_empty() {
        parts.push(rest.to_owned());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_one_part() {
        assert_eq!(split("hello", 10), vec!["hello"]);
        assert_eq!(split("", 10), vec![""]);
    }

    #[test]
    fn cuts_at_line_breaks_then_spaces_then_anywhere() {
        assert_eq!(split("aaaa\nbbbb cc", 8), vec!["aaaa", "bbbb cc"]);
        assert_eq!(split("aaaa bbbb cc", 8), vec!["aaaa", "bbbb cc"]);
        assert_eq!(split("abcdefghijkl", 5), vec!["abcde", "fghij", "kl"]);
    }

    #[test]
    fn never_cuts_a_character_and_respects_the_limit() {
        let text = "é".repeat(3000);
        let parts = split(&text, SIGNAL_TEXT_LIMIT);
        assert!(parts.iter().all(|part| part.len() <= SIGNAL_TEXT_LIMIT));
        assert_eq!(parts.concat(), text);
        assert_eq!(split("😀😀", 3), vec!["😀", "😀"]);
    }
}
