//! Who wrote the messages the core may answer, so that a reply can quote them.
//!
//! signal-cli quotes a message by its timestamp *and* its author; the contract
//! gives the gateway only the message id (the timestamp). The gateway remembers
//! the author of the last [`CAPACITY`] inbound messages; a reply to an older
//! one (or after a restart) in a group goes out without the quote, while in a
//! one-to-one chat the author can only be the other person.

use std::collections::{HashMap, VecDeque};

use passepartout_gateway::{ConversationKey, MessageId, UserId};

/// How many inbound messages' authors are remembered.
pub const CAPACITY: usize = 4096;

/// A bounded map from (conversation, message id) to author.
#[derive(Debug, Default)]
pub struct RecentAuthors {
    authors: HashMap<(ConversationKey, MessageId), UserId>,
    order: VecDeque<(ConversationKey, MessageId)>,
}

impl RecentAuthors {
    /// Remembers that `author` wrote `message` in `conversation`.
    pub fn remember(&mut self, conversation: &ConversationKey, message: &MessageId, author: &UserId) {
        let key = (conversation.clone(), message.clone());
        if self.authors.insert(key.clone(), author.clone()).is_none() {
            self.order.push_back(key);
        }
        while self.order.len() > CAPACITY {
            if let Some(oldest) = self.order.pop_front() {
                self.authors.remove(&oldest);
            }
        }
    }

    /// Who wrote `message` in `conversation`, if remembered.
    pub fn author(&self, conversation: &ConversationKey, message: &MessageId) -> Option<&UserId> {
        self.authors.get(&(conversation.clone(), message.clone()))
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, GatewayId};

    use super::*;

    #[test]
    fn forgets_the_oldest_past_capacity() {
        let conversation = ConversationKey::new(GatewayId::new("signal").unwrap(), ChatId::new("c").unwrap());
        let author = UserId::new("u").unwrap();
        let mut authors = RecentAuthors::default();
        for n in 0..=CAPACITY {
            authors.remember(&conversation, &MessageId::new(n.to_string()).unwrap(), &author);
        }
        assert_eq!(authors.author(&conversation, &MessageId::new("0").unwrap()), None);
        assert_eq!(
            authors.author(&conversation, &MessageId::new(CAPACITY.to_string()).unwrap()),
            Some(&author)
        );
    }
}
