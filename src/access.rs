//! Who may talk to the assistant: on each gateway, the users and chats its
//! component lists (a sender matches by their id or any alias; anyone in a
//! listed chat may talk), or everyone when the gateway vouches for its peers
//! itself (the local socket admits only the daemon's own uid). Everyone else
//! is refused before anything is journaled.

use std::collections::{HashMap, HashSet};

use passepartout_gateway::{GatewayId, Inbound};

use crate::config::Config;
use crate::gateways::{GatewayComponent, Roster};

/// One gateway's allowlist.
#[derive(Clone, Debug)]
enum Allowed {
    Everyone,
    Listed {
        users: HashSet<String>,
        chats: HashSet<String>,
    },
}

/// Every gateway's allowlist. A gateway without one lets nobody in.
#[derive(Clone, Debug, Default)]
pub struct Access {
    gateways: HashMap<GatewayId, Allowed>,
}

impl Access {
    /// From every gateway component of `config`.
    pub fn from_config(config: &Config) -> Self {
        Self::from_components(&crate::gateways::components(config))
    }

    /// From each component's talkers.
    pub fn from_components(components: &[Box<dyn GatewayComponent>]) -> Self {
        let gateways = components
            .iter()
            .map(|component| {
                let allowed = match component.talkers() {
                    Roster::Everyone => Allowed::Everyone,
                    Roster::Listed { users, chats } => Allowed::Listed {
                        users: users.into_iter().collect(),
                        chats: chats.into_iter().collect(),
                    },
                };
                (component.id(), allowed)
            })
            .collect();
        Self { gateways }
    }

    /// Whether the sender of `inbound` may talk to the assistant there.
    pub fn allows(&self, inbound: &Inbound) -> bool {
        match self.gateways.get(&inbound.conversation.gateway) {
            None => false,
            Some(Allowed::Everyone) => true,
            Some(Allowed::Listed { users, chats }) => {
                inbound.sender.ids().any(|id| users.contains(id.as_str()))
                    || chats.contains(inbound.conversation.chat.as_str())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, InboundBody, MessageId, Sender, UserId};

    use super::*;

    fn from(gateway: &str, chat: &str, user: &str) -> Inbound {
        Inbound {
            conversation: ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap()),
            sender: Sender::new(UserId::new(user).unwrap()),
            message_id: MessageId::new("m").unwrap(),
            reply_to: None,
            body: InboundBody::Text { text: "hi".into() },
            received_at_ms: 0,
        }
    }

    #[test]
    fn listed_users_and_chats_only() {
        let mut config = Config::default();
        config.telegram.allowed_users = vec![42];
        config.telegram.allowed_chats = vec![-100];
        let access = Access::from_config(&config);
        assert!(access.allows(&from("socket", "uid-1000", "1000")));
        assert!(access.allows(&from("telegram", "42", "42")), "a listed user");
        assert!(
            access.allows(&from("telegram", "-5", "42")),
            "a listed user, in any chat"
        );
        assert!(access.allows(&from("telegram", "-100", "7")), "anyone in a listed chat");
        assert!(!access.allows(&from("telegram", "7", "7")), "a stranger");
        assert!(!access.allows(&from("matrix", "42", "42")), "no allowlist: nobody");
    }

    #[test]
    fn signal_senders_by_uuid_and_whole_groups() {
        let mut config = Config::default();
        config.signal.allowed_senders = vec!["uuid-a".into()];
        config.signal.allowed_groups = vec!["R3JvdXA=".into()];
        let access = Access::from_config(&config);
        assert!(access.allows(&from("signal", "uuid-a", "uuid-a")));
        assert!(
            access.allows(&from("signal", "group:R3JvdXA=", "uuid-b")),
            "anyone in a listed group"
        );
        assert!(!access.allows(&from("signal", "uuid-b", "uuid-b")));
        assert!(!access.allows(&from("signal", "group:other", "uuid-b")));
    }

    #[test]
    fn signal_senders_by_number_match_their_alias() {
        let mut config = Config::default();
        config.signal.allowed_senders = vec!["+15550000002".into()];
        let access = Access::from_config(&config);
        let mut known = from("signal", "uuid-b", "uuid-b");
        assert!(!access.allows(&known), "no number given, no match");
        known.sender.aliases = vec![UserId::new("+15550000002").unwrap()];
        assert!(access.allows(&known), "the number is the sender's alias");
        known.sender.aliases = vec![UserId::new("+15550000003").unwrap()];
        assert!(!access.allows(&known), "another number");
    }

    #[test]
    fn nobody_by_default() {
        let access = Access::from_config(&Config::default());
        assert!(!access.allows(&from("telegram", "42", "42")));
    }
}
