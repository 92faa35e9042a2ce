//! A decided approval shown in its prompt: the prompt the gateway sent is
//! edited (`send` with `editTimestamp`) to say what was decided (its
//! Markdown rendered as every reply's is), as
//! Telegram's prompts are, so an old prompt never looks as if it still
//! waited for an answer. Signal names the message to edit by the timestamp
//! `send` reported for it, which is the prompt's id.
//!
//! Signal's apps show an edit only within a day of the original message
//! (and at most ten of them); an edit past that is dropped by the apps,
//! and the conversation still has the outcome in a message of its own.

use passepartout_gateway::{ConversationKey, GatewayError, MessageId};
use serde_json::json;

use crate::gateway::{SignalGateway, target_params};
use crate::message_id::parse;
use crate::reply::parts;

impl SignalGateway {
    /// Changes the approval prompt `prompt`, sent to `conversation`, to `text`.
    pub(crate) async fn show_decided(
        &self,
        conversation: &ConversationKey,
        prompt: &MessageId,
        text: &str,
    ) -> Result<(), GatewayError> {
        let target = self.target(conversation)?;
        let timestamp = match parse(prompt) {
            Some(message) if message.author.is_none() => message.timestamp,
            _ => {
                return Err(GatewayError::Rejected {
                    reason: format!("{prompt} is not a message this gateway sent"),
                });
            }
        };
        let mut params = target_params(&target);
        // The outcome is a line or two: the first part is all of it.
        let shown = parts(text, self.settings.text_limit).into_iter().next();
        let (text, styles) = shown.map_or((text.to_owned(), Vec::new()), |part| (part.text, part.styles));
        params["message"] = json!(text);
        if !styles.is_empty() {
            params["textStyle"] = json!(styles);
        }
        params["editTimestamp"] = json!(timestamp);
        let client = self.client().await?;
        self.send_call(&client, params, conversation, ("decided prompt", 0))
            .await
            .map(drop)
    }
}
