//! Where each relayed message went: for a person's message in a bridged
//! group (the origin), the platform ids of its copies in the bridge's
//! other chats. Two trees, written together when a copy is delivered:
//! `relays` (origin → its copies, by chat) and `relay_copies` (a copy →
//! its origin). A reply to any of them is mapped to the right message on
//! every side, and a message that answers a copy is known for one.
//!
//! Keys are the conversation prefix and the platform message id. The
//! records are kept (a few dozen bytes each): a reply may come long after.

use passepartout_gateway::{ConversationKey, MessageId};
use serde::{Deserialize, Serialize};
use sled::Transactional;

use super::approvals::{abort, decode, encode};
use super::error::StoreError;
use super::{Store, keys};

/// A message in one chat: a person's, or a copy of one.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Posted {
    pub conversation: ConversationKey,
    pub message: MessageId,
}

/// An origin's copies, by chat; a copy sent in parts has several ids.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
struct Copies {
    copies: Vec<(ConversationKey, Vec<MessageId>)>,
    at_ms: u64,
}

fn key(message: &Posted) -> Vec<u8> {
    let mut key = keys::conversation_prefix(&message.conversation);
    key.extend_from_slice(message.message.as_str().as_bytes());
    key
}

impl Store {
    /// `origin` reached `to` as the messages `ids`, at `at_ms`.
    pub fn index_copy(
        &self,
        origin: &Posted,
        to: &ConversationKey,
        ids: &[MessageId],
        at_ms: u64,
    ) -> Result<(), StoreError> {
        if ids.is_empty() {
            return Ok(());
        }
        let origin_key = key(origin);
        let origin_value = encode("relay_copies", origin)?;
        let _writing = self.writing();
        let trees = (&self.inner.relays, &self.inner.relay_copies);
        let indexed = trees.transaction(|(relays, copies)| {
            let mut known: Copies = match relays.get(&origin_key)? {
                Some(value) => decode("relays", &value).map_err(abort)?,
                None => Copies::default(),
            };
            // A message of several files became several copies there: each kept.
            match known.copies.iter_mut().find(|(chat, _)| chat == to) {
                Some((_, known_ids)) => known_ids.extend(
                    ids.iter()
                        .filter(|id| !known_ids.contains(id))
                        .cloned()
                        .collect::<Vec<_>>(),
                ),
                None => known.copies.push((to.clone(), ids.to_vec())),
            }
            known.at_ms = at_ms;
            relays.insert(origin_key.as_slice(), encode("relays", &known).map_err(abort)?)?;
            for id in ids {
                let copy = Posted {
                    conversation: to.clone(),
                    message: id.clone(),
                };
                copies.insert(key(&copy), origin_value.as_slice())?;
            }
            Ok(())
        });
        self.wrote(indexed.map_err(StoreError::from))
    }

    /// The message that stands for `message` in `to`: itself when it is
    /// there, else its (first) copy there, reached through its origin when
    /// it is a copy itself. None when it never reached `to`.
    pub fn counterpart(&self, message: &Posted, to: &ConversationKey) -> Result<Option<MessageId>, StoreError> {
        Ok(self.counterparts(message, to)?.into_iter().next())
    }

    /// Every message that stands for `message` in `to` (a message in parts,
    /// or of several files, has several copies), in the order sent.
    pub fn counterparts(&self, message: &Posted, to: &ConversationKey) -> Result<Vec<MessageId>, StoreError> {
        let origin = self.origin_of(message)?.unwrap_or_else(|| message.clone());
        if origin.conversation == *to {
            return Ok(vec![origin.message]);
        }
        let Some(value) = self.inner.relays.get(key(&origin))? else {
            return Ok(Vec::new());
        };
        let known: Copies = decode("relays", &value)?;
        Ok(known
            .copies
            .into_iter()
            .find(|(chat, _)| chat == to)
            .map(|(_, ids)| ids)
            .unwrap_or_default())
    }

    /// The person's message `copy` is a copy of, if it is one.
    pub fn origin_of(&self, copy: &Posted) -> Result<Option<Posted>, StoreError> {
        match self.inner.relay_copies.get(key(copy))? {
            Some(value) => decode("relay_copies", &value).map(Some),
            None => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, GatewayId};

    use super::*;
    use crate::store::tests::open_temp;

    fn at(gateway: &str, chat: &str, id: &str) -> Posted {
        Posted {
            conversation: ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap()),
            message: MessageId::new(id).unwrap(),
        }
    }

    #[test]
    fn a_message_and_its_copies_stand_for_each_other_in_every_chat() {
        let (_dir, store) = open_temp();
        let origin = at("telegram", "-100", "7");
        let signal = at("signal", "group:a", "1700:bot").conversation;
        let web = at("web", "w", "x").conversation;
        assert_eq!(store.counterpart(&origin, &signal).unwrap(), None, "not relayed yet");
        store
            .index_copy(&origin, &signal, &[MessageId::new("1700").unwrap()], 5)
            .unwrap();
        store
            .index_copy(&origin, &web, &[MessageId::new("w1").unwrap()], 5)
            .unwrap();
        let copy = at("signal", "group:a", "1700");
        assert_eq!(store.origin_of(&copy).unwrap(), Some(origin.clone()));
        assert_eq!(store.origin_of(&origin).unwrap(), None, "the origin is no copy");
        store
            .index_copy(&origin, &signal, &[MessageId::new("1701").unwrap()], 6)
            .unwrap();
        let both: Vec<String> = store
            .counterparts(&origin, &signal)
            .unwrap()
            .iter()
            .map(|id| id.as_str().to_owned())
            .collect();
        assert_eq!(both, ["1700", "1701"], "a second file's copy is kept beside the first");
        assert_eq!(store.counterpart(&origin, &signal).unwrap(), Some(copy.message.clone()));
        assert_eq!(
            store.counterpart(&copy, &origin.conversation).unwrap(),
            Some(origin.message.clone()),
            "a reply to the copy quotes the origin where it lives"
        );
        assert_eq!(
            store.counterpart(&copy, &web).unwrap().map(|id| id.as_str().to_owned()),
            Some("w1".into()),
            "and the copy in a third chat"
        );
    }
}
