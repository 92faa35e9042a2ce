//! Drafts on Telegram: a reply shown while it is written, as a message the
//! bot sends once the reply has about a second of text and then edits about
//! once a second as it grows, every edit through the same pacing as the
//! bot's sends. A reply longer than a message continues in new messages at
//! the points where the finished reply will be split, so each draft message
//! becomes one part of it. When the reply is delivered, its parts are
//! edited into these messages (see [`TelegramGateway::send_text`]) rather than
//! sent again, and draft messages it does not need are deleted.

use async_trait::async_trait;
use passepartout_gateway::{ConversationKey, Draft, DraftPace, DraftText, GatewayError, MessageId};
use teloxide::payloads::EditMessageTextSetters;
use teloxide::prelude::Requester;
use teloxide::types::{self as tg, InlineKeyboardMarkup};
use teloxide::{ApiError, RequestError};

use crate::failure::Failure;
use crate::gateway::{TelegramGateway, telegram_message_id};
use crate::reply::{Part, parts};

#[async_trait]
impl Draft for TelegramGateway {
    fn pace(&self) -> DraftPace {
        DraftPace::ONCE_A_SECOND
    }

    async fn show_draft(
        &self,
        conversation: &ConversationKey,
        shown: &[MessageId],
        draft: DraftText<'_>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        let chat = self.chat_of(conversation)?;
        let parts = parts(draft.text);
        let reply_to = draft.in_reply_to.and_then(telegram_message_id);
        // A text that grew changed only in its last message and after; one
        // that started over, everywhere.
        let (_, restart) = draft.news();
        let first_changed = if restart { 0 } else { shown.len().saturating_sub(1) };
        let mut messages = shown.to_vec();
        for (index, part) in parts.into_iter().enumerate().skip(first_changed) {
            if let Some(message) = messages.get(index)
                && self.edit_part(chat, message, &part, None).await?
            {
                continue;
            }
            let Some(sent) = self.send_part(chat, index, part, reply_to, None).await? else {
                continue;
            };
            match messages.get_mut(index) {
                // The person deleted it: its successor takes its place.
                Some(gone) => *gone = sent,
                None => messages.push(sent),
            }
        }
        Ok(messages)
    }
}

impl TelegramGateway {
    /// Edits the bot's `message` to show `part` (and `keyboard`, if any);
    /// `false` when the message is no longer there to edit (the person
    /// deleted it). Showing what it already shows is no failure, and a part
    /// Telegram refuses for its formatting is shown as plain text.
    pub(crate) async fn edit_part(
        &self,
        chat: tg::ChatId,
        message: &MessageId,
        part: &Part,
        keyboard: Option<&InlineKeyboardMarkup>,
    ) -> Result<bool, GatewayError> {
        let Some(message) = telegram_message_id(message) else {
            return Ok(false);
        };
        let bot = self.bot()?;
        let request = |entities: &[tg::MessageEntity]| {
            let mut request = bot.edit_message_text(chat, message, &part.text);
            if !entities.is_empty() {
                request = request.entities(entities.to_vec());
            }
            if let Some(keyboard) = keyboard {
                request = request.reply_markup(keyboard.clone());
            }
            request
        };
        let mut entities = part.entities.as_slice();
        loop {
            self.pacing.wait_turn(chat.0).await;
            let error = match request(entities).await {
                Ok(_) | Err(RequestError::Api(ApiError::MessageNotModified)) => return Ok(true),
                Err(RequestError::Api(ApiError::MessageToEditNotFound | ApiError::MessageCantBeEdited)) => {
                    return Ok(false);
                }
                Err(error) => self.classify(&error),
            };
            tracing::debug!(chat = chat.0, error = ?error, "editMessageText failed");
            match error {
                Failure::Rejected { reason } if !entities.is_empty() && crate::gateway::refuses_formatting(&reason) => {
                    entities = &[];
                }
                failure => return Err(failure.into_gateway_error()),
            }
        }
    }

    /// Deletes draft messages nothing took over, in order. A message
    /// already gone is what was wanted (a second delivery after a crash
    /// finds the first one's work done), and one Telegram refuses to delete
    /// for good (older than it allows) is only logged; a failure worth
    /// trying again (a rate limit, the network) stops here and is returned.
    pub(crate) async fn delete_drafts(&self, chat: tg::ChatId, drafts: &[MessageId]) -> Result<(), GatewayError> {
        if drafts.is_empty() {
            return Ok(());
        }
        let bot = self.bot()?;
        for draft in drafts {
            let Some(message) = telegram_message_id(draft) else {
                continue;
            };
            match bot.delete_message(chat, message).await {
                Ok(_) | Err(RequestError::Api(ApiError::MessageToDeleteNotFound)) => {}
                Err(error) => match self.classify(&error) {
                    Failure::Rejected { reason } => {
                        tracing::warn!(chat = chat.0, %reason, "a draft cannot be deleted");
                    }
                    failure => {
                        tracing::debug!(chat = chat.0, error = ?failure, "cannot delete a draft now");
                        return Err(failure.into_gateway_error());
                    }
                },
            }
        }
        Ok(())
    }

    /// Deletes draft messages in passing, before a message that does not
    /// take them over: one left now is only logged.
    pub(crate) async fn delete_drafts_in_passing(&self, chat: tg::ChatId, drafts: &[MessageId]) {
        if let Err(error) = self.delete_drafts(chat, drafts).await {
            tracing::warn!(chat = chat.0, %error, "a draft is left");
        }
    }
}
