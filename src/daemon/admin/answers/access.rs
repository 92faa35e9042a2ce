//! Pairing and access on the admin path: `pair list`, `pair approve CODE`,
//! `pair clear [WHICH]`, `access` and `access revoke GATEWAY:USER`, asked by the local user (who
//! may approve everything, so is an owner), and the linked people of
//! [`super::people`]. A change is made durable before
//! the owner is told it is done.

use std::sync::Arc;

use passepartout_admin::{AccessRequest, AdminReply, Asker};

use super::people;
use super::told::{done, durable, refused, refused_because};
use crate::daemon::admin::{AdminContext, Reply};
use crate::people::pairing::paired_message;
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
