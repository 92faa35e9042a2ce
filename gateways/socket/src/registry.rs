//! The live connections, and the chat each one speaks in.
//!
//! Delivery looks up every connection of a chat here; admission counts
//! connections against the limit. One short-held lock, never across `.await`.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};

use passepartout_gateway::ChatId;
use tokio::sync::mpsc;

use crate::writer::Outgoing;

/// Identifies one connection for as long as the gateway lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct ConnId(u64);

/// The connection limit is reached.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Full;

#[derive(Debug, Default)]
pub(crate) struct Registry {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next_id: u64,
    conns: HashMap<ConnId, Entry>,
}

#[derive(Debug)]
struct Entry {
    /// Unset until the client said hello or sent its first message.
    chat: Option<ChatId>,
    outbox: mpsc::Sender<Outgoing>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // The map stays consistent even if a holder panicked: every change is one call.
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds a connection unless `max` are live already.
    pub fn admit(&self, max: usize, outbox: mpsc::Sender<Outgoing>) -> Result<ConnId, Full> {
        let mut inner = self.lock();
        if inner.conns.len() >= max {
            return Err(Full);
        }
        inner.next_id += 1;
        let id = ConnId(inner.next_id);
        inner.conns.insert(id, Entry { chat: None, outbox });
        Ok(id)
    }

    /// Files the connection under `chat` (it leaves its previous chat).
    pub fn set_chat(&self, id: ConnId, chat: ChatId) {
        if let Some(entry) = self.lock().conns.get_mut(&id) {
            entry.chat = Some(chat);
        }
    }

    pub fn remove(&self, id: ConnId) {
        self.lock().conns.remove(&id);
    }

    /// Forgets every connection (the gateway is closing).
    pub fn clear(&self) {
        self.lock().conns.clear();
    }

    /// The outboxes of the live connections speaking in `chat`.
    pub fn outboxes_for(&self, chat: &ChatId) -> Vec<mpsc::Sender<Outgoing>> {
        self.lock()
            .conns
            .values()
            .filter(|entry| entry.chat.as_ref() == Some(chat) && !entry.outbox.is_closed())
            .map(|entry| entry.outbox.clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.lock().conns.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outbox() -> (mpsc::Sender<Outgoing>, mpsc::Receiver<Outgoing>) {
        mpsc::channel(1)
    }

    fn chat(name: &str) -> ChatId {
        ChatId::new(name).unwrap()
    }

    #[test]
    fn admission_stops_at_the_limit_and_resumes_after_a_removal() {
        let registry = Registry::default();
        let (a, _ra) = outbox();
        let (b, _rb) = outbox();
        let (c, _rc) = outbox();
        let first = registry.admit(2, a).unwrap();
        registry.admit(2, b.clone()).unwrap();
        assert_eq!(registry.admit(2, c.clone()), Err(Full));
        registry.remove(first);
        assert!(registry.admit(2, c).is_ok());
        assert_eq!(registry.len(), 2);
    }

    #[test]
    fn lookups_find_only_the_chats_live_connections() {
        let registry = Registry::default();
        let (a, _ra) = outbox();
        let (b, rb) = outbox();
        let (c, _rc) = outbox();
        let ida = registry.admit(8, a).unwrap();
        let idb = registry.admit(8, b).unwrap();
        let _unnamed = registry.admit(8, c).unwrap();
        registry.set_chat(ida, chat("work"));
        registry.set_chat(idb, chat("work"));
        assert_eq!(registry.outboxes_for(&chat("work")).len(), 2);
        assert_eq!(registry.outboxes_for(&chat("home")).len(), 0);

        drop(rb);
        assert_eq!(
            registry.outboxes_for(&chat("work")).len(),
            1,
            "a closed outbox is not live"
        );

        registry.set_chat(ida, chat("home"));
        assert_eq!(registry.outboxes_for(&chat("work")).len(), 0);
        assert_eq!(registry.outboxes_for(&chat("home")).len(), 1);
    }
}
