//! Who may decide an approval. The local socket's user always may (the
//! gateway admits only the daemon's own uid); Telegram's are
//! `telegram.approvers` (by default its `allowed_users`), in the chat the
//! prompt went to; `approvals.global_approvers` may decide from any conversation.
//! The set is copied into each approval when it is created, so a later
//! change of configuration never widens who may decide a pending one.

use std::collections::HashMap;

use passepartout_gateway::{ConversationKey, GatewayId, UserId};

use super::record::{Approval, Approver, Person};
use crate::config::Config;

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
}

impl Policy {
    pub fn new(per_gateway: HashMap<GatewayId, Vec<Approver>>, global: Vec<Approver>) -> Self {
        Self { per_gateway, global }
    }

    /// The socket's user and `approvals.global_approvers` (entries that are
    /// not `gateway:user` were reported by validation and are skipped).
    pub fn from_config(config: &Config) -> Self {
        let mut per_gateway = HashMap::new();
        if let Ok(socket) = GatewayId::new(passepartout_socket::GATEWAY_ID) {
            per_gateway.insert(
                socket.clone(),
                vec![Approver {
                    gateway: socket,
                    user: None,
                    anywhere: false,
                }],
            );
        }
        if let Ok(telegram) = GatewayId::new(passepartout_telegram::GATEWAY_ID) {
            let approvers = config
                .telegram
                .approver_ids()
                .iter()
                .filter_map(|id| UserId::new(id.to_string()).ok())
                .map(|user| Approver {
                    gateway: telegram.clone(),
                    user: Some(user),
                    anywhere: false,
                })
                .collect();
            per_gateway.insert(telegram, approvers);
        }
        if let Ok(signal) = GatewayId::new(passepartout_signal::GATEWAY_ID) {
            let approvers = config
                .signal
                .approver_ids()
                .iter()
                .filter_map(|id| UserId::new(id.clone()).ok())
                .map(|user| Approver {
                    gateway: signal.clone(),
                    user: Some(user),
                    anywhere: false,
                })
                .collect();
            per_gateway.insert(signal, approvers);
        }
        let global = config
            .approvals
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
        Self { per_gateway, global }
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
