//! Each gateway's [`Surface`], by gateway id: read from the gateway
//! components once (a gateway's surface is a constant of its crate), and
//! asked by a conversation's key when the daemon words a message for it.

use std::collections::HashMap;
use std::sync::Arc;

use passepartout_gateway::{ConversationKey, GatewayId, Surface};

/// The surfaces of the daemon's gateways. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct Surfaces {
    by_gateway: Arc<HashMap<GatewayId, Surface>>,
}

impl Surfaces {
    pub fn new(surfaces: impl IntoIterator<Item = (GatewayId, Surface)>) -> Self {
        Self {
            by_gateway: Arc::new(surfaces.into_iter().collect()),
        }
    }

    /// The surface `conversation` is shown on; plain text for a gateway
    /// not known, which is told nothing it could not do.
    pub fn of(&self, conversation: &ConversationKey) -> Surface {
        self.by_gateway
            .get(&conversation.gateway)
            .copied()
            .unwrap_or(Surface::TEXT)
    }
}
