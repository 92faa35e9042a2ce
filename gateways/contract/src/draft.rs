//! Drafts: a reply shown while the model is still writing it.
//!
//! A draft is a progress view, never the reply itself. The core streams a
//! turn's text into the gateway's [`Draft`] capability as it arrives, at the
//! pace the gateway asks for ([`DraftPace`]); the gateway shows it (Telegram
//! sends a message and edits it, the local socket prints the new text) and
//! answers with the platform messages the draft occupies. The reply the turn
//! commits then goes through the outbox as always, carrying those messages
//! in [`Outbound::drafts`](crate::Outbound::drafts): the gateway turns the
//! draft into the final, formatted reply instead of sending a second copy,
//! and removes what is left of a draft that no text took over
//! ([`OutboundBody::Withdraw`](crate::OutboundBody::Withdraw)) or whose
//! turn was stopped ([`OutboundBody::Stopped`](crate::OutboundBody::Stopped)).
//! A gateway that shows drafts thus needs nothing more for `/stop`: the
//! core records where each draft is, remembers a stop across a restart,
//! and hands the gateway the stopped draft to remove.

use std::time::Duration;

use async_trait::async_trait;

use crate::error::GatewayError;
use crate::ids::{ConversationKey, MessageId};

/// How often a gateway's drafts may change.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DraftPace {
    /// How long after its first text a draft is first shown: a quick answer
    /// needs no draft, and a platform that notifies on a new message should
    /// not do so for three words.
    pub first_after: Duration,
    /// Least time between two changes of a draft.
    pub every: Duration,
}

impl DraftPace {
    /// Every new piece shown as soon as it comes: a local terminal.
    pub const AT_ONCE: DraftPace = DraftPace {
        first_after: Duration::ZERO,
        every: Duration::ZERO,
    };

    /// A messenger's pace: first shown after a second of text (no
    /// notification for three words), then changed at most once a second.
    pub const ONCE_A_SECOND: DraftPace = DraftPace {
        first_after: Duration::from_secs(1),
        every: Duration::from_secs(1),
    };
}

/// What a draft is to show now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DraftText<'a> {
    /// The reply so far, as the model wrote it (Markdown).
    pub text: &'a str,
    /// Where `text` departs from what the draft showed last: the byte
    /// offset of its new part when it only grew, `None` when it changed
    /// otherwise (the model started over) or nothing was shown yet.
    pub grown_from: Option<usize>,
    /// The message the reply answers, for the draft's first message to quote.
    pub in_reply_to: Option<&'a MessageId>,
}

impl<'a> DraftText<'a> {
    /// What is new since the draft was last shown, and whether the draft
    /// starts over with it.
    pub fn news(&self) -> (&'a str, bool) {
        match self.grown_from.and_then(|from| self.text.get(from..)) {
            Some(news) => (news, false),
            None => (self.text, true),
        }
    }
}

/// Showing a reply while it is being written.
#[async_trait]
pub trait Draft: Send + Sync {
    /// How often this gateway's drafts may change.
    fn pace(&self) -> DraftPace;

    /// Shows `draft` in `conversation`, where the draft so far occupies the
    /// platform messages `shown` (none before its first showing), and
    /// returns the messages it occupies now: a draft longer than a message
    /// continues in new ones at the points where the reply will be split.
    async fn show_draft(
        &self,
        conversation: &ConversationKey,
        shown: &[MessageId],
        draft: DraftText<'_>,
    ) -> Result<Vec<MessageId>, GatewayError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_draft_that_grew_shows_only_its_news() {
        let grown = DraftText {
            text: "Hello, world",
            grown_from: Some(5),
            in_reply_to: None,
        };
        assert_eq!(grown.news(), (", world", false));
        let restarted = DraftText {
            grown_from: None,
            ..grown
        };
        assert_eq!(restarted.news(), ("Hello, world", true));
        let nonsense = DraftText {
            grown_from: Some(99),
            ..grown
        };
        assert_eq!(
            nonsense.news(),
            ("Hello, world", true),
            "an offset past the end starts over"
        );
    }
}
