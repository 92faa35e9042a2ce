//! Which gateway fetches the media of its own messages: a [`Fetch`] per
//! gateway id, registered where the daemon starts its gateways. A message's
//! attachment names a file only its gateway can read.

use std::collections::HashMap;
use std::sync::Arc;

use passepartout_gateway::{Fetch, GatewayId};

/// The gateways that can fetch media, by id.
#[derive(Clone, Default)]
pub struct Fetchers(HashMap<GatewayId, Arc<dyn Fetch>>);

impl Fetchers {
    /// Registers `fetch` for gateway `id` (replacing any earlier one).
    pub fn insert(&mut self, id: GatewayId, fetch: Arc<dyn Fetch>) {
        self.0.insert(id, fetch);
    }

    /// The fetcher of gateway `id`, if it has one.
    pub fn get(&self, id: &GatewayId) -> Option<&Arc<dyn Fetch>> {
        self.0.get(id)
    }
}

impl FromIterator<(GatewayId, Arc<dyn Fetch>)> for Fetchers {
    fn from_iter<T: IntoIterator<Item = (GatewayId, Arc<dyn Fetch>)>>(iter: T) -> Self {
        Self(iter.into_iter().collect())
    }
}

impl std::fmt::Debug for Fetchers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.0.keys()).finish()
    }
}
