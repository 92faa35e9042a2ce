//! What the gateway asks of the core about where API conversations stand.
//! A client of the API resends a conversation's whole history with each
//! request; the gateway hashes it ([`crate::api::chain`]) and asks the core,
//! which keeps the index in its store, which of the key's conversations
//! has that history as its newest state. A direct call, as for
//! [`ApiKeys`](crate::ApiKeys): every API request asks it.

use passepartout_gateway::ChatId;

use crate::api::chain::Tip;
use crate::sessions::SessionsUnavailable;

/// Where each API key's conversations stand, kept by the core.
pub trait Threads: Send + Sync {
    /// The conversation of the key `key` (its id) whose newest state is
    /// `tip`, if one is.
    fn find(&self, key: &str, tip: &Tip) -> Result<Option<ChatId>, SessionsUnavailable>;

    /// The conversation `chat` of the key `key` now stands at `tip`; its
    /// older state no longer leads to it (a client that sends that one
    /// again regenerates or edits, and branches off).
    fn advance(&self, key: &str, chat: &ChatId, tip: &Tip) -> Result<(), SessionsUnavailable>;
}
