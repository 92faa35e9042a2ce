//! Delivering the core's messages into Matrix rooms: a reply in parts
//! (each part into the message a draft of it occupies, by an edit, the
//! rest of the draft redacted), in the thread of the message it answers;
//! an approval's outcome as an edit of its prompt; a file uploaded, and
//! encrypted first in an encrypted room.
//!
//! Every event carries a transaction id made from the outbox message's
//! id, so a delivery repeated after a crash is dropped by the homeserver
//! rather than shown twice.

use async_trait::async_trait;
use matrix_sdk::attachment::AttachmentConfig;
use matrix_sdk::ruma::events::room::message::TextMessageEventContent;
use matrix_sdk::ruma::{EventId, OwnedTransactionId, RoomId, TransactionId};
use matrix_sdk::{Client, Room};
use passepartout_gateway::parts::{Resume, send_parts};
use passepartout_gateway::{
    ConversationKey, Deliver, Delivered, GatewayError, MessageId, Outbound, OutboundBody, OutboundFile, ReplyKind,
};
use serde_json::Value;

use super::MatrixGateway;
use super::failure::sending_error;
use super::reply::{Part, Place, content, first_part, parts, replacement};

#[async_trait]
impl Deliver for MatrixGateway {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        self.deliver_from(message, Resume::whole()).await
    }

    async fn deliver_from(&self, message: &Outbound, resume: Resume<'_>) -> Result<Delivered, GatewayError> {
        let client = self.connected().await?;
        let room = room(client, &message.conversation)?;
        let txn = message.id.as_str();
        let reply_to = message.in_reply_to.as_ref().map(MessageId::as_str);
        let thread = reply_to.and_then(|id| self.threads.get(id));
        let place = Place {
            reply_to,
            thread: thread.as_deref(),
        };
        let drafts = message.drafts.as_slice();
        let message_ids = match &message.body {
            OutboundBody::Text { text, kind } => {
                let notice = *kind != ReplyKind::Answer;
                self.send_text(&room, txn, parts(text), notice, place, drafts, resume)
                    .await?
            }
            OutboundBody::ApprovalPrompt { text, .. } => {
                self.redact_in_passing(&room, txn, drafts).await;
                self.send_text(&room, txn, parts(text), false, place, &[], resume)
                    .await?
            }
            OutboundBody::ApprovalDecided {
                prompt: target, text, ..
            }
            | OutboundBody::Edit { message: target, text } => {
                let edit = replacement(target.as_str(), &first_part(text), false);
                self.send(&room, txn, edit).await?;
                Vec::new()
            }
            OutboundBody::File(file) => {
                self.redact_in_passing(&room, txn, drafts).await;
                vec![self.send_file(client, &room, txn, file).await?]
            }
            // A stopped reply's draft goes: the answer to `/stop` says what
            // was kept. Until it is gone, the entry stays in the outbox.
            OutboundBody::Withdraw | OutboundBody::Stopped { .. } => {
                self.redact(&room, txn, drafts).await?;
                Vec::new()
            }
        };
        tracing::debug!(room = %room.room_id(), outbound_id = %message.id, parts = message_ids.len(), "delivered to Matrix");
        Ok(Delivered { message_ids })
    }

    async fn typing(&self, conversation: &ConversationKey) -> Result<(), GatewayError> {
        let Some(client) = self.client.get() else {
            return Ok(());
        };
        room(client, conversation)?
            .typing_notice(true)
            .await
            .map_err(sending_error)
    }
}

impl MatrixGateway {
    /// Sends `parts` from `resume` on, each into the draft message of its
    /// index when there is one; draft messages left over are redacted.
    #[allow(clippy::too_many_arguments)]
    async fn send_text(
        &self,
        room: &Room,
        txn: &str,
        parts: Vec<Part>,
        notice: bool,
        place: Place<'_>,
        drafts: &[MessageId],
        resume: Resume<'_>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        if parts.is_empty() {
            return Err(GatewayError::Rejected {
                reason: "the message is empty".into(),
            });
        }
        let count = parts.len();
        let sent = send_parts(parts, resume, |index, part| {
            let draft = drafts.get(index);
            // Only the first part quotes; every part stays in the thread.
            let place = Place {
                reply_to: place.reply_to.filter(|_| index == 0),
                ..place
            };
            async move {
                let txn = part_txn(txn, index);
                match draft {
                    Some(draft) => {
                        let edit = replacement(draft.as_str(), &part, notice);
                        self.send(room, &format!("{txn}.edit"), edit).await?;
                        Ok(Some(draft.clone()))
                    }
                    None => Ok(Some(self.send(room, &txn, content(&part, notice, place)).await?)),
                }
            }
        })
        .await?;
        self.redact_in_passing(room, txn, drafts.get(count..).unwrap_or_default())
            .await;
        Ok(sent)
    }

    /// Sends one message event with transaction id `txn`; its id, which
    /// the gateway remembers as its own.
    pub(super) async fn send(&self, room: &Room, txn: &str, content: Value) -> Result<MessageId, GatewayError> {
        let sent = room
            .send_raw("m.room.message", content)
            .with_transaction_id(<&TransactionId>::from(txn))
            .await
            .map_err(sending_error)?;
        self.own_events.remember(sent.event_id.as_str(), "");
        MessageId::new(sent.event_id.to_string()).map_err(|_| GatewayError::Rejected {
            reason: "the homeserver gave an event id that is not one".into(),
        })
    }

    /// Redacts the draft messages nothing took over. One already gone is
    /// what was wanted; one the homeserver refuses to redact for good is
    /// only logged; a failure worth trying again stops here.
    async fn redact(&self, room: &Room, txn: &str, drafts: &[MessageId]) -> Result<(), GatewayError> {
        for (index, draft) in drafts.iter().enumerate() {
            let Ok(event) = <&EventId>::try_from(draft.as_str()) else {
                continue;
            };
            let txn = OwnedTransactionId::from(format!("{txn}.redact.{index}"));
            if let Err(error) = room.redact(event, None, Some(txn)).await {
                match sending_error(error.into()) {
                    GatewayError::Rejected { reason } => {
                        tracing::warn!(room = %room.room_id(), %reason, "a draft cannot be redacted");
                    }
                    error => return Err(error),
                }
            }
        }
        Ok(())
    }

    /// Redacts drafts in passing, before a message that does not take them
    /// over: one left now is only logged.
    async fn redact_in_passing(&self, room: &Room, txn: &str, drafts: &[MessageId]) {
        if let Err(error) = self.redact(room, txn, drafts).await {
            tracing::warn!(room = %room.room_id(), %error, "a draft is left");
        }
    }

    /// Uploads `file` (encrypted in an encrypted room) and sends it with its
    /// caption, refusing it before reading when it is over the
    /// homeserver's upload limit.
    async fn send_file(
        &self,
        client: &Client,
        room: &Room,
        txn: &str,
        file: &OutboundFile,
    ) -> Result<MessageId, GatewayError> {
        let limit = client
            .load_or_fetch_max_upload_size()
            .await
            .map(u64::from)
            .map_err(sending_error)?;
        let too_large = |size: u64| GatewayError::TooLarge {
            size: Some(size),
            limit,
        };
        if file.size > limit {
            return Err(too_large(file.size));
        }
        let bytes = tokio::fs::read(&file.path)
            .await
            .map_err(|error| GatewayError::Rejected {
                reason: format!("{} cannot be read: {error}", file.name),
            })?;
        if bytes.len() as u64 > limit {
            return Err(too_large(bytes.len() as u64));
        }
        let media_type = file.media_type.parse().unwrap_or(mime::APPLICATION_OCTET_STREAM);
        let caption = file.caption.as_deref().map(|caption| {
            let part = first_part(caption);
            TextMessageEventContent::html(part.body, part.html)
        });
        let config = AttachmentConfig::new()
            .txn_id(OwnedTransactionId::from(txn))
            .caption(caption);
        let sent = room
            .send_attachment(file.name.as_str(), &media_type, bytes, config)
            .await
            .map_err(sending_error)?;
        self.own_events.remember(sent.event_id.as_str(), "");
        MessageId::new(sent.event_id.to_string()).map_err(|_| GatewayError::Rejected {
            reason: "the homeserver gave an event id that is not one".into(),
        })
    }
}

/// The transaction id of part `index` of the message `txn`.
fn part_txn(txn: &str, index: usize) -> String {
    match index {
        0 => txn.to_owned(),
        index => format!("{txn}.{index}"),
    }
}

/// The joined room a conversation is in.
pub(super) fn room(client: &Client, conversation: &ConversationKey) -> Result<Room, GatewayError> {
    let room_id = <&RoomId>::try_from(conversation.chat.as_str()).map_err(|_| GatewayError::Rejected {
        reason: format!("{} is not a Matrix room id", conversation.chat.as_str()),
    })?;
    client.get_room(room_id).ok_or_else(|| GatewayError::Rejected {
        reason: "the assistant is not in that room".into(),
    })
}
