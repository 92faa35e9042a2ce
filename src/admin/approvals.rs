//! The approvals on the admin path: `passepartout approvals` lists them,
//! `passepartout approvals approve|deny TOKEN` decides one as the local user
//! (`--always`: with a standing rule), `--all-from` / `--all` a queue of
//! them; `passepartout approvals rules` lists the standing rules and
//! `rules revoke ID` revokes one.

use std::sync::Arc;

use passepartout_admin::{AdminReply, Decision, Decisions, RuleRevoked, Unreadable, Via};
use passepartout_gateway::UserId;

use super::redacted::redacted;
use super::relative::with_relative_times;
use super::{AdminContext, Reply};

/// Answers the listing; it reads the whole approvals tree, so on a blocking
/// thread.
pub(super) fn listing(admin: &Arc<AdminContext>, all: bool, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn_blocking(move || {
        // An action's arguments and what ran may quote a secret.
        let listing = admin
            .approvals
            .listing(all)
            .map_err(Unreadable::because)
            .map(|mut listing| {
                redacted(&mut listing, &*admin.redact);
                with_relative_times(&mut listing, admin.clock.now_ms());
                listing
            });
        let _ = reply.send(AdminReply::Approvals(listing));
    });
}

/// Decides the approval `token` names as `by`, answering `via` the
/// terminal or the web. The decision is durable
/// before it is confirmed, and the conversation owed its outcome is woken;
/// the flush waits on the disk, so this is spawned.
pub(super) fn decide(
    admin: &Arc<AdminContext>,
    token: String,
    approve: bool,
    always: bool,
    by: UserId,
    via: Via,
    reply: Reply,
) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let decided = match admin.approvals.decide_local(&token, approve, always, by, via) {
            Ok(decided) => admin.store.durable().await.map(|()| decided),
            Err(error) => Err(error),
        };
        let decision = match decided {
            Ok((decision, owed)) => {
                settle(&admin, owed);
                decision
            }
            Err(error) => Decision {
                decided: false,
                message: error.to_string(),
            },
        };
        let _ = reply.send(AdminReply::Decision(decision));
    });
}

/// Decides every pending approval of the conversation `from` names (or,
/// denying, of all), each on its own; durable before it is confirmed, and
/// every conversation owed an outcome is woken.
pub(super) fn decide_all(admin: &Arc<AdminContext>, approve: bool, from: Option<String>, by: UserId, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let decided = match admin.approvals.decide_all(approve, from.as_deref(), by) {
            Ok(decided) => admin.store.durable().await.map(|()| decided),
            Err(error) => Err(error),
        };
        let decisions = match decided {
            Ok((decisions, owed)) => {
                for owed in owed {
                    settle(&admin, Some(owed));
                }
                decisions
            }
            Err(error) => Decisions {
                ok: false,
                message: error.to_string(),
                decisions: Vec::new(),
            },
        };
        let _ = reply.send(AdminReply::Decisions(decisions));
    });
}

/// Answers the standing rules' listing; it reads the whole tree, so on a
/// blocking thread.
pub(super) fn rules(admin: &Arc<AdminContext>, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn_blocking(move || {
        let listing = admin
            .approvals
            .rules_listing()
            .map_err(Unreadable::because)
            .map(|mut listing| {
                with_relative_times(&mut listing, admin.clock.now_ms());
                listing
            });
        let _ = reply.send(AdminReply::Rules(listing));
    });
}

/// Revokes standing rule `id` as `by`, durably before it is confirmed.
pub(super) fn revoke_rule(admin: &Arc<AdminContext>, id: u64, by: UserId, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let revoked = match admin.approvals.revoke_local(id, by) {
            Ok(revoked) => admin.store.durable().await.map(|()| revoked),
            Err(error) => Err(error),
        };
        let answer = match revoked {
            Ok((revoked, message)) => RuleRevoked { revoked, message },
            Err(error) => RuleRevoked {
                revoked: false,
                message: error.to_string(),
            },
        };
        let _ = reply.send(AdminReply::RuleRevoked(answer));
    });
}

/// Hands the conversation owed an outcome, if any, to its worker.
fn settle(admin: &AdminContext, owed: Option<crate::approvals::Owed>) {
    if let Some(owed) = owed {
        let key = owed.conversation.clone();
        admin.approvals.mark_unsettled(owed);
        (admin.nudge)(&key);
    }
}
