//! The bytes of an attachment that came with a message: the contract's [`Fetch`].
//!
//! signal-cli has downloaded the attachment when the message arrived;
//! `getAttachment` (the attachment's `id`, and the sender or the group it came
//! in, all in the [`SignalFile`] the reference names) answers `{"data": BASE64}`.
//! The cap is checked three times: against the size declared with the
//! message, before any call; against the length of the base64 text, before
//! decoding it; and against the decoded bytes. The connection reads lines up
//! to [`SignalSettings::max_attachment_bytes`](crate::SignalSettings) in
//! base64, so a larger cap than that is lowered to it: a line past it would
//! be dropped unread and the call would only time out.

use async_trait::async_trait;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use passepartout_gateway::{Fetch, Fetched, FileRef, GatewayError};
use serde_json::Value;

use crate::failure::delivery_error;
use crate::gateway::SignalGateway;
use crate::media::SignalFile;

#[async_trait]
impl Fetch for SignalGateway {
    async fn fetch(&self, file: &FileRef, max_bytes: u64) -> Result<Fetched, GatewayError> {
        let file = SignalFile::from_ref(file).ok_or_else(|| GatewayError::Rejected {
            reason: "the reference names no Signal attachment".to_owned(),
        })?;
        let limit = max_bytes.min(self.settings.max_attachment_bytes);
        let too_large = |size: Option<u64>| GatewayError::TooLarge { size, limit };
        if let Some(size) = file.size.filter(|&size| size > limit) {
            return Err(too_large(Some(size)));
        }
        let client = self.client().await?;
        let answer = client
            .call("getAttachment", self.params(file.params()))
            .await
            .map_err(|error| {
                tracing::warn!(%error, "signal-cli's getAttachment failed");
                delivery_error(&error)
            })?;
        let data = answer
            .get("data")
            .and_then(Value::as_str)
            .ok_or_else(|| GatewayError::Transient {
                reason: "signal-cli's getAttachment answer has no data".to_owned(),
            })?;
        // Four base64 characters make three bytes, less up to two of padding.
        let at_least = (data.len() as u64 / 4 * 3).saturating_sub(2);
        if at_least > limit {
            return Err(too_large(Some(at_least)));
        }
        let bytes = STANDARD.decode(data).map_err(|_| GatewayError::Rejected {
            reason: "signal-cli sent the attachment in broken base64".to_owned(),
        })?;
        if bytes.len() as u64 > limit {
            return Err(too_large(Some(bytes.len() as u64)));
        }
        Ok(Fetched { bytes, mime: None })
    }
}
