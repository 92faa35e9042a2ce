//! Key layouts. Conversation-scoped keys start with the conversation prefix
//! (`gateway 0x00 chat 0x00`; ids never contain control characters), followed
//! by big-endian numbers so that sled's byte order is time order.

use passepartout_gateway::{ConversationKey, MessageId};

pub fn conversation_prefix(conversation: &ConversationKey) -> Vec<u8> {
    let gateway = conversation.gateway.as_str().as_bytes();
    let chat = conversation.chat.as_str().as_bytes();
    let mut key = Vec::with_capacity(gateway.len() + chat.len() + 2 + 16);
    key.extend_from_slice(gateway);
    key.push(0);
    key.extend_from_slice(chat);
    key.push(0);
    key
}

/// The conversation a conversation-scoped key belongs to.
pub fn conversation_of(key: &[u8]) -> Option<ConversationKey> {
    let mut parts = key.splitn(3, |b| *b == 0);
    let gateway = std::str::from_utf8(parts.next()?).ok()?;
    let chat = std::str::from_utf8(parts.next()?).ok()?;
    parts.next()?;
    Some(ConversationKey::new(
        passepartout_gateway::GatewayId::new(gateway).ok()?,
        passepartout_gateway::ChatId::new(chat).ok()?,
    ))
}

pub fn sequenced(conversation: &ConversationKey, numbers: &[u64]) -> Vec<u8> {
    let mut key = conversation_prefix(conversation);
    for number in numbers {
        key.extend_from_slice(&number.to_be_bytes());
    }
    key
}

pub fn dedupe(conversation: &ConversationKey, message: &MessageId) -> Vec<u8> {
    let mut key = conversation_prefix(conversation);
    key.extend_from_slice(message.as_str().as_bytes());
    key
}

pub fn seq(seq: u64) -> [u8; 8] {
    seq.to_be_bytes()
}

pub fn decode_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(bytes.try_into().ok()?))
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, GatewayId};

    use super::*;

    #[test]
    fn conversation_round_trips_through_a_key() {
        let conversation = ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("a b").unwrap());
        let key = sequenced(&conversation, &[7, 1]);
        assert_eq!(conversation_of(&key), Some(conversation));
    }

    #[test]
    fn a_chat_is_not_a_prefix_of_a_longer_chat() {
        let gateway = GatewayId::new("socket").unwrap();
        let short = conversation_prefix(&ConversationKey::new(gateway.clone(), ChatId::new("a").unwrap()));
        let long = conversation_prefix(&ConversationKey::new(gateway, ChatId::new("ab").unwrap()));
        assert!(!long.starts_with(&short));
    }
}
