//! Who may talk to the assistant: the local socket's peers (the gateway
//! admits only the daemon's own uid), and on each chat gateway the users and
//! chats its section lists (Telegram user and chat ids; Signal sender UUIDs
//! or numbers, and group ids). A sender matches by their id or any alias. Everyone else is refused before anything is
//! journaled.

use std::collections::{HashMap, HashSet};

use passepartout_gateway::{GatewayId, Inbound};

use crate::config::Config;

/// One gateway's allowlist.
#[derive(Clone, Debug, Default)]
struct Allowed {
    users: HashSet<String>,
    chats: HashSet<String>,
}

/// Every gateway's allowlist. A gateway without one lets nobody in.
#[derive(Clone, Debug, Default)]
pub struct Access {
    gateways: HashMap<GatewayId, Allowed>,
}

impl Access {
    pub fn from_config(config: &Config) -> Self {
        let mut gateways = HashMap::new();
        if let Ok(telegram) = GatewayId::new(passepartout_telegram::GATEWAY_ID) {
            let ids = |list: &[i64]| list.iter().map(i64::to_string).collect();
            gateways.insert(
                telegram,
                Allowed {
                    users: ids(&config.telegram.allowed_users),
                    chats: ids(&config.telegram.allowed_chats),
                },
            );
        }
        if let Ok(signal) = GatewayId::new(passepartout_signal::GATEWAY_ID) {
            let prefixed = |groups: &[String]| {
                groups
                    .iter()
                    .map(|group| format!("{}{group}", passepartout_signal::normalize::GROUP_PREFIX))
                    .collect()
            };
            gateways.insert(
                signal,
                Allowed {
                    users: config.signal.allowed_senders.iter().cloned().collect(),
                    chats: prefixed(&config.signal.allowed_groups),
                },
            );
        }
        Self { gateways }
    }

    /// Whether the sender of `inbound` may talk to the assistant there.
    pub fn allows(&self, inbound: &Inbound) -> bool {
        let gateway = &inbound.conversation.gateway;
        if gateway.as_str() == passepartout_socket::GATEWAY_ID {
            return true;
        }
        self.gateways.get(gateway).is_some_and(|allowed| {
            inbound.sender.ids().any(|id| allowed.users.contains(id.as_str()))
                || allowed.chats.contains(inbound.conversation.chat.as_str())
        })
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
