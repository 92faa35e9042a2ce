//! People linked across channels: one person's identities on several
//! gateways (a Telegram account, a Signal number, the web owner, the local
//! terminal user), each with the private conversation it was linked from,
//! so the core can tell that conversation from a group the same account is
//! in. A link code waiting to be named elsewhere keeps the identity that
//! asked for it.

use passepartout_gateway::{ConversationKey, GatewayId, UserId};
use serde::{Deserialize, Serialize};

use super::approval::Names;

/// One account of a person on one gateway, and their private conversation there.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Identity {
    pub gateway: GatewayId,
    pub user: UserId,
    /// The other ids the gateway knows them by (a Signal number).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub aliases: Vec<UserId>,
    /// The private conversation it was linked from: memory and history are
    /// shared there, never in a group.
    pub conversation: ConversationKey,
    /// When it was linked, or when the code it waits on was issued.
    pub at_ms: u64,
    /// What their platform called them then, to show them by.
    #[serde(flatten)]
    pub names: Names,
}

impl Identity {
    /// Whether this is `user` on `gateway`.
    pub fn is(&self, gateway: &GatewayId, user: &UserId) -> bool {
        self.gateway == *gateway && self.user == *user
    }

    /// `gateway:user`, as people are named in commands.
    pub fn label(&self) -> String {
        format!("{}:{}", self.gateway, self.user.as_str())
    }
}

/// One person across channels, as the `people` tree keeps them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkedPerson {
    /// The number `passepartout people` shows and `people unlink` takes.
    pub id: u64,
    /// Two or more, in the order they were linked.
    pub identities: Vec<Identity>,
    pub created_ms: u64,
    /// The private conversation they chose with `/here`: what comes
    /// unasked (reminders, loops, the outcome of background work) goes
    /// there first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preferred: Option<ConversationKey>,
}

impl LinkedPerson {
    /// Their identity of `user` on `gateway`.
    pub fn identity(&self, gateway: &GatewayId, user: &UserId) -> Option<&Identity> {
        self.identities.iter().find(|identity| identity.is(gateway, user))
    }

    /// Their identity whose private conversation is `conversation`.
    pub fn speaking_in(&self, conversation: &ConversationKey) -> Option<&Identity> {
        self.identities
            .iter()
            .find(|identity| identity.conversation == *conversation)
    }

    /// Their private conversations in the order what comes unasked tries
    /// them: the one they chose with `/here` while it is still theirs,
    /// else `home`, then the others as they were linked.
    pub fn delivery_order<'a>(&'a self, home: &'a ConversationKey) -> Vec<&'a ConversationKey> {
        let first = self
            .preferred
            .as_ref()
            .and_then(|preferred| self.speaking_in(preferred))
            .map_or(home, |identity| &identity.conversation);
        let mut order = vec![first];
        order.extend(
            self.identities
                .iter()
                .map(|identity| &identity.conversation)
                .filter(|conversation| *conversation != first),
        );
        order
    }
}
