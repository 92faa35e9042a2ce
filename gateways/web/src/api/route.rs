//! Which conversation a request belongs to. A request's messages are its
//! conversation: the ones before its last are hashed into a [`Chain`], and
//! when that is where one of the key's conversations stands (its last
//! answer included), the request continues it, and only its last message
//! enters. Anything else is a new conversation, seeded with the messages
//! the client sent before its last: a new chat, a regenerated answer (the
//! same history without its last answer) and an edited earlier message all
//! branch off, and never mix with the conversation they came from.
//!
//! Names, which a client may give:
//! - `X-Conversation: NAME` picks the key's conversation `NAME` whatever
//!   the messages say (a script that sends one message at a time keeps one
//!   conversation); the messages before the last seed it when it is new.
//! - `user`, which OpenAI defines as the end user's id and which chat front
//!   ends set alike for all of one person's chats, never continues a
//!   conversation by itself: it keeps the end users of one key apart (a
//!   history is matched only among the conversations begun with the same
//!   `user`), and their conversations are named after it
//!   (`key-<id>/NAME/~…`).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;

use passepartout_gateway::ChatId;

use super::chain::Chain;
use super::error::ApiError;
use super::wire::Asked;
use crate::keys::Key;
use crate::people::Person;
use crate::threads::Threads;

/// Where a request goes.
#[derive(Clone, Debug)]
pub struct Route {
    pub chat: ChatId,
    /// The conversation's messages before the request's last.
    pub chain: Chain,
    /// The messages before the last are to seed the conversation (it is
    /// new, or named and maybe new).
    pub seed: bool,
    /// An existing conversation is continued (or a named one, maybe).
    pub continued: bool,
}

/// The conversation `asked` belongs to, for `person` (whose key is `key`),
/// named `named` by the `X-Conversation` header.
pub fn route(
    threads: &dyn Threads,
    person: &Person,
    key: &Key,
    named: Option<&str>,
    asked: &Asked,
) -> Result<Route, ApiError> {
    let bad_name = |bad: crate::people::BadName| ApiError::invalid(Some("user"), "invalid_value", bad.0);
    let scope = person.chat(asked.user.as_deref()).map_err(bad_name)?;
    let mut chain = Chain::new(scope.as_str());
    for message in &asked.earlier {
        chain.push(message.role, &message.text);
    }
    if let Some(name) = named {
        let chat = person.chat(Some(name)).map_err(bad_name)?;
        return Ok(Route {
            chat,
            chain,
            seed: true,
            continued: true,
        });
    }
    if !asked.earlier.is_empty() {
        let found = threads.find(&key.id, &chain.tip()).map_err(|unavailable| {
            ApiError::status(
                axum::http::StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                format!("The conversations cannot be read now: {unavailable}"),
            )
        })?;
        // Only a conversation of this key and scope: another's name never
        // comes back from the index, but a key's own must hold too.
        if let Some(chat) = found.filter(|chat| within(chat, &scope)) {
            return Ok(Route {
                chat,
                chain,
                seed: false,
                continued: true,
            });
        }
    }
    Ok(Route {
        chat: fresh(&scope),
        chain,
        seed: true,
        continued: false,
    })
}

/// Whether `chat` is one of the conversations begun in `scope`.
fn within(chat: &ChatId, scope: &ChatId) -> bool {
    chat.as_str()
        .strip_prefix(scope.as_str())
        .is_some_and(|rest| rest.starts_with("/~"))
}

/// A new conversation in `scope`: `~` and 16 hex digits no other has
/// (`~` is in no name a client gives).
fn fresh(scope: &ChatId) -> ChatId {
    let n = RandomState::new().hash_one(0u8);
    ChatId::new(format!("{}/~{n:016x}", scope.as_str())).expect("a valid chat id")
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use passepartout_gateway::{EarlierMessage, EarlierRole};

    use super::*;
    use crate::api::chain::Tip;
    use crate::sessions::SessionsUnavailable;

    #[derive(Default)]
    struct Index(Mutex<HashMap<(String, Tip), ChatId>>);

    impl Threads for Index {
        fn find(&self, key: &str, tip: &Tip) -> Result<Option<ChatId>, SessionsUnavailable> {
            Ok(self.0.lock().unwrap().get(&(key.to_owned(), *tip)).cloned())
        }
        fn advance(&self, key: &str, chat: &ChatId, tip: &Tip) -> Result<(), SessionsUnavailable> {
            let mut index = self.0.lock().unwrap();
            index.retain(|_, c| c != chat);
            index.insert((key.to_owned(), *tip), chat.clone());
            Ok(())
        }
    }

    fn key() -> (Person, Key) {
        let key = Key {
            id: "0123456789ab".into(),
            approver: false,
        };
        (Person::Key(key.clone()), key)
    }

    fn asked(said: &[(EarlierRole, &str)], user: Option<&str>) -> Asked {
        let (last, before) = said.split_last().unwrap();
        Asked {
            text: last.1.into(),
            earlier: before
                .iter()
                .map(|(role, text)| EarlierMessage {
                    role: *role,
                    text: (*text).into(),
                })
                .collect(),
            instructions: None,
            stream: false,
            include_usage: false,
            user: user.map(str::to_owned),
        }
    }

    /// Routes `said` and, as an answer would, moves the conversation on to
    /// include `answer`.
    fn answered(index: &Index, said: &[(EarlierRole, &str)], answer: &str) -> Route {
        let (person, key) = key();
        let asked = asked(said, None);
        let route = route(index, &person, &key, None, &asked).unwrap();
        let tip = route
            .chain
            .clone()
            .with(User, &asked.text)
            .with(Assistant, answer)
            .tip();
        index.advance(&key.id, &route.chat, &tip).unwrap();
        route
    }

    use EarlierRole::{Assistant, User};

    #[test]
    fn a_resent_history_continues_its_conversation_and_a_new_chat_starts_another() {
        let index = Index::default();
        let first = answered(&index, &[(User, "hi")], "hello");
        assert!(!first.continued && first.seed);
        assert!(first.chat.as_str().starts_with("key-0123456789ab/~"), "{}", first.chat);
        let other = answered(&index, &[(User, "hi")], "hello");
        assert_ne!(other.chat, first.chat, "two fresh chats stay apart");
        let next = answered(&index, &[(User, "hi"), (Assistant, "hello"), (User, "more")], "sure");
        assert!(next.continued && !next.seed);
        assert!(
            next.chat == first.chat || next.chat == other.chat,
            "both stood at that history; the newest holds it"
        );
        let third = answered(
            &index,
            &[
                (User, "hi"),
                (Assistant, "hello"),
                (User, "more"),
                (Assistant, "sure"),
                (User, "and?"),
            ],
            "done",
        );
        assert_eq!(third.chat, next.chat);
    }

    #[test]
    fn a_regenerated_answer_and_an_edited_message_branch_off() {
        let index = Index::default();
        let first = answered(&index, &[(User, "q1")], "a1");
        answered(&index, &[(User, "q1"), (Assistant, "a1"), (User, "q2")], "a2");
        // Regenerate: q2 again, a2 dropped.
        let again = answered(&index, &[(User, "q1"), (Assistant, "a1"), (User, "q2")], "a2'");
        assert_ne!(again.chat, first.chat);
        assert!(again.seed && !again.continued);
        // Edit q1.
        let edited = answered(&index, &[(User, "q1 edited"), (Assistant, "a1"), (User, "q2")], "x");
        assert_ne!(edited.chat, first.chat);
        assert_ne!(edited.chat, again.chat);
    }

    #[test]
    fn user_keeps_end_users_apart_and_continues_nothing_by_itself_while_the_header_names_one() {
        let index = Index::default();
        let (person, key) = key();
        let one = route(&index, &person, &key, None, &asked(&[(User, "hi")], Some("ann"))).unwrap();
        assert!(one.chat.as_str().starts_with("key-0123456789ab/ann/~"), "{}", one.chat);
        let two = route(&index, &person, &key, None, &asked(&[(User, "hi")], Some("ann"))).unwrap();
        assert_ne!(one.chat, two.chat, "a user's new chat is a new conversation");
        let tip = one.chain.clone().with(User, "hi").with(Assistant, "hello").tip();
        index.advance(&key.id, &one.chat, &tip).unwrap();
        let history = [(User, "hi"), (Assistant, "hello"), (User, "more")];
        let bob = route(&index, &person, &key, None, &asked(&history, Some("bob"))).unwrap();
        assert!(!bob.continued, "another end user's history is not matched");
        let ann = route(&index, &person, &key, None, &asked(&history, Some("ann"))).unwrap();
        assert_eq!(ann.chat, one.chat);

        let named = route(&index, &person, &key, Some("trip"), &asked(&[(User, "x")], None)).unwrap();
        assert_eq!(named.chat.as_str(), "key-0123456789ab/trip");
        assert!(named.continued);
        let escape = route(&index, &person, &key, Some("../key-b"), &asked(&[(User, "x")], None));
        assert_eq!(escape.unwrap_err().param, Some("user"));
        let bad_user = route(&index, &person, &key, None, &asked(&[(User, "x")], Some("a/b")));
        assert_eq!(bad_user.unwrap_err().param, Some("user"));
    }
}
