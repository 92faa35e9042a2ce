//! One file per admin request, each answering it: what the request reads
//! or changes, and the [`AdminReply`](passepartout_admin::AdminReply) it
//! sends. [`answer`] only routes; a new request is its variant in
//! `passepartout_admin`, a file here and its line below.
//!
//! An answer given from memory is sent at once; one that waits on the disk
//! or the network is spawned on the daemon's task tracker, so it holds up
//! no other question and shutdown waits for it.

mod access;
mod approvals;
mod dashboard;
mod decide;
mod decide_all;
mod loops;
mod people;
mod recheck;
mod reload;
mod revoke_rule;
mod rules;
mod start_loop;
mod status;
mod stop_loop;
mod told;
mod tools;
mod trigger_loop;
mod web;

use std::sync::Arc;

use passepartout_admin::{AdminRequest, Asked};

use super::AdminContext;

/// Hands `request` to the file that answers it.
pub(super) fn answer(admin: &Arc<AdminContext>, Asked { request, asker, reply }: Asked) {
    match request {
        AdminRequest::Status => status::answer(admin, reply),
        AdminRequest::Recheck => recheck::answer(admin, reply),
        AdminRequest::Approvals { all } => approvals::answer(admin, all, reply),
        AdminRequest::Decide { token, approve, always } => decide::answer(admin, token, approve, always, asker, reply),
        AdminRequest::DecideAll { approve, from } => decide_all::answer(admin, approve, from, asker.by, reply),
        AdminRequest::Rules => rules::answer(admin, reply),
        AdminRequest::RevokeRule { id } => revoke_rule::answer(admin, id, asker.by, reply),
        AdminRequest::Loops => {
            let _ = reply.send(loops::answer(&*admin.loops, admin.clock.now_ms()));
        }
        AdminRequest::Tools => tools::answer(admin, asker, reply),
        AdminRequest::StopLoop { name } => stop_loop::answer(admin, name, reply),
        AdminRequest::StartLoop { name } => start_loop::answer(admin, name, reply),
        AdminRequest::TriggerLoop { name } => {
            let _ = reply.send(trigger_loop::answer(&*admin.loops, &name));
        }
        AdminRequest::Access { request } => access::answer(admin, request, asker, reply),
        AdminRequest::Web { request } => web::answer(admin, request, reply),
        AdminRequest::Reload => reload::answer(admin, reply),
        AdminRequest::Dashboard { request } => dashboard::answer(admin, request, reply),
    }
}
