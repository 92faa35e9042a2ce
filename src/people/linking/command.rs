//! `/link`, `/link CODE` and `/unlink` in a chat. Read by the intake before
//! anything is journaled, so neither the command nor its code reaches the
//! model or the history.

use passepartout_gateway::Inbound;

use crate::people::pairing::command::command_words;

/// A person's linking command.
#[derive(Clone, PartialEq, Eq)]
pub enum LinkCommand {
    /// `/link`: a code for this channel.
    Ask,
    /// `/link CODE`: link this channel with the one that asked for `CODE`.
    Name(String),
    /// `/unlink`: take this channel out of the person it is linked as.
    Unlink,
}

impl std::fmt::Debug for LinkCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Ask => "Ask",
            Self::Name(_) => "Name(…)",
            Self::Unlink => "Unlink",
        })
    }
}

/// The linking command `inbound` is, if it is one (`/link@bot` as Telegram
/// writes commands in groups counts too).
pub fn parse(inbound: &Inbound) -> Option<LinkCommand> {
    match command_words(inbound, &["link", "unlink"])? {
        ("link", mut words) => Some(match words.next() {
            None => LinkCommand::Ask,
            Some(code) => LinkCommand::Name(code.to_owned()),
        }),
        _ => Some(LinkCommand::Unlink),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests_support::inbound;

    fn text(text: &str) -> Inbound {
        inbound("1", "m", text)
    }

    #[test]
    fn link_commands_are_read_with_their_code() {
        assert_eq!(parse(&text("/link")), Some(LinkCommand::Ask));
        assert_eq!(parse(&text("/link@my_bot")), Some(LinkCommand::Ask));
        assert_eq!(
            parse(&text(" /link abcd2345 ")),
            Some(LinkCommand::Name("abcd2345".into()))
        );
        assert_eq!(parse(&text("/unlink")), Some(LinkCommand::Unlink));
        assert_eq!(parse(&text("/unlink@my_bot now")), Some(LinkCommand::Unlink));
        assert_eq!(parse(&text("please /link ABCD2345")), None);
        assert_eq!(parse(&text("/linked")), None);
        assert_eq!(
            format!("{:?}", LinkCommand::Name("ABCD2345".into())),
            "Name(…)",
            "never shown by Debug"
        );
    }
}
