//! Text shown for a decision, made to read exactly as it is: an approval's
//! action, a command, a tool's arguments, an audit line.
//!
//! What a person approves must be what runs. A terminal acts on an escape
//! sequence or a carriage return (`ls -la` drawn over `curl … | sh`), a
//! bidirectional control reorders what follows it on a page or in a
//! terminal, and an invisible character hides that the text differs from
//! what it seems. Each of those is shown here as a visible escape in the
//! form Rust writes it: `\r`, `\x1b` for the C0 controls and DEL,
//! `\u{202e}` for everything else. The rest is left as it is, so the text
//! stays readable and the same text is escaped the same on every surface;
//! what runs is never the shown text but the original, which callers keep.
//!
//! Shown as an escape:
//! - the C0 controls and DEL; a tab and a line break only in a [`line`],
//!   where the text must stay on one line ([`text`] keeps them, for a code
//!   block);
//! - the C1 controls (U+0080–U+009F; U+009B starts an escape sequence in
//!   some terminals as ESC `[` does);
//! - every format character (Unicode's category Cf): the bidirectional
//!   marks, embeddings, overrides and isolates (U+061C, U+200E, U+200F,
//!   U+202A–U+202E, U+2066–U+2069), the zero-width space and joiners
//!   (U+200B–U+200D), the word joiner and invisible operators
//!   (U+2060–U+2064), the byte order mark (U+FEFF), the soft hyphen, the
//!   tag characters;
//! - the line and paragraph separators (U+2028, U+2029), which break a
//!   line where a renderer honours them;
//! - spaces other than the ASCII space (a no-break space makes one word
//!   look like two), and the characters that draw nothing (the Hangul
//!   fillers, the combining grapheme joiner, the Khmer inherent vowels).
//!
//! A backslash is left as it is, so escaping twice changes nothing: a
//! daemon may escape what a client escapes again.

use std::borrow::Cow;
use std::fmt::Write as _;

use unicode_general_category::{GeneralCategory, get_general_category};

/// `text` with every character that could hide, redraw or reorder what it
/// says shown as an escape; tabs and line breaks kept (a command of several
/// lines in a code block).
pub fn text(text: &str) -> Cow<'_, str> {
    escaped(text, true)
}

/// [`text`] on one line: tabs and line breaks shown as `\t` and `\n` too
/// (a listing's line, an audit line, a code span).
pub fn line(text: &str) -> Cow<'_, str> {
    escaped(text, false)
}

/// Whether `c` is shown as an escape; `lines`: a tab and a line break stay.
fn hidden(c: char, lines: bool) -> bool {
    use GeneralCategory as G;
    if lines && (c == '\n' || c == '\t') {
        return false;
    }
    if c == ' ' {
        return false;
    }
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    matches!(
        get_general_category(c),
        G::Control | G::Format | G::LineSeparator | G::ParagraphSeparator | G::SpaceSeparator
    ) || DRAWS_NOTHING.contains(&c)
}

/// Characters of other categories that draw nothing where they stand.
const DRAWS_NOTHING: &[char] = &[
    '\u{034F}', // combining grapheme joiner
    '\u{115F}', // Hangul choseong filler
    '\u{1160}', // Hangul jungseong filler
    '\u{17B4}', // Khmer vowel inherent aq
    '\u{17B5}', // Khmer vowel inherent aa
    '\u{3164}', // Hangul filler
    '\u{FFA0}', // halfwidth Hangul filler
];

fn escaped(text: &str, lines: bool) -> Cow<'_, str> {
    if !text.chars().any(|c| hidden(c, lines)) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    for c in text.chars() {
        if !hidden(c, lines) {
            out.push(c);
            continue;
        }
        match c {
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c if c.is_ascii() => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
#[path = "visible_tests.rs"]
mod tests;
