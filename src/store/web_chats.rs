//! The `web_chats` tree: the owner's chats on the web dashboard, by id,
//! each with its name and when it was made and last used. The history of
//! each is the conversation's own, kept in `history`.

use serde::{Deserialize, Serialize};

use super::Store;
use super::approvals::{decode, encode};
use super::error::StoreError;

/// One chat, as kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebChatRecord {
    /// Empty until named.
    #[serde(default)]
    pub name: String,
    pub created_ms: u64,
    /// When a message was last sent in it; 0 while none has been.
    #[serde(default)]
    pub last_ms: u64,
}

impl Store {
    /// Keeps the chat `id`.
    pub fn keep_web_chat(&self, id: &str, chat: &WebChatRecord) -> Result<(), StoreError> {
        let _writing = self.writing();
        let value = encode("web_chats", chat)?;
        let written = self.inner.web_chats.insert(id.as_bytes(), value);
        self.wrote(written.map(drop).map_err(StoreError::from))
    }

    /// The chat `id`, if there is one.
    pub fn web_chat(&self, id: &str) -> Result<Option<WebChatRecord>, StoreError> {
        match self.inner.web_chats.get(id.as_bytes())? {
            Some(value) => decode("web_chats", &value).map(Some),
            None => Ok(None),
        }
    }

    /// Every chat, by id; an unreadable one is left out.
    pub fn web_chats(&self) -> Result<Vec<(String, WebChatRecord)>, StoreError> {
        let mut chats = Vec::new();
        for item in self.inner.web_chats.iter() {
            let (id, value) = item?;
            if let (Ok(id), Ok(chat)) = (String::from_utf8(id.to_vec()), decode("web_chats", &value)) {
                chats.push((id, chat));
            }
        }
        Ok(chats)
    }

    /// Forgets the chat `id`; whether there was one.
    pub fn forget_web_chat(&self, id: &str) -> Result<bool, StoreError> {
        let _writing = self.writing();
        let removed = self.inner.web_chats.remove(id.as_bytes()).map_err(StoreError::from);
        Ok(self.wrote(removed)?.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{open_temp, reopen};

    #[test]
    fn chats_outlive_a_reopen_until_forgotten() {
        let (dir, store) = open_temp();
        let chat = WebChatRecord {
            name: "trip".into(),
            created_ms: 5,
            last_ms: 7,
        };
        store.keep_web_chat("0123abcd", &chat).unwrap();
        drop(store);
        let store = reopen(&dir.path().join("store"));
        assert_eq!(store.web_chat("0123abcd").unwrap(), Some(chat.clone()));
        assert_eq!(store.web_chats().unwrap(), vec![("0123abcd".to_owned(), chat)]);
        assert!(store.forget_web_chat("0123abcd").unwrap());
        assert!(!store.forget_web_chat("0123abcd").unwrap());
        assert_eq!(store.web_chat("0123abcd").unwrap(), None);
    }
}
