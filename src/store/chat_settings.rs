//! What a person set for one conversation from inside it: the provider
//! pinned with `/model NAME`, and where `/new` started a fresh context. One
//! small record per conversation, in the `settings` tree; a conversation
//! that never set anything has none.
//!
//! It is written on its own, before the turn that answers the command
//! commits: a crash between the two redoes the command, which sets the same.

use passepartout_gateway::ConversationKey;
use serde::{Deserialize, Serialize};

use super::error::StoreError;
use super::{Store, keys};

/// One conversation's settings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct ChatSettings {
    /// The provider asked first in this conversation (`/model NAME`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_model: Option<String>,
    /// History turns with an id at or below this mark are left out of the
    /// model's context (`/new`); they stay in the history.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fresh_after: Option<u64>,
}

impl Store {
    /// The settings of `conversation`; the defaults when it set none.
    pub fn chat_settings(&self, conversation: &ConversationKey) -> Result<ChatSettings, StoreError> {
        match self.inner.settings.get(keys::conversation_prefix(conversation))? {
            None => Ok(ChatSettings::default()),
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
                tree: "settings",
                reason: e.to_string(),
            }),
        }
    }

    /// Changes the settings of `conversation` with `change`.
    pub fn update_chat_settings(
        &self,
        conversation: &ConversationKey,
        change: impl FnOnce(&mut ChatSettings),
    ) -> Result<ChatSettings, StoreError> {
        let mut settings = self.chat_settings(conversation)?;
        change(&mut settings);
        let key = keys::conversation_prefix(conversation);
        if settings == ChatSettings::default() {
            self.wrote(self.inner.settings.remove(key).map_err(StoreError::from))?;
        } else {
            let bytes = serde_json::to_vec(&settings).map_err(|e| StoreError::Corrupt {
                tree: "settings",
                reason: e.to_string(),
            })?;
            self.wrote(self.inner.settings.insert(key, bytes).map_err(StoreError::from))?;
        }
        Ok(settings)
    }

    /// A mark for `/new`: every history turn committed so far lies at or
    /// below it, every later one above.
    pub fn history_mark(&self) -> Result<u64, StoreError> {
        self.next_id()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::{conversation, open_temp, reopen};

    #[test]
    fn a_pinned_model_survives_reopening_the_store() {
        let (dir, store) = open_temp();
        let path = store.path().to_path_buf();
        store
            .update_chat_settings(&conversation("a"), |s| s.pinned_model = Some("big".into()))
            .unwrap();
        drop(store);
        let store = reopen(&path);
        assert_eq!(
            store.chat_settings(&conversation("a")).unwrap().pinned_model.as_deref(),
            Some("big")
        );
        assert_eq!(
            store.chat_settings(&conversation("b")).unwrap(),
            ChatSettings::default()
        );
        drop(dir);
    }

    #[test]
    fn back_to_the_defaults_leaves_no_record() {
        let (_dir, store) = open_temp();
        let key = conversation("a");
        store.update_chat_settings(&key, |s| s.fresh_after = Some(3)).unwrap();
        store.update_chat_settings(&key, |s| s.fresh_after = None).unwrap();
        assert!(store.inner.settings.is_empty());
    }
}
