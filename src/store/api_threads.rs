//! The `api_threads` tree: where each API conversation stands, so that a
//! client resending its history continues the conversation it belongs to.
//! A tip is the hash the web gateway makes of a conversation's messages as
//! its client holds them; each conversation has one tip, its newest, and a
//! tip leads to its conversation only while it is that newest one.
//!
//! Keys: `t` + the API key's id + 0 + the tip → the conversation's chat id;
//! `c` + the chat id → its tip (to drop the older tip when it moves on).

use super::Store;
use super::error::StoreError;

fn by_tip(key: &str, tip: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + key.len() + tip.len());
    out.push(b't');
    out.extend_from_slice(key.as_bytes());
    out.push(0);
    out.extend_from_slice(tip);
    out
}

fn by_chat(chat: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 + chat.len());
    out.push(b'c');
    out.extend_from_slice(chat.as_bytes());
    out
}

impl Store {
    /// The chat whose newest tip, among the API key `key`'s, is `tip`.
    pub fn api_thread(&self, key: &str, tip: &[u8]) -> Result<Option<String>, StoreError> {
        let Some(chat) = self.inner.api_threads.get(by_tip(key, tip))? else {
            return Ok(None);
        };
        Ok(String::from_utf8(chat.to_vec()).ok())
    }

    /// `chat`, of the API key `key`, now stands at `tip`; its older tip no
    /// longer leads to it.
    pub fn advance_api_thread(&self, key: &str, chat: &str, tip: &[u8]) -> Result<(), StoreError> {
        let _writing = self.writing();
        let tree = &self.inner.api_threads;
        let mut batch = sled::Batch::default();
        // The older tip goes, unless another conversation stands there too
        // now (two that said the same) and holds it.
        if let Some(older) = tree.get(by_chat(chat))?
            && tree
                .get(by_tip(key, &older))?
                .is_some_and(|holder| holder == chat.as_bytes())
        {
            batch.remove(by_tip(key, &older));
        }
        batch.insert(by_tip(key, tip), chat.as_bytes());
        batch.insert(by_chat(chat), tip);
        self.wrote(tree.apply_batch(batch).map_err(StoreError::from))
    }
}

#[cfg(test)]
mod tests {
    use crate::store::tests::open_temp;

    #[test]
    fn only_a_conversations_newest_tip_leads_to_it_and_only_for_its_key() {
        let (_dir, store) = open_temp();
        store.advance_api_thread("k1", "key-k1/~a", b"tip-1").unwrap();
        assert_eq!(store.api_thread("k1", b"tip-1").unwrap().as_deref(), Some("key-k1/~a"));
        assert_eq!(store.api_thread("k2", b"tip-1").unwrap(), None, "another key's");
        store.advance_api_thread("k1", "key-k1/~a", b"tip-2").unwrap();
        assert_eq!(store.api_thread("k1", b"tip-1").unwrap(), None, "moved on");
        assert_eq!(store.api_thread("k1", b"tip-2").unwrap().as_deref(), Some("key-k1/~a"));
        store.advance_api_thread("k1", "key-k1/~b", b"tip-3").unwrap();
        assert_eq!(store.api_thread("k1", b"tip-2").unwrap().as_deref(), Some("key-k1/~a"));
        // ~b comes to say what ~a said: the newer holds the tip, and ~a
        // moving on leaves it with ~b.
        store.advance_api_thread("k1", "key-k1/~b", b"tip-2").unwrap();
        store.advance_api_thread("k1", "key-k1/~a", b"tip-4").unwrap();
        assert_eq!(store.api_thread("k1", b"tip-2").unwrap().as_deref(), Some("key-k1/~b"));
    }
}
