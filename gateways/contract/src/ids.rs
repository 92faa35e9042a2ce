//! Validated identifier newtypes.
//!
//! Every id that crosses the contract is checked once, in its constructor, so
//! the core can use it as a store key or a log field without re-checking.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::InvalidId;

/// Longest id accepted from any platform, in bytes.
pub const MAX_ID_BYTES: usize = 256;

fn check_free_text(kind: &'static str, value: &str) -> Result<(), InvalidId> {
    if value.is_empty() {
        return Err(InvalidId::new(kind, value, "is empty"));
    }
    if value.len() > MAX_ID_BYTES {
        return Err(InvalidId::new(kind, value, "is longer than 256 bytes"));
    }
    if value.chars().any(char::is_control) {
        return Err(InvalidId::new(kind, value, "contains a control character"));
    }
    Ok(())
}

macro_rules! text_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $check:path) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validates `value` and wraps it.
            pub fn new(value: impl Into<String>) -> Result<Self, InvalidId> {
                let value = value.into();
                $check($kind, &value)?;
                Ok(Self(value))
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidId;
            fn try_from(value: String) -> Result<Self, InvalidId> {
                Self::new(value)
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

fn check_gateway(kind: &'static str, value: &str) -> Result<(), InvalidId> {
    let ok = (1..=32).contains(&value.len())
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(InvalidId::new(
            kind,
            value,
            "must be 1-32 characters of a-z, 0-9, - or _",
        ))
    }
}

/// The alphabet of approval tokens: no 0/O, 1/I/L, so a token read aloud or
/// retyped from a phone screen comes out right.
pub const TOKEN_ALPHABET: &str = "ABCDEFGHJKMNPQRSTUVWXYZ23456789";

fn check_token(kind: &'static str, value: &str) -> Result<(), InvalidId> {
    let ok = (6..=8).contains(&value.len()) && value.chars().all(|c| TOKEN_ALPHABET.contains(c));
    if ok {
        Ok(())
    } else {
        Err(InvalidId::new(
            kind,
            value,
            "must be 6-8 characters of the token alphabet",
        ))
    }
}

text_id!(
    /// Which gateway a message came through or goes to: `socket`, `telegram`, `signal`.
    GatewayId, "gateway id", check_gateway
);
text_id!(
    /// A chat on one platform: a Telegram chat id, a Signal contact or group, a socket conversation name.
    ChatId, "chat id", check_free_text
);
text_id!(
    /// A person on one platform: a Telegram user id, a Signal UUID, a local uid.
    UserId, "user id", check_free_text
);
text_id!(
    /// A platform's id for one message; the core's dedupe key together with the conversation.
    MessageId, "message id", check_free_text
);
text_id!(
    /// The short, single-use token a person answers an approval prompt with.
    ApprovalToken, "approval token", check_token
);

impl ApprovalToken {
    /// Parses a token as a person typed it: surrounding space ignored, any case.
    pub fn parse_typed(text: &str) -> Result<Self, InvalidId> {
        Self::new(text.trim().to_ascii_uppercase())
    }
}

/// One conversation: a chat on a gateway. The unit of ordering in the core.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ConversationKey {
    /// The gateway the chat is on.
    pub gateway: GatewayId,
    /// The chat, in that gateway's ids.
    pub chat: ChatId,
}

impl ConversationKey {
    /// The chat `chat` on the gateway `gateway`.
    pub fn new(gateway: GatewayId, chat: ChatId) -> Self {
        Self { gateway, chat }
    }
}

impl fmt::Display for ConversationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.gateway, self.chat)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_reject_empty_long_and_control_text() {
        assert!(ChatId::new("").is_err());
        assert!(ChatId::new("a".repeat(MAX_ID_BYTES + 1)).is_err());
        assert!(ChatId::new("a\0b").is_err());
        assert!(ChatId::new("a\nb").is_err());
        assert_eq!(ChatId::new("-100123").unwrap().as_str(), "-100123");
    }

    #[test]
    fn gateway_ids_are_short_lowercase_names() {
        assert!(GatewayId::new("telegram").is_ok());
        assert!(GatewayId::new("Telegram").is_err());
        assert!(GatewayId::new("a:b").is_err());
    }

    #[test]
    fn deserializing_validates() {
        assert!(serde_json::from_str::<ChatId>("\"\"").is_err());
        assert!(serde_json::from_str::<ChatId>("\"ok\"").is_ok());
    }

    #[test]
    fn tokens_use_the_unambiguous_alphabet() {
        assert!(ApprovalToken::new("K7PX2Q").is_ok());
        assert!(ApprovalToken::new("K7PX0Q").is_err(), "zero is ambiguous");
        assert!(ApprovalToken::new("K7P").is_err(), "too short");
        assert_eq!(ApprovalToken::parse_typed(" k7px2q ").unwrap().as_str(), "K7PX2Q");
    }
}
