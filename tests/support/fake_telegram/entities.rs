//! The checks Telegram makes on a message's `entities`, so that a test
//! fails where Telegram would answer "Bad Request: can't parse entities".
//!
//! From the Bot API's description of `MessageEntity` and its formatting
//! options: every entity has a known type, lies within the text counted in
//! UTF-16 code units (and not between the halves of a surrogate pair), is
//! not empty; a `text_link` has a URL Telegram opens; two entities that
//! share characters are nested, one wholly inside the other; quotes do not
//! nest in each other but hold any other entity; `code` and `pre` contain
//! no other entity and are part of none but a quote; and besides bold,
//! italic, underline, strikethrough and spoiler (which nest with anything
//! but code) no two entities contain each other.

use serde_json::Value;

use super::ApiError;

const TYPES: &[&str] = &[
    "mention",
    "hashtag",
    "cashtag",
    "bot_command",
    "url",
    "email",
    "phone_number",
    "bold",
    "italic",
    "underline",
    "strikethrough",
    "spoiler",
    "blockquote",
    "expandable_blockquote",
    "code",
    "pre",
    "text_link",
    "text_mention",
    "custom_emoji",
];
const NESTING_FREELY: &[&str] = &["bold", "italic", "underline", "strikethrough", "spoiler"];
const QUOTES: &[&str] = &["blockquote", "expandable_blockquote"];
const CODE: &[&str] = &["code", "pre"];
const LINK_SCHEMES: &[&str] = &["http://", "https://", "tg://", "mailto:"];

/// One entity, checked on its own.
struct Entity<'a> {
    kind: &'a str,
    start: usize,
    end: usize,
}

/// Checks `entities` (the parameter, absent or a list) against `text`.
pub(super) fn check_entities(text: &str, entities: &Value) -> Result<(), ApiError> {
    let list = match entities {
        Value::Null => return Ok(()),
        Value::Array(list) => list,
        _ => return Err(refused("entities must be an array")),
    };
    let units: Vec<u16> = text.encode_utf16().collect();
    let checked = list
        .iter()
        .enumerate()
        .map(|(index, entity)| check_one(&units, index, entity))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, a) in checked.iter().enumerate() {
        for b in &checked[i + 1..] {
            check_pair(a, b)?;
        }
    }
    Ok(())
}

fn check_one<'a>(units: &[u16], index: usize, entity: &'a Value) -> Result<Entity<'a>, ApiError> {
    let kind = entity["type"]
        .as_str()
        .ok_or_else(|| refused(&format!("entity {index} has no type")))?;
    if !TYPES.contains(&kind) {
        return Err(refused(&format!("unsupported entity type \"{kind}\"")));
    }
    let (Some(offset), Some(length)) = (entity["offset"].as_u64(), entity["length"].as_u64()) else {
        return Err(refused(&format!("entity {index} needs an offset and a length")));
    };
    let (start, end) = (offset as usize, (offset + length) as usize);
    if length == 0 || end > units.len() {
        return Err(refused(&format!(
            "entity {index} ({kind}, {offset}+{length}) is outside the text of {} UTF-16 units",
            units.len()
        )));
    }
    let inside_pair = |at: usize| at > 0 && at < units.len() && (0xDC00..0xE000).contains(&units[at]);
    if inside_pair(start) || inside_pair(end) {
        return Err(refused(&format!("entity {index} ({kind}) cuts a surrogate pair")));
    }
    if kind == "text_link" {
        let url = entity["url"].as_str().unwrap_or_default();
        if !LINK_SCHEMES.iter().any(|scheme| url.starts_with(scheme)) {
            return Err(refused(&format!("wrong URL {url:?} in entity {index}")));
        }
    }
    if kind == "pre" && !matches!(entity["language"], Value::Null | Value::String(_)) {
        return Err(refused(&format!("entity {index}: language must be a string")));
    }
    Ok(Entity { kind, start, end })
}

fn check_pair(a: &Entity<'_>, b: &Entity<'_>) -> Result<(), ApiError> {
    let disjoint = a.end <= b.start || b.end <= a.start;
    if disjoint {
        return Ok(());
    }
    let nested = (a.start <= b.start && b.end <= a.end) || (b.start <= a.start && a.end <= b.end);
    let what = format!(
        "{} {}..{} and {} {}..{}",
        a.kind, a.start, a.end, b.kind, b.start, b.end
    );
    if !nested {
        return Err(refused(&format!("entities {what} overlap partially")));
    }
    let quotes = (QUOTES.contains(&a.kind), QUOTES.contains(&b.kind));
    if quotes == (true, true) {
        return Err(refused(&format!("quotes can't be nested: {what}")));
    }
    let quoted = quotes.0 || quotes.1;
    if !quoted && (CODE.contains(&a.kind) || CODE.contains(&b.kind)) {
        return Err(refused(&format!(
            "code can't contain or be part of other entities: {what}"
        )));
    }
    let free = |kind: &str| NESTING_FREELY.contains(&kind) || QUOTES.contains(&kind);
    if !free(a.kind) && !free(b.kind) {
        return Err(refused(&format!("entities can't contain each other: {what}")));
    }
    Ok(())
}

fn refused(why: &str) -> ApiError {
    ApiError::bad_request(&format!("can't parse entities: {why}"))
}
