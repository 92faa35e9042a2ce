//! A person let in by pairing: who, on which gateway, whether they may
//! approve too, when, and which owner approved their code; and a code sent
//! to someone, waiting for an owner.

use passepartout_gateway::{ConversationKey, GatewayId, UserId};
use serde::{Deserialize, Serialize};

use super::approval::{Names, Person};

/// One paired person, as the `paired` tree keeps them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairedPerson {
    pub gateway: GatewayId,
    pub user: UserId,
    /// They may approve actions (and pairing codes) too.
    #[serde(default)]
    pub approver: bool,
    pub at_ms: u64,
    /// The owner who approved their code.
    pub by: Person,
    /// What they were called when they asked.
    #[serde(flatten)]
    pub names: Names,
}

/// Who a pairing code was sent to, as the `pairing_codes` tree keeps it
/// (keyed by the code).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingPairing {
    /// Where they wrote from (its gateway is theirs).
    pub conversation: ConversationKey,
    pub user: UserId,
    pub issued_ms: u64,
    /// What they are called, to tell the owner who asks.
    #[serde(flatten)]
    pub names: Names,
}
