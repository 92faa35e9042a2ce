//! The web dashboard's questions on the admin path: the conversations and
//! their history, a search over it, the usage over days, and the
//! configuration file masked. Each reads the store or the disk, so each is
//! spawned on the daemon's task tracker and answered when read; a store that
//! cannot be read is answered [`Unreadable`](passepartout_admin::Unreadable).

mod config;
mod conversations;
mod usage;

use std::sync::Arc;

use passepartout_admin::{AdminReply, DashboardRequest, Unreadable};

use super::{AdminContext, Reply};

/// Answers `request` once what it reads is read.
pub(super) fn answer(admin: &Arc<AdminContext>, request: DashboardRequest, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let read = admin.clone();
        let answered = tokio::task::spawn_blocking(move || match request {
            DashboardRequest::Conversations => conversations::listing(&read.store),
            DashboardRequest::History { conversation } => {
                conversations::history(&read.store, &conversation, &*read.redact)
            }
            DashboardRequest::Latest { conversation } => conversations::latest(&read.store, &conversation),
            DashboardRequest::Search { query } => conversations::search(&read.store, &query, &*read.redact),
            DashboardRequest::Usage { days } => {
                usage::series(&read.store, read.clock.now_ms(), days, &(read.providers)())
            }
            DashboardRequest::Config => config::shown(&*read.reload),
        })
        .await
        .unwrap_or_else(|error| Err(Unreadable::because(error)));
        let _ = reply.send(AdminReply::Dashboard(answered));
    });
}
