//! Pairing and access on the admin path: `pair list`, `pair approve CODE`,
//! `pair clear [WHICH]`, `access` and `access revoke GATEWAY:USER`, asked by the local user (who
//! may approve everything, so is an owner), and the linked people of
//! [`super::people`]. A change is made durable before
//! the owner is told it is done.

use std::sync::Arc;

use passepartout_admin::{AccessAnswer, AccessRequest, AdminReply, Asker};

use super::people;
use crate::admin::{AdminContext, Reply};
use crate::pairing::paired_message;
use crate::store::Person;

/// Answers `request` from the asker, in the asker's conversation. What
/// writes the store is spawned, so it is never in the way of other
/// questions.
pub(super) fn answer(admin: &Arc<AdminContext>, request: AccessRequest, asker: Asker, reply: Reply) {
    let Asker { by, conversation, .. } = asker;
    let by = Person::known_as(conversation.gateway.clone(), by);
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let pairing = &admin.pairing;
        let answer = match request {
            AccessRequest::People => people::listing(&admin.linking),
            AccessRequest::Link { code } => people::link(&admin, code, conversation, &by).await,
            AccessRequest::Unlink { person } => people::unlink(&admin, &person, conversation, &by).await,
            AccessRequest::Waiting => done(pairing.render_waiting()),
            AccessRequest::List => match pairing.render_access() {
                Ok(listing) => done(listing),
                Err(error) => refused(error.to_string()),
            },
            AccessRequest::Approve { code, approver } => match pairing.approve(&code, approver, &by, &conversation) {
                Ok(let_in) => {
                    let answer = durable(&admin, paired_message(&let_in.person)).await;
                    // Once durable, the person is told they are let in.
                    (admin.nudge)(&let_in.told);
                    answer
                }
                Err(error) => refused_because(error),
            },
            AccessRequest::Clear { which } => match pairing.clear(which.as_deref(), &by) {
                Ok(message) => durable(&admin, message).await,
                Err(error) => refused_because(error),
            },
            AccessRequest::Revoke { person } => match pairing.revoke(&person, &by) {
                Ok(()) => durable(&admin, format!("{person} is revoked.")).await,
                Err(error) => refused_because(error),
            },
        };
        let _ = reply.send(AdminReply::Access(answer));
    });
}

/// `message`, once what was written is on disk.
pub(super) async fn durable(admin: &AdminContext, message: String) -> AccessAnswer {
    match admin.store.durable().await {
        Ok(()) => done(message),
        Err(error) => refused(format!("the change could not be made durable: {error}")),
    }
}

pub(super) fn done(message: String) -> AccessAnswer {
    AccessAnswer { ok: true, message }
}

pub(super) fn refused(message: String) -> AccessAnswer {
    AccessAnswer { ok: false, message }
}

/// Refused, saying why (a pairing's or a link's error).
pub(super) fn refused_because(error: impl std::fmt::Display) -> AccessAnswer {
    refused(error.to_string())
}
