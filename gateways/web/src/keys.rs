//! What the gateway asks of the core about API keys. The core keeps the
//! keys in its store as SHA-256 hashes only and answers by this trait, a
//! direct call as for [`Sessions`](crate::Sessions): every API request
//! checks its key. Making, listing and revoking keys are the owner's
//! questions from the CLI (`passepartout web keys`), which travel as admin
//! requests and never pass through here.

use crate::sessions::SessionsUnavailable;

/// A key the core knows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// The short hex id `web keys` lists.
    pub id: String,
    /// Made with `--approver`: it may answer the approvals asked for in its
    /// own conversations.
    pub approver: bool,
}

/// API keys, kept by the core.
pub trait ApiKeys: Send + Sync {
    /// The key `key`, or none when there is no such key (never made, or
    /// revoked).
    fn check(&self, key: &str) -> Result<Option<Key>, SessionsUnavailable>;
}
