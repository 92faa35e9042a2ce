//! Sync messages: what the account's other devices did, told to this one.
//!
//! On a dedicated number they are skipped: the bot has no other devices
//! worth hearing. On a person's own account, linked to the assistant
//! ([`BotIdentity::note_to_self`](super::BotIdentity::note_to_self)), one
//! kind is for the assistant: a message the person wrote to *Note to Self*
//! on their phone or computer. signal-cli hands it over as
//! `syncMessage.sentMessage`, the data message's fields beside its
//! `destination` / `destinationNumber` / `destinationUuid`, which name the
//! account itself. It becomes a message of the Note-to-Self conversation
//! (chat: the account's number, where replies go), from the account's UUID
//! with its number as alias.
//!
//! Everything else is skipped, silently and whatever it says: what the person
//! sent to other people or to groups (their private conversations, which the
//! assistant must never read; only a link code said there is handed on, for
//! the core to void it), read and viewed receipts, contact and group
//! lists, blocked lists, edits, and any sync message not from the account
//! itself or in a shape signal-cli is not known to send.

use passepartout_gateway::{InboundBody, Normalized};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;

use super::{Context, DataMessage, Envelope, GROUP_PREFIX, Origin, Step};

/// The chat of the Note-to-Self conversation of `account` (its number):
/// where the person's notes come from and the assistant's replies go.
pub fn note_to_self_chat(account: &str) -> String {
    account.to_owned()
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SyncMessage {
    sent_message: Option<SentMessage>,
}

/// `sentMessage`: where the message went, and the data message itself,
/// its fields unwrapped beside `destination` (an edit comes as `editMessage`).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct SentMessage {
    destination: Option<String>,
    destination_number: Option<String>,
    destination_uuid: Option<String>,
    edit_message: Option<IgnoredAny>,
    #[serde(flatten)]
    data: DataMessage,
}

impl Context<'_> {
    /// A sync message: a note to self on a person's own account, else skipped.
    pub(super) fn sync(&self, envelope: &Envelope, sync: &Value) -> Step<Normalized> {
        if !self.bot.note_to_self {
            return Err("sync message from another device of the account");
        }
        let sync =
            SyncMessage::deserialize(sync).map_err(|_| "sync message in a shape signal-cli is not known to send")?;
        let sent = sync
            .sent_message
            .ok_or("sync message that is not a sent message (receipts, contacts, …)")?;
        let uuid = envelope
            .source_uuid
            .as_deref()
            .ok_or("sync message without a sender UUID")?;
        // Only the account's own devices send sync messages; anything else
        // claiming to be one is not the person.
        if !self.bot.is(Some(uuid), envelope.source_number.as_deref()) {
            return Err("sync message not from the account itself");
        }
        if sent.data.group_info.is_some() {
            return self.link_code_said(
                envelope,
                uuid,
                &sent,
                "sync message of the account's message to a group",
            );
        }
        if !self.to_self(uuid, &sent) {
            return self.link_code_said(
                envelope,
                uuid,
                &sent,
                "sync message of the account's message to someone else",
            );
        }
        if sent.edit_message.is_some() {
            return Err("edited message");
        }
        let number = self
            .bot
            .number
            .as_deref()
            .ok_or("note to self, but the account's number is unknown")?;
        let timestamp = sent
            .data
            .timestamp
            .or(envelope.timestamp)
            .ok_or("sync message without a timestamp")?;
        let origin = Origin {
            envelope,
            uuid,
            number: Some(number),
            timestamp,
            chat: note_to_self_chat(number),
            group: None,
            takes_everything: true,
            bridged: false,
        };
        self.content(&origin, &sent.data)
    }

    /// What the person sent to a group or to someone else, skipped for
    /// `skipped` unless it names a link code: that is handed on overheard,
    /// in the chat it was said in, so the core voids the code (and reads
    /// nothing else of it).
    fn link_code_said(
        &self,
        envelope: &Envelope,
        uuid: &str,
        sent: &SentMessage,
        skipped: &'static str,
    ) -> Step<Normalized> {
        let text = (sent.data.message.as_deref())
            .filter(|text| passepartout_gateway::names_a_link_code(text))
            .ok_or(skipped)?;
        let group = (sent.data.group_info.as_ref()).and_then(|info| info.group_id.as_deref());
        let chat = match group {
            Some(group) => format!("{GROUP_PREFIX}{group}"),
            None => (sent.destination_uuid.as_deref())
                .or(sent.destination_number.as_deref())
                .or(sent.destination.as_deref())
                .ok_or(skipped)?
                .to_owned(),
        };
        let timestamp = sent.data.timestamp.or(envelope.timestamp).ok_or(skipped)?;
        let origin = Origin {
            envelope,
            uuid,
            number: self.bot.number.as_deref(),
            timestamp,
            chat,
            group,
            takes_everything: false,
            bridged: false,
        };
        let body = InboundBody::Text { text: text.to_owned() };
        let mut normalized = self.inbound(&origin, None, body)?;
        if let Normalized::Inbound(inbound) = &mut normalized {
            inbound.overheard = true;
        }
        Ok(normalized)
    }

    /// Whether `sent` went to the account itself: its number or UUID, or
    /// the UUID its own devices send from.
    fn to_self(&self, own_uuid: &str, sent: &SentMessage) -> bool {
        let uuid = sent.destination_uuid.as_deref();
        let number = (sent.destination_number.as_deref()).or(sent.destination.as_deref());
        let same_uuid = uuid.is_some_and(|uuid| uuid.eq_ignore_ascii_case(own_uuid));
        let named = uuid.is_some() || number.is_some();
        named && (same_uuid || self.bot.is(uuid, number))
    }
}

#[cfg(test)]
#[path = "sync_tests.rs"]
mod tests;
