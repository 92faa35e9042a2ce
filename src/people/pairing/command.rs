//! `/pair approve CODE [approver]` (or `/pair CODE [approver]`) in a chat: an owner approves a pairing code
//! where they talk to the assistant. Read by the intake before anything is
//! journaled, so neither the command nor its code reaches the model or the
//! history.

use std::str::SplitWhitespace;

use passepartout_gateway::{Inbound, InboundBody};

/// An owner's `/pair` command.
#[derive(Clone, PartialEq, Eq)]
pub struct PairCommand {
    /// What they typed as the code (read by [`super::Code::parse`]).
    pub code: String,
    /// `approver` followed the code.
    pub approver: bool,
}

impl std::fmt::Debug for PairCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PairCommand")
            .field("approver", &self.approver)
            .finish_non_exhaustive()
    }
}

/// The `/pair` command `inbound` is, if it is one (`/pair@bot` as Telegram
/// writes commands in groups counts too).
pub fn parse(inbound: &Inbound) -> Option<PairCommand> {
    let (_, mut words) = command_words(inbound, &["pair"])?;
    let mut code = words.next().unwrap_or_default();
    if code.eq_ignore_ascii_case("approve") {
        // As the CLI says it (`pair approve CODE`), and as owners are told to.
        code = words.next().unwrap_or_default();
    }
    let code = code.to_owned();
    let approver = words.next().is_some_and(|w| w.eq_ignore_ascii_case("approver"));
    Some(PairCommand { code, approver })
}

/// Which of the commands `names` (without their `/`) the text `inbound` starts
/// with, `/name@bot` as Telegram writes commands in groups counting too, and
/// the words after it: how the commands the intake answers itself are read.
pub fn command_words<'a>(inbound: &'a Inbound, names: &[&'static str]) -> Option<(&'static str, SplitWhitespace<'a>)> {
    let InboundBody::Text { text } = &inbound.body else {
        return None;
    };
    let mut words = text.split_whitespace();
    let typed = words.next()?.strip_prefix('/')?;
    let typed = typed.split('@').next().unwrap_or(typed);
    let name = names.iter().find(|name| **name == typed)?;
    Some((name, words))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests_support::inbound;

    fn text(text: &str) -> Inbound {
        inbound("1", "m", text)
    }

    #[test]
    fn pair_commands_are_read_with_their_code_and_role() {
        let plain = parse(&text("/pair abcd2345")).unwrap();
        assert_eq!((plain.code.as_str(), plain.approver), ("abcd2345", false));
        let approver = parse(&text("/pair@my_bot ABCD2345 approver")).unwrap();
        assert_eq!((approver.code.as_str(), approver.approver), ("ABCD2345", true));
        assert_eq!(
            parse(&text("/pair")).unwrap().code,
            "",
            "no code: refused as a wrong one"
        );
        let worded = parse(&text("/pair approve ABCD2345 approver")).unwrap();
        assert_eq!((worded.code.as_str(), worded.approver), ("ABCD2345", true));
        assert_eq!(parse(&text("/pair approve")).unwrap().code, "", "no code after approve");
        assert_eq!(parse(&text("please /pair ABCD2345")), None);
        assert_eq!(parse(&text("/pairing ABCD2345")), None);
    }
}
