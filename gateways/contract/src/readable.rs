//! The words a gateway hands in, as text, for what a person sends that is
//! neither text nor media the core fetches: a sticker, a shared contact. One
//! wording for every platform, so the model reads them alike.

/// "[sticker 😀]", or "[sticker]" when the platform gives no emoji.
pub fn sticker(emoji: Option<&str>) -> String {
    match emoji.filter(|emoji| !emoji.is_empty()) {
        Some(emoji) => format!("[sticker {emoji}]"),
        None => "[sticker]".to_owned(),
    }
}

/// "[contact Ada Lovelace, +44 20 7946 0000]" from the contact's parts
/// that are not empty, or "[contact]" when none is left.
pub fn contact<'a>(parts: impl IntoIterator<Item = &'a str>) -> String {
    let parts: Vec<&str> = parts.into_iter().filter(|part| !part.is_empty()).collect();
    if parts.is_empty() {
        "[contact]".to_owned()
    } else {
        format!("[contact {}]", parts.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blank_parts_are_left_out() {
        assert_eq!(sticker(Some("😀")), "[sticker 😀]");
        assert_eq!(sticker(Some("")), "[sticker]");
        assert_eq!(sticker(None), "[sticker]");
        assert_eq!(contact(["Ada Lovelace", "", "+44 1"]), "[contact Ada Lovelace, +44 1]");
        assert_eq!(contact(["", ""]), "[contact]");
    }
}
