//! Splitting a long [`Styled`] text into parts a platform accepts, with the
//! styling kept whole: a span the cut goes through is carried on in the
//! next part, rebased to that part's start, so a code block split in two is
//! a code block in both.
//!
//! A part ends where a reader would cut: after a paragraph break, else
//! after a line break, else after a space, and only as a last resort in the
//! middle of a word — never inside a `char`. Separators stay at the end of
//! the earlier part and nothing is dropped or added, so the parts
//! concatenated give back the text byte for byte; senders trim each part's
//! end themselves ([`Styled::trim_end`]).

use std::ops::Range;

use super::styled::Styled;

/// How a platform counts a message's length.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// UTF-16 code units (Telegram): an emoji outside the BMP is two.
    Utf16,
    /// Bytes of UTF-8 (Signal's inline body).
    Utf8,
}

impl Unit {
    /// The length of `c` in this unit.
    pub fn of(self, c: char) -> usize {
        match self {
            Unit::Utf16 => c.len_utf16(),
            Unit::Utf8 => c.len_utf8(),
        }
    }

    /// The length of `text` in this unit.
    pub fn len(self, text: &str) -> usize {
        match self {
            Unit::Utf16 => text.chars().map(char::len_utf16).sum(),
            Unit::Utf8 => text.len(),
        }
    }

    /// The width of the widest `char`: the smallest limit that lets every
    /// part hold at least one.
    pub fn min_limit(self) -> usize {
        match self {
            Unit::Utf16 => 2,
            Unit::Utf8 => 4,
        }
    }
}

/// `styled` in parts of at most `limit` units each (a limit below
/// [`Unit::min_limit`] counts as that), in order. Empty text gives no parts.
pub fn split(styled: &Styled, limit: usize, unit: Unit) -> Vec<Styled> {
    cuts(&styled.text, limit, unit)
        .into_iter()
        .map(|range| styled.slice(range))
        .collect()
}

/// Where `text` is cut into parts of at most `limit` units: consecutive
/// byte ranges covering it exactly.
///
/// Each part is as long as the limit allows, ending at the last paragraph
/// break (`\n\n`), line break or other whitespace that falls in the second
/// half of the room, in that order; failing that, at the last such boundary
/// anywhere; failing that, at the last `char` that fits. The second-half
/// rule keeps an early paragraph break from making a tiny part when a line
/// break near the limit is there.
pub fn cuts(text: &str, limit: usize, unit: Unit) -> Vec<Range<usize>> {
    let limit = limit.max(unit.min_limit());
    let mut ranges = Vec::new();
    let mut start = 0;
    while start < text.len() {
        let rest = &text[start..];
        let fit = fitting_prefix_len(rest, limit, unit);
        let end = if fit == rest.len() { fit } else { best_cut(&rest[..fit]) };
        ranges.push(start..start + end);
        start += end;
    }
    ranges
}

/// The byte length of the longest prefix of `text` within `limit` units:
/// a `char` boundary, positive for a non-empty text and a limit of at
/// least [`Unit::min_limit`].
fn fitting_prefix_len(text: &str, limit: usize, unit: Unit) -> usize {
    if unit == Unit::Utf8 {
        if text.len() <= limit {
            return text.len();
        }
        return (0..=limit).rev().find(|&at| text.is_char_boundary(at)).unwrap_or(0);
    }
    let mut units = 0;
    for (at, c) in text.char_indices() {
        units += unit.of(c);
        if units > limit {
            return at;
        }
    }
    text.len()
}

/// Where to end the part, in bytes, given the `window` that fits: always in
/// `1..=window.len()` for a non-empty window.
fn best_cut(window: &str) -> usize {
    let half = window.len() / 2;
    let boundaries: [fn(&str) -> Option<usize>; 3] = [after_last_paragraph, after_last_line, after_last_space];
    boundaries
        .iter()
        .find_map(|find| find(window).filter(|&cut| cut > half))
        .or_else(|| boundaries.iter().find_map(|find| find(window)))
        .unwrap_or(window.len())
}

fn after_last_paragraph(window: &str) -> Option<usize> {
    window.rfind("\n\n").map(|at| at + 2)
}

fn after_last_line(window: &str) -> Option<usize> {
    window.rfind('\n').map(|at| at + 1)
}

fn after_last_space(window: &str) -> Option<usize> {
    window
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())
        .map(|(at, c)| at + c.len_utf8())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::markup::{Span, Style};

    fn texts(text: &str, limit: usize, unit: Unit) -> Vec<&str> {
        cuts(text, limit, unit).into_iter().map(|range| &text[range]).collect()
    }

    #[test]
    fn empty_text_gives_no_parts() {
        assert!(cuts("", 10, Unit::Utf16).is_empty());
    }

    #[test]
    fn a_short_text_is_one_part() {
        assert_eq!(texts("exactly10!", 10, Unit::Utf16), ["exactly10!"]);
    }

    #[test]
    fn paragraph_then_line_then_space_then_anywhere() {
        let text = "first para line\nstill first\n\nsecond para";
        assert_eq!(
            texts(text, 35, Unit::Utf16),
            ["first para line\nstill first\n\n", "second para"]
        );
        let text = "line one here\nline two here\nline three";
        assert_eq!(
            texts(text, 30, Unit::Utf16),
            ["line one here\nline two here\n", "line three"]
        );
        assert_eq!(
            texts("alpha beta gamma delta", 12, Unit::Utf16),
            ["alpha beta ", "gamma delta"]
        );
        assert_eq!(
            texts(&"x".repeat(25), 10, Unit::Utf16),
            ["x".repeat(10), "x".repeat(10), "x".repeat(5)]
        );
    }

    #[test]
    fn an_early_paragraph_break_yields_to_a_late_line_break() {
        let text = "ab\n\ncdefghijklmnop\nqrstuvwxyz";
        assert_eq!(texts(text, 20, Unit::Utf16), ["ab\n\ncdefghijklmnop\n", "qrstuvwxyz"]);
    }

    #[test]
    fn units_count_as_the_platform_does() {
        let text = format!("{}😀😀", "a".repeat(9));
        assert_eq!(texts(&text, 10, Unit::Utf16), ["a".repeat(9), "😀😀".to_owned()]);
        assert_eq!(
            texts(&"中".repeat(12), 10, Unit::Utf16),
            ["中".repeat(10), "中".repeat(2)]
        );
        // Three bytes each in UTF-8: three fit in ten bytes.
        assert_eq!(
            texts(&"中".repeat(4), 10, Unit::Utf8),
            ["中".repeat(3), "中".to_owned()]
        );
        assert_eq!(texts("😀a", 1, Unit::Utf16), ["😀", "a"]);
        assert_eq!(texts("😀a", 1, Unit::Utf8), ["😀", "a"]);
    }

    #[test]
    fn a_span_cut_by_a_split_goes_on_in_the_next_part() {
        let code = "let a = 1;\nlet b = 2;\nlet c = 3;";
        let styled = Styled {
            text: format!("Look:\n\n{code}"),
            spans: vec![Span {
                range: 7..7 + code.len(),
                style: Style::Pre {
                    language: Some("rust".into()),
                },
            }],
        };
        let parts = split(&styled, 20, Unit::Utf16);
        assert_eq!(parts.iter().map(|p| p.text.as_str()).collect::<String>(), styled.text);
        assert!(parts.len() > 2, "{parts:?}");
        let pre: Vec<&str> = parts
            .iter()
            .map(|part| {
                assert_eq!(part.spans.len(), 1, "{part:?}");
                assert!(matches!(&part.spans[0].style, Style::Pre { language: Some(l) } if l == "rust"));
                &part.text[part.spans[0].range.clone()]
            })
            .collect();
        assert_eq!(pre.concat(), code, "every piece of the block is still pre");
    }
}
