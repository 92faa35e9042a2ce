//! What pairing tells people besides the stranger's code: every owner of
//! the stranger's gateway is told who asks and how to let them in, in
//! their private conversation with that gateway, as often as
//! [`super::announced`] lets, and the stranger is told once they are let in. Both go through the outbox, written in the
//! transaction that keeps the code or the pairing, so each is sent once,
//! and survives a restart until delivered.

use passepartout_gateway::{ChatId, ConversationKey, GatewayId, OutboundBody, ReplyKind, UserId};

use super::{Lists, Pairing};
use crate::people::access::Roster;
use crate::people::named;
use crate::store::{PairedPerson, PendingPairing};

/// A message for one conversation's outbox.
pub type Notice = (ConversationKey, OutboundBody);

impl Pairing {
    /// The owners of `gateway` who can be written to: its listed approvers,
    /// the global ones on it and the people paired as approvers on it, each
    /// once. A gateway that lets everyone approve (the local socket) has no
    /// one to write to; its user reads `passepartout pair list`.
    pub(super) fn owners_of(&self, gateway: &GatewayId) -> Vec<UserId> {
        let mut owners: Vec<UserId> = Vec::new();
        let lists = self.lists.load();
        let listed = lists
            .iter()
            .filter(|l: &&Lists| l.gateway == *gateway)
            .flat_map(|l| match &l.deciders {
                Roster::Everyone => Vec::new(),
                Roster::Listed { users, .. } => users.clone(),
            });
        let global = self
            .global
            .load()
            .iter()
            .filter(|(g, _)| g == gateway.as_str())
            .map(|(_, user)| user.clone())
            .collect::<Vec<_>>();
        for user in listed.chain(global) {
            if let Ok(user) = UserId::new(user) {
                owners.push(user);
            }
        }
        owners.extend(self.paired.approvers(gateway));
        owners.sort();
        owners.dedup();
        owners
    }
}

/// What each owner of `pending`'s gateway (`owners`) is told: who asks
/// with `code`, and how to let them in; and how many asked before without
/// a message of their own (`unannounced`).
pub(super) fn request(
    owners: &[UserId],
    pending: &PendingPairing,
    code: &str,
    minutes: u64,
    unannounced: u32,
) -> Vec<Notice> {
    let gateway = &pending.conversation.gateway;
    let who = named(gateway, &pending.user, &pending.names);
    let mut text = format!(
        "{who} asks to be let in. To let them in, send `/pair approve {code}` here (add `approver` \
         to let them approve actions too). The code is valid for {minutes} minutes; if nobody \
         approves it, they stay out."
    );
    if unannounced > 0 {
        text = format!(
            "{text} {unannounced} more asked before without a message of their own; \
             `passepartout pair list` shows everyone waiting."
        );
    }
    to_owners(owners, pending, &text)
}

/// What each owner of `pending`'s gateway is told once a minute when more
/// strangers ask than they are told of one by one.
pub(super) fn folded(owners: &[UserId], pending: &PendingPairing) -> Vec<Notice> {
    let gateway = &pending.conversation.gateway;
    let text = format!(
        "More people ask to be let in on {gateway} than you are told of (at most {} a minute). \
         `passepartout pair list` shows everyone waiting, and `passepartout pair clear {gateway}` \
         clears their codes.",
        super::announced::PER_MINUTE
    );
    to_owners(owners, pending, &text)
}

/// `text` to each of `owners` but the person asking, in their private
/// conversation on the person's gateway.
fn to_owners(owners: &[UserId], pending: &PendingPairing, text: &str) -> Vec<Notice> {
    let gateway = &pending.conversation.gateway;
    owners
        .iter()
        .filter(|owner| **owner != pending.user)
        .filter_map(|owner| {
            let chat = ChatId::new(owner.as_str()).ok()?;
            Some((ConversationKey::new(gateway.clone(), chat), notice(text.to_owned())))
        })
        .collect()
}

/// What the person let in is told, where they asked.
pub(super) fn let_in(person: &PairedPerson, conversation: &ConversationKey) -> Notice {
    let text = if person.approver {
        "You are let in: you can talk to this assistant now, and approve its actions."
    } else {
        "You are let in: you can talk to this assistant now."
    };
    (conversation.clone(), notice(text.to_owned()))
}

fn notice(text: String) -> OutboundBody {
    OutboundBody::Text {
        text,
        kind: ReplyKind::Notice,
    }
}
