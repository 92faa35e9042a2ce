//! Where each API conversation stands, the core's half: the web gateway
//! hashes the messages a client resends ([`passepartout_web::api::chain`])
//! and asks, through [`passepartout_web::Threads`], which of the key's
//! conversations stands there; the answer is kept in the store's
//! `api_threads` tree.

use passepartout_gateway::ChatId;
use passepartout_web::api::chain::Tip;
use passepartout_web::{SessionsUnavailable, Threads};

use crate::store::{Store, StoreError};

/// The API conversations' index over the store.
#[derive(Clone)]
pub struct WebThreads {
    store: Store,
}

impl WebThreads {
    pub fn new(store: Store) -> Self {
        Self { store }
    }
}

fn unavailable(error: StoreError) -> SessionsUnavailable {
    SessionsUnavailable {
        message: error.to_string(),
    }
}

impl Threads for WebThreads {
    fn find(&self, key: &str, tip: &Tip) -> Result<Option<ChatId>, SessionsUnavailable> {
        let chat = self.store.api_thread(key, &tip.0).map_err(unavailable)?;
        Ok(chat.and_then(|chat| ChatId::new(chat).ok()))
    }

    fn advance(&self, key: &str, chat: &ChatId, tip: &Tip) -> Result<(), SessionsUnavailable> {
        self.store
            .advance_api_thread(key, chat.as_str(), &tip.0)
            .map_err(unavailable)
    }
}
