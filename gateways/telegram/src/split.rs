//! Splitting a long reply into messages Telegram accepts, entities and all.
//!
//! Telegram refuses a text longer than 4096 characters, which it counts in
//! UTF-16 code units (an emoji outside the Basic Multilingual Plane is two),
//! and teloxide does not split. The contract's
//! [`split`](passepartout_gateway::markup::split()) cuts where a reader
//! would (paragraph, line, space, else mid-word, never inside a `char`) and
//! carries a span cut by the split on into the next part, so a code block
//! split in two is `pre` in both. Here each part loses its trailing
//! whitespace (Telegram trims it anyway, and an entity must not reach past
//! the text) and a part left empty is dropped: Telegram refuses an empty
//! message.

use passepartout_gateway::markup::{self, Styled, Unit};

pub use passepartout_gateway::markup::utf16_len;

/// Telegram's limit on one message's text, in UTF-16 code units.
pub const TELEGRAM_TEXT_LIMIT: usize = 4096;

/// `styled` in the messages to send, in order: each at most `limit_utf16`
/// UTF-16 code units (at least 2, the widest `char`), none empty, none
/// ending in whitespace. Empty or blank text gives no parts.
pub fn split(styled: &Styled, limit_utf16: usize) -> Vec<Styled> {
    markup::split(styled, limit_utf16, Unit::Utf16)
        .into_iter()
        .map(Styled::trim_end)
        .filter(|part| !part.text.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::markup::{Flavor, Style, render};

    use super::*;

    #[test]
    fn blank_text_gives_no_parts() {
        assert!(split(&Styled::plain(""), 10).is_empty());
        assert!(split(&Styled::plain(" \n\n "), 10).is_empty());
    }

    #[test]
    fn parts_lose_the_whitespace_they_end_in() {
        let parts = split(&Styled::plain("alpha beta gamma delta"), 12);
        let texts: Vec<&str> = parts.iter().map(|part| part.text.as_str()).collect();
        assert_eq!(texts, ["alpha beta", "gamma delta"]);
    }

    #[test]
    fn a_code_block_split_across_parts_is_pre_in_each() {
        let code: String = (0..400).map(|i| format!("let x{i} = {i}; // 😀\n")).collect();
        let markdown = format!("Here it is:\n\n```rust\n{code}```\n\nThat is all.");
        let styled = render(&markdown, Flavor::RICH);
        let parts = split(&styled, TELEGRAM_TEXT_LIMIT);
        assert!(parts.len() >= 3, "{} parts", parts.len());
        let mut shown = String::new();
        for part in &parts {
            assert!(utf16_len(&part.text) <= TELEGRAM_TEXT_LIMIT);
            for span in &part.spans {
                assert_eq!(
                    span.style,
                    Style::Pre {
                        language: Some("rust".into())
                    }
                );
                shown.push_str(&part.text[span.range.clone()]);
                shown.push('\n');
            }
        }
        assert_eq!(shown, code, "every line of the block is in a pre entity");
    }
}
