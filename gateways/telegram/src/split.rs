//! Splitting a long reply into messages Telegram accepts.
//!
//! Telegram refuses a text longer than 4096 characters, which it counts in
//! UTF-16 code units (an emoji outside the Basic Multilingual Plane is two), and
//! teloxide does not split. [`split`] cuts a reply where a reader would: after a
//! paragraph break, else after a line break, else after a space, and only as a
//! last resort in the middle of a word — but never inside a `char`, so never
//! inside a surrogate pair.
//!
//! The rule that makes the parts exact: every separator stays at the **end of
//! the earlier part**, nothing is dropped or added, so concatenating the parts
//! gives back the original text byte for byte. A part may therefore end in
//! whitespace, and (for a text that is mostly whitespace) consist only of
//! whitespace; the sender decides what to do with such a part, since Telegram
//! refuses an empty message after trimming.

/// Telegram's limit on one message's text, in UTF-16 code units.
pub const TELEGRAM_TEXT_LIMIT: usize = 4096;

/// The smallest limit [`split`] works with: the width of the widest `char`
/// in UTF-16, so every part can hold at least one.
pub const MIN_LIMIT: usize = 2;

/// Splits `text` into parts of at most `limit_utf16` UTF-16 code units each.
///
/// - Empty input gives **no parts** (there is nothing to send).
/// - A text within the limit gives one part, the text itself.
/// - Otherwise each part is as long as the limit allows, cut at the preferred
///   boundary: the last paragraph break (`\n\n`), line break (`\n`) or other
///   whitespace that falls in the second half of the room available, in that
///   order; failing that, the last such boundary anywhere; failing that, a hard
///   cut at the last `char` boundary that fits. The second-half rule keeps an
///   early paragraph break from producing a tiny part when a line break near
///   the limit is available.
/// - Separators stay at the end of the earlier part: `parts.concat() == text`.
///
/// A `limit_utf16` below [`MIN_LIMIT`] is treated as [`MIN_LIMIT`]. A hard cut
/// keeps `char`s whole but may separate the `char`s of one grapheme (a flag, a
/// skin-tone emoji); it only happens to a single "word" longer than the limit.
pub fn split(text: &str, limit_utf16: usize) -> Vec<String> {
    let limit = limit_utf16.max(MIN_LIMIT);
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let fit = fitting_prefix_len(rest, limit);
        if fit == rest.len() {
            parts.push(rest.to_owned());
            break;
        }
        let cut = best_cut(&rest[..fit]);
        let (part, tail) = rest.split_at(cut);
        parts.push(part.to_owned());
        rest = tail;
    }
    parts
}

/// Counts `text` in UTF-16 code units, as Telegram does.
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The byte length of the longest prefix of `text` within `limit` UTF-16 units.
/// Always a `char` boundary; positive whenever `limit >= MIN_LIMIT` and `text`
/// is not empty.
fn fitting_prefix_len(text: &str, limit: usize) -> usize {
    let mut units = 0;
    for (at, c) in text.char_indices() {
        units += c.len_utf16();
        if units > limit {
            return at;
        }
    }
    text.len()
}

/// Where to end the part, in bytes, given the `window` that fits. Always in
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

    /// Checks the two promises every split makes.
    fn assert_sound(text: &str, limit: usize, parts: &[String]) {
        assert_eq!(parts.concat(), text, "parts must rejoin to the original");
        for part in parts {
            assert!(!part.is_empty(), "no empty parts in {parts:?}");
            assert!(
                utf16_len(part) <= limit.max(MIN_LIMIT),
                "part {part:?} is {} units, limit {limit}",
                utf16_len(part)
            );
        }
    }

    #[test]
    fn empty_text_gives_no_parts() {
        assert!(split("", 10).is_empty());
    }

    #[test]
    fn short_text_is_one_unchanged_part() {
        assert_eq!(split("hello world", 4096), vec!["hello world"]);
        assert_eq!(split("exactly10!", 10), vec!["exactly10!"]);
    }

    #[test]
    fn splits_after_a_paragraph_break_first() {
        let text = "first para line\nstill first\n\nsecond para";
        let parts = split(text, 35);
        assert_eq!(parts, vec!["first para line\nstill first\n\n", "second para"]);
        assert_sound(text, 35, &parts);
    }

    #[test]
    fn splits_after_a_line_break_when_no_paragraph_fits() {
        let text = "line one here\nline two here\nline three";
        let parts = split(text, 30);
        assert_eq!(parts, vec!["line one here\nline two here\n", "line three"]);
        assert_sound(text, 30, &parts);
    }

    #[test]
    fn splits_after_a_space_when_no_line_break_fits() {
        let text = "alpha beta gamma delta";
        let parts = split(text, 12);
        assert_eq!(parts, vec!["alpha beta ", "gamma delta"]);
        assert_sound(text, 12, &parts);
    }

    #[test]
    fn an_early_paragraph_break_yields_to_a_late_line_break() {
        // The paragraph break is in the first half of the window: cutting there
        // would leave a 4-byte part, so the late line break wins.
        let text = "ab\n\ncdefghijklmnop\nqrstuvwxyz";
        let parts = split(text, 20);
        assert_eq!(parts, vec!["ab\n\ncdefghijklmnop\n", "qrstuvwxyz"]);
    }

    #[test]
    fn a_giant_word_is_cut_hard() {
        let text = "x".repeat(25);
        let parts = split(&text, 10);
        assert_eq!(parts, vec!["x".repeat(10), "x".repeat(10), "x".repeat(5)]);
    }

    #[test]
    fn emoji_count_two_units_and_are_never_cut_in_half() {
        // Nine units of ASCII, then an emoji (two units): it would end at 11.
        let text = format!("{}😀😀", "a".repeat(9));
        let parts = split(&text, 10);
        assert_eq!(parts, vec!["a".repeat(9), "😀😀".to_owned()]);
        assert_sound(&text, 10, &parts);
        // Five emoji are ten units: exactly at the limit, one part.
        assert_eq!(split("😀😀😀😀😀", 10).len(), 1);
        assert_eq!(split("😀😀😀😀😀😀", 10), vec!["😀😀😀😀😀", "😀"]);
    }

    #[test]
    fn cjk_counts_one_unit_per_character() {
        // Each of these is three bytes in UTF-8 but one unit in UTF-16.
        let text = "中".repeat(12);
        let parts = split(&text, 10);
        assert_eq!(parts, vec!["中".repeat(10), "中".repeat(2)]);
    }

    #[test]
    fn a_tiny_limit_is_raised_to_fit_any_char() {
        let parts = split("😀a", 1);
        assert_eq!(parts, vec!["😀", "a"]);
    }

    #[test]
    fn the_telegram_limit_holds_for_a_long_reply() {
        let paragraph = "Lorem ipsum dolor sit amet, 😀 consectetur adipiscing elit.\n".repeat(20);
        let text = format!("{paragraph}\n").repeat(20);
        let parts = split(&text, TELEGRAM_TEXT_LIMIT);
        assert!(parts.len() > 1);
        assert_sound(&text, TELEGRAM_TEXT_LIMIT, &parts);
        assert!(parts[..parts.len() - 1].iter().all(|p| p.ends_with("\n\n")));
    }

    /// A small deterministic generator (xorshift64*), so the property test
    /// needs no external crate and fails the same way every time.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }

        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn property_parts_fit_and_rejoin_for_generated_texts() {
        const PIECES: &[&str] = &[
            "a",
            "word",
            "longerword",
            " ",
            "  ",
            "\t",
            "\n",
            "\n\n",
            "é",
            "中文",
            "😀",
            "👍🏽",
            "🇫🇷",
            "\u{200d}",
            "x\r\n",
        ];
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for round in 0..3000 {
            let pieces = rng.below(60);
            let text: String = (0..pieces).map(|_| PIECES[rng.below(PIECES.len())]).collect();
            let limit = 1 + rng.below(40);
            let parts = split(&text, limit);
            assert_sound(&text, limit, &parts);
            if text.is_empty() {
                assert!(parts.is_empty(), "round {round}");
            }
            // A part that does not end at a boundary is a hard cut: only
            // allowed when its window held no whitespace at all and the next
            // char would not have fitted.
            for (i, part) in parts.iter().enumerate().take(parts.len().saturating_sub(1)) {
                if !part.ends_with(char::is_whitespace) {
                    assert!(
                        !part.contains(char::is_whitespace),
                        "round {round}: {part:?} cut hard past a boundary"
                    );
                    let next = parts[i + 1].chars().next().map_or(0, char::len_utf16);
                    assert!(
                        utf16_len(part) + next > limit.max(MIN_LIMIT),
                        "round {round}: {part:?} cut short"
                    );
                }
            }
        }
    }
}
