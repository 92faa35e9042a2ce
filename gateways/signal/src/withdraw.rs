//! Removing a draft nothing took over (a stopped reply's, or one that ended
//! with no text): each of its messages is deleted for everyone (`remoteDelete`
//! with the message's `targetTimestamp`), which Signal names by the timestamp
//! `send` reported for it: the message's id.
//!
//! Signal shows typing rather than drafts today, so the core hands this
//! gateway no draft yet; deleting them is what the contract asks of any
//! gateway, and what a Signal draft will need. Signal's apps honour a
//! deletion only within a day of the message; a late one is dropped by the
//! apps, and the conversation still has the answer to `/stop`.

use passepartout_gateway::{ConversationKey, GatewayError, MessageId};
use serde_json::json;

use crate::failure::delivery_error;
use crate::gateway::{SignalGateway, target_params};
use crate::message_id::parse;

impl SignalGateway {
    /// Deletes the draft messages `drafts` in `conversation`, in order.
    /// Ids of messages this gateway did not send are skipped; a failure
    /// stops here and is returned, so the whole is tried again (deleting a
    /// message twice only deletes it).
    pub(crate) async fn delete_drafts(
        &self,
        conversation: &ConversationKey,
        drafts: &[MessageId],
    ) -> Result<(), GatewayError> {
        let timestamps: Vec<u64> = drafts
            .iter()
            .filter_map(|draft| parse(draft).filter(|message| message.author.is_none()))
            .map(|message| message.timestamp)
            .collect();
        if timestamps.is_empty() {
            return Ok(());
        }
        let target = self.target(conversation)?;
        let client = self.client().await?;
        for timestamp in timestamps {
            let mut params = target_params(&target);
            params["targetTimestamp"] = json!(timestamp);
            client
                .call("remoteDelete", self.params(params))
                .await
                .map_err(|error| {
                    tracing::warn!(%conversation, %error, "cannot delete a draft on Signal");
                    delivery_error(&error)
                })?;
        }
        Ok(())
    }
}
