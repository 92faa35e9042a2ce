//! The owner's chats on the web dashboard, the core's half: each a
//! conversation of its own on the web gateway, listed most recently used
//! first, named from its first message or by the owner, kept in the store.
//! The gateway asks through [`passepartout_web::Chats`]; deleting a chat's
//! record is logged as the dashboard's other owner actions are (its history
//! goes by the `/forget` the gateway sends into the conversation first).

use passepartout_gateway::{ConversationKey, GatewayId};
use passepartout_web::people::Person;
use passepartout_web::{Chats, EARLIER_CHAT_ID, GATEWAY_ID, SessionsUnavailable, WebChat};

use super::sign_in::{hex, secret};
use crate::engine::pipeline::TurnRecord;
use crate::foundation::clock::Clock;
use crate::model::llm::{ChatMessage, Role};
use crate::store::{Store, StoreError, WebChatRecord};

/// Hex digits in a chat's id.
const ID_CHARS: usize = 16;

/// How much of its first message names the earlier chat, in characters.
const NAMED_FROM_CHARS: usize = 48;

/// The chats desk over the store.
#[derive(Clone)]
pub struct WebChats {
    store: Store,
    clock: Clock,
}

impl WebChats {
    pub fn new(store: Store, clock: Clock) -> Self {
        Self { store, clock }
    }

    /// Lists the owner's conversation from before there were several chats
    /// (`web:owner`) as a chat of its own, named from its first message:
    /// once, when no chat is kept yet and it holds history.
    pub fn adopt_earlier(&self) -> Result<(), StoreError> {
        if !self.store.web_chats()?.is_empty() {
            return Ok(());
        }
        let chat = Person::Owner.chat(None).expect("the owner's conversation is valid");
        let key = ConversationKey::new(GatewayId::new(GATEWAY_ID).expect("the web gateway's id is valid"), chat);
        let turns: Vec<TurnRecord> = self
            .store
            .all_turns(&key)?
            .iter()
            .filter_map(|record| serde_json::from_slice(record).ok())
            .collect();
        let (Some(first), Some(last)) = (turns.first(), turns.last()) else {
            return Ok(());
        };
        let said = first
            .messages
            .iter()
            .filter(|m| m.role == Role::User)
            .find_map(ChatMessage::shown)
            .unwrap_or_default();
        let line = said
            .lines()
            .map(str::trim)
            .find(|l| !l.is_empty())
            .unwrap_or("Earlier chat");
        let name: String = line
            .chars()
            .filter(|c| !c.is_control())
            .take(NAMED_FROM_CHARS)
            .collect();
        let record = WebChatRecord {
            name,
            created_ms: first.at_ms.unwrap_or(0),
            last_ms: last.at_ms.unwrap_or(0).max(1),
        };
        self.store.keep_web_chat(EARLIER_CHAT_ID, &record)?;
        tracing::info!("the owner's earlier web conversation is listed as a chat");
        Ok(())
    }
}

fn unavailable(error: StoreError) -> SessionsUnavailable {
    SessionsUnavailable {
        message: error.to_string(),
    }
}

fn chat(id: String, record: WebChatRecord) -> WebChat {
    WebChat {
        id,
        name: record.name,
        created_ms: record.created_ms,
        last_ms: record.last_ms,
    }
}

impl Chats for WebChats {
    fn list(&self) -> Result<Vec<WebChat>, SessionsUnavailable> {
        let mut chats: Vec<WebChat> = self
            .store
            .web_chats()
            .map_err(unavailable)?
            .into_iter()
            .map(|(id, record)| chat(id, record))
            .collect();
        chats.sort_by(|a, b| b.newest_ms().cmp(&a.newest_ms()).then_with(|| b.id.cmp(&a.id)));
        Ok(chats)
    }

    fn get(&self, id: &str) -> Result<Option<WebChat>, SessionsUnavailable> {
        let record = self.store.web_chat(id).map_err(unavailable)?;
        Ok(record.map(|record| chat(id.to_owned(), record)))
    }

    fn open(&self) -> Result<WebChat, SessionsUnavailable> {
        if let Some(newest) = self.list()?.into_iter().next().filter(|c| c.last_ms == 0) {
            return Ok(newest);
        }
        let id = hex(secret().as_bytes())[..ID_CHARS].to_owned();
        let record = WebChatRecord {
            name: String::new(),
            created_ms: self.clock.now_ms(),
            last_ms: 0,
        };
        self.store.keep_web_chat(&id, &record).map_err(unavailable)?;
        Ok(chat(id, record))
    }

    fn sent(&self, id: &str, name: &str) -> Result<(), SessionsUnavailable> {
        let Some(mut record) = self.store.web_chat(id).map_err(unavailable)? else {
            return Ok(());
        };
        record.last_ms = self.clock.now_ms().max(record.created_ms);
        if record.name.is_empty() {
            name.clone_into(&mut record.name);
        }
        self.store.keep_web_chat(id, &record).map_err(unavailable)
    }

    fn rename(&self, id: &str, name: &str) -> Result<bool, SessionsUnavailable> {
        let Some(mut record) = self.store.web_chat(id).map_err(unavailable)? else {
            return Ok(false);
        };
        name.clone_into(&mut record.name);
        self.store.keep_web_chat(id, &record).map_err(unavailable)?;
        tracing::info!(chat = id, "a web chat was renamed from the dashboard");
        Ok(true)
    }

    fn delete(&self, id: &str) -> Result<bool, SessionsUnavailable> {
        let deleted = self.store.forget_web_chat(id).map_err(unavailable)?;
        if deleted {
            tracing::info!(chat = id, "a web chat and its history were deleted from the dashboard");
        }
        Ok(deleted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::tests::open_temp;

    #[tokio::test(start_paused = true)]
    async fn a_new_chat_is_reused_until_used_and_the_list_is_newest_first() {
        let (_dir, store) = open_temp();
        let desk = WebChats::new(store, Clock::at(1_700_000_000_000));
        let first = desk.open().unwrap();
        assert_eq!(first.id.len(), ID_CHARS);
        assert!(first.id.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(desk.open().unwrap(), first, "an unused chat is opened again");
        desk.sent(&first.id, "hello there").unwrap();
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        let second = desk.open().unwrap();
        assert_ne!(second.id, first.id);
        desk.sent(&second.id, "second").unwrap();
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        let listed: Vec<String> = desk.list().unwrap().into_iter().map(|c| c.name).collect();
        assert_eq!(listed, ["second", "hello there"]);
        tokio::time::advance(std::time::Duration::from_secs(1)).await;
        desk.sent(&first.id, "not a new name").unwrap();
        let listed: Vec<String> = desk.list().unwrap().into_iter().map(|c| c.name).collect();
        assert_eq!(listed, ["hello there", "second"], "used last, listed first; named once");
    }

    #[tokio::test]
    async fn the_earlier_conversation_is_listed_once_named_from_its_first_message() {
        let (_dir, store) = open_temp();
        let desk = WebChats::new(store.clone(), Clock::at(1_700_000_000_000));
        desk.adopt_earlier().unwrap();
        assert!(desk.list().unwrap().is_empty(), "no history, nothing listed");
        let key = ConversationKey::new(GatewayId::new(GATEWAY_ID).unwrap(), Person::Owner.chat(None).unwrap());
        let record = TurnRecord {
            messages: vec![
                ChatMessage::user("Plan the trip\nto Rome"),
                ChatMessage::assistant("Sure."),
            ],
            at_ms: Some(5),
            by: None,
        };
        let commit = crate::store::TurnCommit {
            history_record: Some(serde_json::to_vec(&record).unwrap()),
            ..Default::default()
        };
        store.commit_turn_durably(&key, commit).await.unwrap();
        desk.adopt_earlier().unwrap();
        let listed = desk.list().unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(
            (listed[0].id.as_str(), listed[0].name.as_str()),
            (EARLIER_CHAT_ID, "Plan the trip")
        );
        desk.delete(EARLIER_CHAT_ID).unwrap();
        desk.open().unwrap();
        desk.adopt_earlier().unwrap();
        assert!(
            desk.get(EARLIER_CHAT_ID).unwrap().is_none(),
            "once, before any chat is kept"
        );
    }

    #[test]
    fn a_chat_is_renamed_and_deleted_and_an_unknown_one_is_neither() {
        let (_dir, store) = open_temp();
        let desk = WebChats::new(store, Clock::at(1_700_000_000_000));
        let chat = desk.open().unwrap();
        assert!(desk.rename(&chat.id, "Trip").unwrap());
        assert_eq!(desk.get(&chat.id).unwrap().unwrap().name, "Trip");
        desk.sent(&chat.id, "first words").unwrap();
        assert_eq!(desk.get(&chat.id).unwrap().unwrap().name, "Trip", "a given name stays");
        assert!(!desk.rename("0000000000000000", "x").unwrap());
        assert!(desk.delete(&chat.id).unwrap());
        assert!(!desk.delete(&chat.id).unwrap());
        assert_eq!(desk.get(&chat.id).unwrap(), None);
    }
}
