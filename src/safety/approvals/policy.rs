//! Who may decide an approval. Each gateway component names its deciders:
//! listed users (a chat gateway's configured approvers), in the conversation
//! the prompt went to, or everyone it lets in — the local gateway, whose only
//! user is the daemon's own and approves everything, from anywhere through
//! the CLI. `approvals.global_approvers` may decide from any conversation.
//! People paired as approvers decide on their gateway as its listed users do.
//! The set is copied into each approval when it is created, so a later
//! change of configuration never widens who may decide a pending one.

use std::collections::HashMap;
use std::sync::Arc;

use passepartout_gateway::{ConversationKey, GatewayId, UserId};

use super::record::{Approval, Approver, Person};
use crate::config::ApprovalsConfig;
use crate::people::access::{Paired, Roster};

/// Why an answer was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    NotApprover,
    WrongConversation,
}

#[derive(Clone, Debug, Default)]
pub struct Policy {
    per_gateway: HashMap<GatewayId, Vec<Approver>>,
    global: Vec<Approver>,
    /// The gateway whose every user approves: the local one, whose user
    /// decides through the CLI.
    local: Option<GatewayId>,
    /// The people paired, some of them as approvers.
    paired: Arc<Paired>,
}

impl Policy {
    /// Who may decide on each gateway, who may decide from anywhere, and
    /// the `local` gateway, as whose user the CLI decides.
    pub fn new(
        per_gateway: HashMap<GatewayId, Vec<Approver>>,
        global: Vec<Approver>,
        local: Option<GatewayId>,
    ) -> Self {
        Self {
            per_gateway,
            global,
            local,
            paired: Arc::default(),
        }
    }

    /// The same, with the people paired as approvers deciding too.
    pub fn with_paired(self, paired: Arc<Paired>) -> Self {
        Self { paired, ..self }
    }

    /// Each gateway's deciders, in the gateways' order, and
    /// `approvals.global_approvers` (entries that are not `gateway:user`
    /// were reported by validation and are skipped). The local gateway is
    /// the first that lets everyone approve; a later one that does too is
    /// not local (its users still approve in its own conversations).
    pub fn from_rosters(deciders: impl IntoIterator<Item = (GatewayId, Roster)>, config: &ApprovalsConfig) -> Self {
        let mut local: Option<GatewayId> = None;
        let per_gateway = deciders
            .into_iter()
            .map(|(gateway, deciders)| {
                if deciders == Roster::Everyone {
                    match &local {
                        None => local = Some(gateway.clone()),
                        Some(first) => tracing::warn!(
                            %gateway,
                            local = %first,
                            "a second gateway lets everyone approve; the CLI decides as the first one's user"
                        ),
                    }
                }
                let approvers = match deciders {
                    Roster::Everyone => vec![Approver {
                        gateway: gateway.clone(),
                        user: None,
                        anywhere: false,
                    }],
                    Roster::Listed { users, .. } => users
                        .into_iter()
                        .filter_map(|id| UserId::new(id).ok())
                        .map(|user| Approver {
                            gateway: gateway.clone(),
                            user: Some(user),
                            anywhere: false,
                        })
                        .collect(),
                };
                (gateway, approvers)
            })
            .collect();
        let global = config
            .global()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|(gateway, user)| {
                Some(Approver {
                    gateway: GatewayId::new(gateway).ok()?,
                    user: Some(UserId::new(user).ok()?),
                    anywhere: true,
                })
            })
            .collect();
        Self::new(per_gateway, global, local)
    }

    /// The gateway of the local user, who decides through the CLI; none
    /// when no gateway lets everyone approve.
    pub fn local_gateway(&self) -> Option<&GatewayId> {
        self.local.as_ref()
    }

    /// Whether `gateway` lets everyone it admits approve: it vouches for
    /// its peers (the terminal, the dashboard), so each of its
    /// conversations is the owner's own.
    pub fn vouches(&self, gateway: &GatewayId) -> bool {
        (self.per_gateway.get(gateway)).is_some_and(|approvers| approvers.iter().any(|a| a.user.is_none()))
    }

    /// Who may decide an approval asked for in `conversation`.
    pub fn approvers_for(&self, conversation: &ConversationKey) -> Vec<Approver> {
        let mut approvers = self.per_gateway.get(&conversation.gateway).cloned().unwrap_or_default();
        approvers.extend(
            self.paired
                .approvers(&conversation.gateway)
                .into_iter()
                .map(|user| Approver {
                    gateway: conversation.gateway.clone(),
                    user: Some(user),
                    anywhere: false,
                }),
        );
        approvers.extend(self.global.iter().cloned());
        approvers
    }
}

/// Whether `person`, answering in `conversation`, may decide `approval`.
pub fn may_decide(approval: &Approval, person: &Person, conversation: &ConversationKey) -> Result<(), Refused> {
    may_act(&approval.approvers, &approval.conversation, person, conversation)
}

/// Whether `person`, in `conversation`, is one of `approvers` of what
/// belongs to `home` (an approval asked for there, a standing rule of it).
pub fn may_act(
    approvers: &[Approver],
    home: &ConversationKey,
    person: &Person,
    conversation: &ConversationKey,
) -> Result<(), Refused> {
    let mut theirs = approvers
        .iter()
        .filter(|a| a.gateway == person.gateway && a.user.as_ref().is_none_or(|user| person.is(user)))
        .peekable();
    if theirs.peek().is_none() {
        return Err(Refused::NotApprover);
    }
    if conversation == home || theirs.any(|a| a.anywhere) {
        Ok(())
    } else {
        Err(Refused::WrongConversation)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(gateway: &str) -> GatewayId {
        GatewayId::new(gateway).unwrap()
    }

    fn listed(user: &str) -> Roster {
        Roster::Listed {
            users: vec![user.to_owned()],
            chats: Vec::new(),
        }
    }

    #[test]
    fn the_local_gateway_is_the_one_that_lets_everyone_approve() {
        let rosters = [(id("chat"), listed("42")), (id("local"), Roster::Everyone)];
        let policy = Policy::from_rosters(rosters, &ApprovalsConfig::default());
        assert_eq!(policy.local_gateway(), Some(&id("local")));
        let rosters = [(id("chat"), listed("42"))];
        let policy = Policy::from_rosters(rosters, &ApprovalsConfig::default());
        assert_eq!(policy.local_gateway(), None, "nobody approves everything");
    }

    #[test]
    fn of_two_gateways_that_let_everyone_approve_the_first_is_local() {
        for (first, second) in [("a", "b"), ("b", "a")] {
            let rosters = [
                (id(first), Roster::Everyone),
                (id("chat"), listed("42")),
                (id(second), Roster::Everyone),
            ];
            let policy = Policy::from_rosters(rosters, &ApprovalsConfig::default());
            assert_eq!(policy.local_gateway(), Some(&id(first)), "{first} listed first");
            let elsewhere = ConversationKey::new(id(second), passepartout_gateway::ChatId::new("1").unwrap());
            assert!(
                policy.approvers_for(&elsewhere).iter().any(|a| a.user.is_none()),
                "the other one's users still approve there"
            );
        }
    }

    #[test]
    fn the_local_gateway_is_the_one_given() {
        let per_gateway = HashMap::from([(id("a"), vec![]), (id("b"), vec![])]);
        let policy = Policy::new(per_gateway, Vec::new(), Some(id("b")));
        assert_eq!(policy.local_gateway(), Some(&id("b")));
    }
}
