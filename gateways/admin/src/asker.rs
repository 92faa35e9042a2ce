//! Who asks an admin request, and from where: what the surface knows of
//! its user and hands in beside the request, never on the wire.

use passepartout_gateway::{ConversationKey, UserId};

use crate::Via;

/// The local user behind a request, as its surface knows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asker {
    /// The user deciding, revoking or linking (kept in the audit trail).
    pub by: UserId,
    /// Where a decision was given: the terminal or the web dashboard.
    pub via: Via,
    /// The conversation the user asks in: whose tools are listed, where a
    /// terminal links with another channel.
    pub conversation: ConversationKey,
}
