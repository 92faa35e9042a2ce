//! What the gateway asks of the core about API keys. The core keeps the
//! keys in its store as SHA-256 hashes only and answers by this trait, a
//! direct call as for [`Sessions`](crate::Sessions): every API request
//! checks its key. Making, listing and revoking keys are the owner's
//! questions from the CLI (`passepartout web keys`), which travel as admin
//! requests and never pass through here.

use crate::sessions::SessionsUnavailable;

/// API keys, kept by the core.
pub trait ApiKeys: Send + Sync {
    /// The id of the key `key` (the short hex id `web keys` lists), or none
    /// when there is no such key (never made, or revoked).
    fn check(&self, key: &str) -> Result<Option<String>, SessionsUnavailable>;
}
