//! Drafts on Matrix: a reply shown while it is written, as a message sent
//! once the reply has about a second of text and then edited (`m.replace`)
//! about once a second as it grows. A reply longer than a message goes on
//! in new messages at the points where the finished reply will be split,
//! so each draft message becomes one part of it: when the reply is
//! delivered, its parts are edited into these messages rather than sent
//! again, and draft messages it does not need are redacted.

use async_trait::async_trait;
use matrix_sdk::ruma::TransactionId;
use passepartout_gateway::{ConversationKey, Draft, DraftPace, DraftText, GatewayError, MessageId};

use super::MatrixGateway;
use super::deliver::room;
use super::reply::{Place, content, parts, replacement};

#[async_trait]
impl Draft for MatrixGateway {
    fn pace(&self) -> DraftPace {
        DraftPace::ONCE_A_SECOND
    }

    async fn show_draft(
        &self,
        conversation: &ConversationKey,
        shown: &[MessageId],
        draft: DraftText<'_>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        let client = self.connected().await?;
        let room = room(client, conversation)?;
        let reply_to = draft.in_reply_to.map(MessageId::as_str);
        let thread = reply_to.and_then(|id| self.threads.get(id));
        // A text that grew changed only in its last message and after; one
        // that started over, everywhere.
        let (_, restart) = draft.news();
        let first_changed = if restart { 0 } else { shown.len().saturating_sub(1) };
        let mut messages = shown.to_vec();
        for (index, part) in parts(draft.text).into_iter().enumerate().skip(first_changed) {
            // A draft is no delivery: nothing repeats it, so each event is new.
            let txn = TransactionId::new();
            match messages.get(index) {
                Some(message) => {
                    self.send(&room, txn.as_str(), replacement(message.as_str(), &part, false))
                        .await?;
                }
                None => {
                    let place = Place {
                        reply_to: reply_to.filter(|_| index == 0),
                        thread: thread.as_deref(),
                    };
                    messages.push(self.send(&room, txn.as_str(), content(&part, false, place)).await?);
                }
            }
        }
        Ok(messages)
    }
}
