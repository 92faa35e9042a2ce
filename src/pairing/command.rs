//! `/pair approve CODE [approver]` (or `/pair CODE [approver]`) in a chat: an owner approves a pairing code
//! where they talk to the assistant. Read by the intake before anything is
//! journaled, so neither the command nor its code reaches the model or the
//! history.

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
    let InboundBody::Text { text } = &inbound.body else {
        return None;
    };
    let mut words = text.split_whitespace();
    let command = words.next()?;
    if command.split('@').next() != Some("/pair") {
        return None;
    }
    let mut code = words.next().unwrap_or_default();
    if code.eq_ignore_ascii_case("approve") {
        // As the CLI says it (`pair approve CODE`), and as owners are told to.
        code = words.next().unwrap_or_default();
    }
    let code = code.to_owned();
    let approver = words.next().is_some_and(|w| w.eq_ignore_ascii_case("approver"));
    Some(PairCommand { code, approver })
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, MessageId, Sender, UserId};

    use super::*;

    fn text(text: &str) -> Inbound {
        Inbound {
            conversation: ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new("1").unwrap()),
            sender: Sender::new(UserId::new("1").unwrap()),
            message_id: MessageId::new("m").unwrap(),
            reply_to: None,
            body: InboundBody::Text { text: text.into() },
            received_at_ms: 0,
        }
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
