//! Byte offsets into UTF-16 code units, the unit Telegram's entities and
//! Signal's text styles count in: a `char` outside the Basic Multilingual
//! Plane (most emoji) is two units, every other `char` one, whatever its
//! length in UTF-8.

use std::ops::Range;

/// The length of `text` in UTF-16 code units.
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The UTF-16 offset of byte offset `at` of `text` (a `char` boundary).
///
/// # Panics
/// If `at` is not a `char` boundary of `text`.
pub fn utf16_offset(text: &str, at: usize) -> usize {
    utf16_len(&text[..at])
}

/// Every range of `ranges` (byte ranges on `char` boundaries of `text`) in
/// UTF-16 code units, in the same order; one pass over the text however many
/// ranges there are.
///
/// # Panics
/// If a range ends past the text.
pub fn utf16_ranges(text: &str, ranges: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut bounds: Vec<usize> = ranges.iter().flat_map(|range| [range.start, range.end]).collect();
    bounds.sort_unstable();
    bounds.dedup();
    assert!(
        bounds.last().is_none_or(|&last| last <= text.len()),
        "a range ends past the text"
    );
    let mut units = Vec::with_capacity(bounds.len());
    let (mut byte, mut unit) = (0, 0);
    let mut chars = text.chars();
    for &bound in &bounds {
        while byte < bound {
            let c = chars.next().expect("bounds lie within the text");
            byte += c.len_utf8();
            unit += c.len_utf16();
        }
        units.push(unit);
    }
    let convert = |at: usize| units[bounds.binary_search(&at).expect("every bound was converted")];
    ranges
        .iter()
        .map(|range| convert(range.start)..convert(range.end))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emoji_are_two_units_and_cjk_one() {
        assert_eq!(utf16_len("a😀中é"), 5);
        assert_eq!(utf16_offset("😀中b", "😀中".len()), 3);
    }

    #[test]
    fn ranges_convert_in_any_order() {
        let text = "😀 bold 中文 code";
        let bold = text.find("bold").unwrap();
        let code = text.find("code").unwrap();
        let ranges = utf16_ranges(text, &[code..code + 4, bold..bold + 4, 0..text.len()]);
        assert_eq!(ranges, vec![11..15, 3..7, 0..15]);
    }
}
