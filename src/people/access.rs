//! Who may talk to the assistant: on each gateway, the users and chats its
//! component lists (a sender matches by their id or any alias; anyone in a
//! listed chat may talk), or everyone when the gateway vouches for its peers
//! itself (the local gateway admits only the daemon's own uid), and beside
//! them the people an owner let in by pairing ([`Paired`]), which change
//! while the daemon runs. The lists themselves are replaced whole when the
//! configuration is reloaded ([`Access::set_rosters`]). Everyone else is
//! refused (or offered a pairing code) before anything is journaled.

mod paired;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arc_swap::ArcSwap;
use passepartout_gateway::{ConversationKey, GatewayId, Inbound, Sender};

pub use paired::Paired;

/// Who may do something through one gateway, by the ids its conversations carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Roster {
    /// Whoever the gateway lets in: it vouches for its peers itself (the
    /// local socket admits only the daemon's own user, who approves everything).
    Everyone,
    /// These users (matched by id or alias), and anyone in these chats.
    Listed { users: Vec<String>, chats: Vec<String> },
}

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
#[derive(Debug, Default)]
pub struct Access {
    gateways: ArcSwap<HashMap<GatewayId, Allowed>>,
    /// The people let in by pairing, on the gateways that list who may talk.
    paired: Arc<Paired>,
}

impl Access {
    /// From who may talk on each gateway.
    pub fn from_rosters(rosters: impl IntoIterator<Item = (GatewayId, Roster)>) -> Self {
        Self {
            gateways: ArcSwap::from_pointee(allowlists(rosters)),
            paired: Arc::default(),
        }
    }

    /// Replaces every gateway's lists with these, at once: the next message
    /// is judged by them (a reloaded configuration's).
    pub fn set_rosters(&self, rosters: impl IntoIterator<Item = (GatewayId, Roster)>) {
        self.gateways.store(Arc::new(allowlists(rosters)));
    }

    /// The same lists, and the people let in by pairing.
    pub fn with_paired(self, paired: Arc<Paired>) -> Self {
        Self { paired, ..self }
    }

    /// Whether the sender of `inbound` may talk to the assistant there.
    pub fn allows(&self, inbound: &Inbound) -> bool {
        self.allows_in(&inbound.conversation, &inbound.sender)
    }

    /// Whether `sender` may talk to the assistant in `conversation`.
    pub fn allows_in(&self, conversation: &ConversationKey, sender: &Sender) -> bool {
        match self.gateways.load().get(&conversation.gateway) {
            None => false,
            Some(Allowed::Everyone) => true,
            Some(Allowed::Listed { users, chats }) => {
                sender.ids().any(|id| users.contains(id.as_str()))
                    || chats.contains(conversation.chat.as_str())
                    || self.paired.allows(&conversation.gateway, sender)
            }
        }
    }

    /// Whether `gateway` vouches for its peers itself (it admits only the
    /// daemon's owner, as the terminal and the web do), so each of its
    /// conversations is the owner's own.
    pub fn vouches(&self, gateway: &GatewayId) -> bool {
        matches!(self.gateways.load().get(gateway), Some(Allowed::Everyone))
    }
}

fn allowlists(rosters: impl IntoIterator<Item = (GatewayId, Roster)>) -> HashMap<GatewayId, Allowed> {
    rosters
        .into_iter()
        .map(|(gateway, roster)| {
            let allowed = match roster {
                Roster::Everyone => Allowed::Everyone,
                Roster::Listed { users, chats } => Allowed::Listed {
                    users: users.into_iter().collect(),
                    chats: chats.into_iter().collect(),
                },
            };
            (gateway, allowed)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, InboundBody, MessageId, Sender, UserId};

    use super::*;

    /// A text from `user` in `chat` on `gateway`.
    fn from(gateway: &str, chat: &str, user: &str) -> Inbound {
        Inbound {
            conversation: ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap()),
            sender: Sender::new(UserId::new(user).unwrap()),
            message_id: MessageId::new("m").unwrap(),
            reply_to: None,
            body: InboundBody::Text { text: "hi".into() },
            received_at_ms: 0,
            overheard: false,
            by_reply_only: false,
            client: None,
        }
    }

    fn access() -> Access {
        let listed = Roster::Listed {
            users: vec!["alice".into()],
            chats: vec!["team".into()],
        };
        Access::from_rosters([
            (GatewayId::new("local").unwrap(), Roster::Everyone),
            (GatewayId::new("chat").unwrap(), listed),
        ])
    }

    #[test]
    fn a_gateway_that_vouches_for_its_peers_lets_everyone_in() {
        assert!(access().allows(&from("local", "anything", "anyone")));
    }

    #[test]
    fn listed_users_anywhere_and_anyone_in_listed_chats() {
        let access = access();
        assert!(access.allows(&from("chat", "alice", "alice")), "a listed user");
        assert!(
            access.allows(&from("chat", "elsewhere", "alice")),
            "a listed user, in any chat"
        );
        assert!(access.allows(&from("chat", "team", "bob")), "anyone in a listed chat");
        assert!(!access.allows(&from("chat", "bob", "bob")), "a stranger");
        let mut known = from("chat", "bob", "bob");
        known.sender.aliases = vec![UserId::new("alice").unwrap()];
        assert!(access.allows(&known), "listed under an alias");
    }

    #[test]
    fn paired_people_are_let_in_live_beside_the_lists() {
        let paired = Arc::new(Paired::default());
        let access = access().with_paired(paired.clone());
        assert!(!access.allows(&from("chat", "bob", "bob")));
        paired.insert(GatewayId::new("chat").unwrap(), UserId::new("bob").unwrap(), false);
        assert!(access.allows(&from("chat", "bob", "bob")), "at once");
        assert!(access.allows(&from("chat", "alice", "alice")), "the lists still hold");
        paired.insert(GatewayId::new("matrix").unwrap(), UserId::new("bob").unwrap(), false);
        assert!(
            !access.allows(&from("matrix", "bob", "bob")),
            "not on a gateway without a roster"
        );
        paired.remove(&GatewayId::new("chat").unwrap(), &UserId::new("bob").unwrap());
        assert!(!access.allows(&from("chat", "bob", "bob")), "revoked at once");
    }

    #[test]
    fn replaced_lists_apply_to_the_next_message() {
        let access = access();
        assert!(!access.allows(&from("chat", "bob", "bob")));
        access.set_rosters([(
            GatewayId::new("chat").unwrap(),
            Roster::Listed {
                users: vec!["bob".into()],
                chats: vec![],
            },
        )]);
        assert!(access.allows(&from("chat", "bob", "bob")), "the new list");
        assert!(!access.allows(&from("chat", "alice", "alice")), "the old list is gone");
        assert!(
            !access.allows(&from("local", "c", "u")),
            "a gateway left out lets nobody in"
        );
    }

    #[test]
    fn a_gateway_without_a_roster_lets_nobody_in() {
        assert!(!access().allows(&from("matrix", "alice", "alice")));
        assert!(!Access::default().allows(&from("local", "c", "u")));
    }
}
