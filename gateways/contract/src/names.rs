//! People's names as a platform gives them, made fit to show beside an id.
//!
//! A display name (Telegram's first and last name, Signal's profile name)
//! is typed by the person it names, so it is untrusted text: it could be
//! long, carry control or bidirectional characters that reorder what
//! follows it, pose as someone else's id (`Bob (telegram:42)`), or carry
//! Markdown that a notice would render. [`clean_name`] keeps letters,
//! marks, numbers, spaces, dashes, symbols (emoji) and a few harmless marks
//! of punctuation, and caps the length; what is left is inert in plain text
//! and in Markdown alike, and cannot hold the `(`, `@` or `:` an id is shown
//! with. A username (Telegram's `@name`) is kept only when it has the
//! platform's form ([`clean_username`]). [`shown`] puts the pieces together
//! the one way people are shown everywhere. Names are never used to decide
//! anything; ids are.

use unicode_general_category::{GeneralCategory, get_general_category};

/// The longest name kept, in characters (Telegram allows 64 for a first
/// name and 64 more for a last one; a line naming someone stays readable).
pub const NAME_MAX_CHARS: usize = 48;

/// The longest username kept (Telegram's limit).
const USERNAME_MAX_CHARS: usize = 32;

/// Punctuation that names commonly hold and no markup reads: the period,
/// comma, apostrophes, middle dots, and the question and exclamation marks
/// (`!` opens an image only before `[`, which is never kept).
const KEPT_PUNCTUATION: &[char] = &['.', ',', '\'', '!', '?', '\u{2019}', '\u{2018}', '\u{00B7}', '\u{30FB}'];

/// `raw` as a name fit to show, or none when nothing showable is left.
pub fn clean_name(raw: &str) -> Option<String> {
    let mut out = String::new();
    let mut kept = 0;
    let mut space = false;
    let mut cut = false;
    for c in raw.chars() {
        let Some(c) = showable(c) else { continue };
        if c == ' ' {
            space = !out.is_empty();
            continue;
        }
        if kept == NAME_MAX_CHARS {
            cut = true;
            break;
        }
        // Nothing but a letter, number or symbol starts a name, so it never
        // begins a Markdown list or quote where a notice starts with it.
        if out.is_empty() && !starts(c) {
            continue;
        }
        if space {
            out.push(' ');
            space = false;
        }
        out.push(c);
        kept += 1;
    }
    // "1986. Ada" at a line's start would be an ordered list.
    if let Some(dot) = out.find(|c: char| !c.is_ascii_digit())
        && dot > 0
        && out[dot..].starts_with('.')
    {
        out.remove(dot);
    }
    let trimmed = out.trim_end_matches(['\u{200C}', '\u{200D}']).len();
    out.truncate(trimmed);
    if out.is_empty() {
        return None;
    }
    if cut {
        out.push('…');
    }
    Some(out)
}

/// `raw` as a username (`ada_lovelace`, without the `@`) if it has the
/// form Telegram gives them: ASCII letters, digits and underscores,
/// starting with a letter and ending with a letter or digit.
pub fn clean_username(raw: &str) -> Option<String> {
    let raw = raw.strip_prefix('@').unwrap_or(raw);
    let well_formed = (2..=USERNAME_MAX_CHARS).contains(&raw.len())
        && raw.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && raw.starts_with(|c: char| c.is_ascii_alphabetic())
        && raw.ends_with(|c: char| c.is_ascii_alphanumeric());
    well_formed.then(|| raw.to_owned())
}

/// A person as people read them: their name, their `@username`, then the
/// id they are known by in brackets (`Ada Lovelace @ada (telegram:42)`);
/// the id alone when the platform gave neither. `name` and `username` are
/// cleaned here again, so a caller cannot show them raw by mistake.
pub fn shown(name: Option<&str>, username: Option<&str>, id: &str) -> String {
    let name = name.and_then(clean_name);
    let username = username.and_then(clean_username);
    match (name, username) {
        (None, None) => id.to_owned(),
        (Some(name), None) => format!("{name} ({id})"),
        (None, Some(username)) => format!("@{username} ({id})"),
        (Some(name), Some(username)) => format!("{name} @{username} ({id})"),
    }
}

/// `c` as it may appear in a name: a separator of any kind becomes a
/// space; none when it is not kept.
fn showable(c: char) -> Option<char> {
    use GeneralCategory as G;
    if c == '\u{200C}' || c == '\u{200D}' {
        // The joiners some scripts and emoji sequences need; they move nothing.
        return Some(c);
    }
    match get_general_category(c) {
        G::SpaceSeparator | G::LineSeparator | G::ParagraphSeparator | G::Control => Some(' '),
        G::UppercaseLetter
        | G::LowercaseLetter
        | G::TitlecaseLetter
        | G::OtherLetter
        | G::NonspacingMark
        | G::SpacingMark
        | G::EnclosingMark
        | G::DecimalNumber
        | G::LetterNumber
        | G::OtherNumber
        | G::DashPunctuation
        | G::OtherSymbol => Some(c),
        // Modifier letters include look-alikes of the colon (U+02D0).
        G::ModifierLetter => (!is_colon_like(c)).then_some(c),
        // Emoji skin tones only; the rest are accents on their own and
        // look-alikes of the colon (U+A789).
        G::ModifierSymbol => ('\u{1F3FB}'..='\u{1F3FF}').contains(&c).then_some(c),
        G::OtherPunctuation | G::InitialPunctuation | G::FinalPunctuation => KEPT_PUNCTUATION.contains(&c).then_some(c),
        _ => None,
    }
}

fn is_colon_like(c: char) -> bool {
    matches!(c, '\u{02D0}' | '\u{02D1}' | '\u{A789}' | '\u{A78A}')
}

/// Whether a name may start with `c`.
fn starts(c: char) -> bool {
    c.is_alphanumeric() || get_general_category(c) == GeneralCategory::OtherSymbol
}

#[cfg(test)]
#[path = "names_tests.rs"]
mod tests;
