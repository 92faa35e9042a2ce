//! A link code said where others read it. `/link CODE` makes whoever sends
//! it one person with whoever asked for the code, so a code said in a group
//! must die at once, whoever reads it next. A gateway that drops group
//! messages not addressed to the bot still hands such a one to the core,
//! marked [`Inbound::overheard`](crate::Inbound::overheard): the core voids
//! the code, tells whoever asked for it, and answers nothing there.

/// Whether `text` names a link code as a person would send it (`/link
/// CODE`, or `/link@bot CODE` as Telegram writes commands in groups).
pub fn names_a_link_code(text: &str) -> bool {
    let mut words = text.split_whitespace();
    let command = words.next().and_then(|word| word.strip_prefix('/'));
    let command = command.map(|command| command.split('@').next().unwrap_or(command));
    command == Some("link") && words.next().is_some()
}

#[cfg(test)]
mod tests {
    use super::names_a_link_code;

    #[test]
    fn only_link_with_a_code_names_one() {
        assert!(names_a_link_code("/link ABCD2345"));
        assert!(names_a_link_code("  /link@my_bot abcd2345 "));
        assert!(names_a_link_code("/link\nABCD2345"));
        assert!(!names_a_link_code("/link"), "asking for a code names none");
        assert!(!names_a_link_code("/linked ABCD2345"));
        assert!(!names_a_link_code("please /link ABCD2345"));
        assert!(!names_a_link_code("link ABCD2345"));
    }
}
