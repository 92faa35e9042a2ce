//! The contract's ids and messages in one line each, for tests. Every id
//! given must be valid: a bad one is a bug in the test, so it panics.

use passepartout_gateway::{
    ChatId, ConversationKey, GatewayId, Inbound, InboundBody, MessageId, Outbound, OutboundBody, ReplyKind, Sender,
    UserId,
};

/// The chat `id`.
pub fn chat(id: &str) -> ChatId {
    ChatId::new(id).expect("a valid chat id")
}

/// The message id `id`.
pub fn message_id(id: &str) -> MessageId {
    MessageId::new(id).expect("a valid message id")
}

/// The conversation with `chat` on the gateway called `gateway`.
pub fn conversation(gateway: &str, chat_id: &str) -> ConversationKey {
    ConversationKey::new(GatewayId::new(gateway).expect("a valid gateway id"), chat(chat_id))
}

/// A text answer.
pub fn answer(text: &str) -> OutboundBody {
    OutboundBody::Text {
        text: text.to_owned(),
        kind: ReplyKind::Answer,
    }
}

/// An outbound message `out-1` to `conversation`, quoting `in_reply_to`.
pub fn outbound(conversation: ConversationKey, in_reply_to: Option<&str>, body: OutboundBody) -> Outbound {
    Outbound {
        drafts: Vec::new(),
        turn_end: None,
        id: "out-1".to_owned(),
        conversation,
        in_reply_to: in_reply_to.map(message_id),
        body,
    }
}

/// A text message `id` in `conversation`, from the user named like its chat.
pub fn text_inbound(conversation: ConversationKey, id: &str, text: &str) -> Inbound {
    let sender = Sender::new(UserId::new(conversation.chat.as_str()).expect("a valid user id"));
    Inbound {
        conversation,
        sender,
        message_id: message_id(id),
        reply_to: None,
        body: InboundBody::Text { text: text.to_owned() },
        received_at_ms: 0,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}
