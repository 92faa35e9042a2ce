//! Signal message ids: which message, and who wrote it.
//!
//! Signal names a message by its author and the timestamp (ms) the author's
//! device gave it; a quote needs both (`quoteTimestamp`, `quoteAuthor`). The
//! contract carries one opaque [`MessageId`], which the core journals and
//! hands back as the `in_reply_to` of the answer, so the id holds both:
//!
//! - `TIMESTAMP:AUTHOR` for a message someone else wrote, the author being
//!   their UUID (or number when signal-cli knows no UUID);
//! - `TIMESTAMP` for a message of the bot's own account: what `send` reports,
//!   and what quotes and reactions of the bot's messages (approval prompts)
//!   are turned into, so they match the ids the gateway delivered.
//!
//! Because the author travels in the id, a reply quotes the right message in
//! a group even after a restart, and two members writing in the same
//! millisecond do not share an id.

use passepartout_gateway::MessageId;

/// A message id as the gateway reads it back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SignalMessage<'a> {
    /// The author's timestamp of the message, in ms.
    pub timestamp: u64,
    /// Who wrote it; `None` for the bot's own messages.
    pub author: Option<&'a str>,
}

/// The id of a message written by `author`, or by the bot when `None`.
pub fn message_id(timestamp: u64, author: Option<&str>) -> Option<MessageId> {
    let text = match author.filter(|author| !author.is_empty()) {
        Some(author) => format!("{timestamp}:{author}"),
        None => timestamp.to_string(),
    };
    MessageId::new(text).ok()
}

/// Reads an id made by [`message_id`]; `None` for anything else.
pub fn parse(id: &MessageId) -> Option<SignalMessage<'_>> {
    let (timestamp, author) = match id.as_str().split_once(':') {
        Some((timestamp, author)) if !author.is_empty() => (timestamp, Some(author)),
        Some(_) => return None,
        None => (id.as_str(), None),
    };
    Some(SignalMessage {
        timestamp: timestamp.parse().ok()?,
        author,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_with_and_without_an_author() {
        let theirs = message_id(1_700_000_000_123, Some("0a0a-uuid")).unwrap();
        assert_eq!(theirs.as_str(), "1700000000123:0a0a-uuid");
        assert_eq!(
            parse(&theirs),
            Some(SignalMessage {
                timestamp: 1_700_000_000_123,
                author: Some("0a0a-uuid")
            })
        );
        let ours = message_id(5, None).unwrap();
        assert_eq!(ours.as_str(), "5");
        assert_eq!(
            parse(&ours),
            Some(SignalMessage {
                timestamp: 5,
                author: None
            })
        );
        assert_eq!(
            message_id(5, Some("")).unwrap().as_str(),
            "5",
            "an empty author is the bot"
        );
    }

    #[test]
    fn ids_of_other_shapes_are_not_signal_messages() {
        for other in ["callback:17", "abc", "5:", "-1:x", "approval-ABCDEFGH"] {
            assert_eq!(parse(&MessageId::new(other).unwrap()), None, "{other:?}");
        }
    }
}
