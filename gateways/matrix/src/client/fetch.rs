//! The bytes of a file that came with a message: the contract's [`Fetch`].
//!
//! The attachment's reference is the event's media source as JSON: an
//! `mxc://` address, or in an encrypted room the encrypted file with its
//! key, which the SDK checks against its hash and decrypts. A size the
//! event declared over the cap is refused before anything is downloaded
//! (the core reads the declared size first); what is downloaded is bounded
//! by the homeserver's own upload limit, and refused after when over the
//! cap.

use async_trait::async_trait;
use matrix_sdk::media::{MediaFormat, MediaRequestParameters};
use matrix_sdk::ruma::events::room::MediaSource;
use passepartout_gateway::{Fetch, Fetched, FileRef, GatewayError};

use super::MatrixGateway;
use super::failure::sending_error;

#[async_trait]
impl Fetch for MatrixGateway {
    async fn fetch(&self, file: &FileRef, max_bytes: u64) -> Result<Fetched, GatewayError> {
        let source: MediaSource = serde_json::from_str(&file.0).map_err(|_| GatewayError::Rejected {
            reason: "not a Matrix file's reference".into(),
        })?;
        let client = self.connected().await?;
        let request = MediaRequestParameters {
            source,
            format: MediaFormat::File,
        };
        let bytes = client
            .media()
            .get_media_content(&request, false)
            .await
            .map_err(sending_error)?;
        if bytes.len() as u64 > max_bytes {
            return Err(GatewayError::TooLarge {
                size: Some(bytes.len() as u64),
                limit: max_bytes,
            });
        }
        Ok(Fetched { bytes, mime: None })
    }
}
