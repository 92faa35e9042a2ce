//! Who may decide an approval. Each gateway component names its deciders:
//! listed users (a chat gateway's configured approvers), in the conversation
//! the prompt went to, or everyone it lets in — the local gateway, whose only
//! user is the daemon's own and approves everything, from anywhere through
//! the CLI. `approvals.global_approvers` may decide from any conversation. The set is copied into each approval
//! when it is created, so a later change of configuration never widens who
//! may decide a pending one.

use std::collections::HashMap;

use passepartout_gateway::{ConversationKey, GatewayId, UserId};

use super::record::{Approval, Approver, Person};
use crate::access::Roster;
use crate::config::ApprovalsConfig;

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
}

impl Policy {
    pub fn new(per_gateway: HashMap<GatewayId, Vec<Approver>>, global: Vec<Approver>) -> Self {
        let local = per_gateway
            .iter()
            .find(|(_, approvers)| approvers.iter().any(|a| a.user.is_none()))
            .map(|(gateway, _)| gateway.clone());
        Self {
            per_gateway,
            global,
            local,
        }
    }

    /// Each gateway's deciders, and `approvals.global_approvers` (entries
    /// that are not `gateway:user` were reported by validation and are
    /// skipped).
    pub fn from_rosters(deciders: impl IntoIterator<Item = (GatewayId, Roster)>, config: &ApprovalsConfig) -> Self {
        let per_gateway = deciders
            .into_iter()
            .map(|(gateway, deciders)| {
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
        Self::new(per_gateway, global)
    }

    /// The gateway of the local user, who decides through the CLI; none
    /// when no gateway lets everyone approve.
    pub fn local_gateway(&self) -> Option<&GatewayId> {
        self.local.as_ref()
    }

    /// Who may decide an approval asked for in `conversation`.
    pub fn approvers_for(&self, conversation: &ConversationKey) -> Vec<Approver> {
        let mut approvers = self.per_gateway.get(&conversation.gateway).cloned().unwrap_or_default();
        approvers.extend(self.global.iter().cloned());
        approvers
    }
}

/// Whether `person`, answering in `conversation`, may decide `approval`.
pub fn may_decide(approval: &Approval, person: &Person, conversation: &ConversationKey) -> Result<(), Refused> {
    let mut theirs = approval
        .approvers
        .iter()
        .filter(|a| a.gateway == person.gateway && a.user.as_ref().is_none_or(|user| person.is(user)))
        .peekable();
    if theirs.peek().is_none() {
        return Err(Refused::NotApprover);
    }
    if *conversation == approval.conversation || theirs.any(|a| a.anywhere) {
        Ok(())
    } else {
        Err(Refused::WrongConversation)
    }
}
