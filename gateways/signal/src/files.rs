//! Sending a file from the assistant's workspace as a Signal attachment.
//!
//! signal-cli takes an attachment as a path it reads itself, or as an RFC
//! 2397 data URI with a file name (`data:<type>;filename=<name>;base64,…`).
//! The gateway sends the data URI: signal-cli may run as another user, in
//! its own sandbox or on the other end of a TCP connection, where the
//! assistant's workspace is out of its reach. The file is read when it is
//! sent, after its size is checked against [`MAX_ATTACHMENT_BYTES`].

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use passepartout_gateway::{ConversationKey, GatewayError, MessageId, OutboundFile};
use serde_json::json;

use crate::gateway::{SignalGateway, target_params};
use crate::message_id::message_id;

/// The largest attachment Signal carries (100 MiB).
pub const MAX_ATTACHMENT_BYTES: u64 = 100 * 1024 * 1024;

impl SignalGateway {
    /// Sends `file` to `conversation` with its caption as the message text,
    /// quoting `reply_to` if given.
    pub(crate) async fn send_file(
        &self,
        conversation: &ConversationKey,
        file: &OutboundFile,
        reply_to: Option<&MessageId>,
    ) -> Result<Vec<MessageId>, GatewayError> {
        let target = self.target(conversation)?;
        let unreadable = |error: std::io::Error| GatewayError::Rejected {
            reason: format!("cannot read {}: {error}", file.name),
        };
        let size = tokio::fs::metadata(&file.path).await.map_err(unreadable)?.len();
        if size > MAX_ATTACHMENT_BYTES {
            return Err(GatewayError::TooLarge {
                size: Some(size),
                limit: MAX_ATTACHMENT_BYTES,
            });
        }
        let bytes = tokio::fs::read(&file.path).await.map_err(unreadable)?;
        let mut params = target_params(&target);
        params["attachments"] = json!([data_uri(file, &bytes)]);
        if let Some(caption) = &file.caption {
            params["message"] = json!(caption);
        }
        if let Some((timestamp, author)) = reply_to.and_then(|message| self.quote(message)) {
            params["quoteTimestamp"] = json!(timestamp);
            params["quoteAuthor"] = json!(author);
        }
        let client = self.client().await?;
        let timestamp = self.send_call(&client, params, conversation, ("file", 0)).await?;
        Ok(message_id(timestamp, None).into_iter().collect())
    }
}

/// `bytes` as signal-cli's data URI, named as `file`. A `;` or `,` in the
/// name would end the name early, so they become `_`.
fn data_uri(file: &OutboundFile, bytes: &[u8]) -> String {
    let name: String = file
        .name
        .chars()
        .map(|c| if matches!(c, ';' | ',') { '_' } else { c })
        .collect();
    format!(
        "data:{};filename={name};base64,{}",
        file.media_type,
        STANDARD.encode(bytes)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_uri_names_the_file_and_carries_its_bytes() {
        let file = OutboundFile {
            path: "/w/a;b,c.txt".into(),
            name: "a;b,c.txt".into(),
            media_type: "text/plain".into(),
            size: 2,
            caption: None,
            temporary: false,
        };
        assert_eq!(data_uri(&file, b"hi"), "data:text/plain;filename=a_b_c.txt;base64,aGk=");
    }
}
