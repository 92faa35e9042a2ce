//! The web dashboard's questions on the admin path: the conversations and
//! their history, a search over it, the usage over days, and the
//! configuration file masked. Each reads the store or the disk, so each is
//! spawned on the daemon's task tracker and answered when read; a store that
//! cannot be read is answered [`Unreadable`](passepartout_admin::Unreadable).
//! Its Logs page reads the recent log lines, its Keys & sessions page the
//! web's keys and sessions; the changes its Configuration and Channels
//! pages make to the file are written as `config_write` says.

mod config;
mod conversations;
mod logs;
mod usage;

use std::sync::Arc;

use passepartout_admin::{AdminReply, DashboardRequest, Unreadable};

use crate::daemon::admin::{AdminContext, Reply, channels, config_write};

/// Answers `request` once what it reads is read.
pub(super) fn answer(admin: &Arc<AdminContext>, request: DashboardRequest, reply: Reply) {
    let admin = admin.clone();
    let request = match request {
        DashboardRequest::EditConfig { text, based_on } => {
            admin.tracker.clone().spawn(async move {
                let outcome = config_write::apply(&admin, Some(based_on), config::Edit(text)).await;
                let _ = reply.send(AdminReply::Dashboard(Ok(outcome.to_json())));
            });
            return;
        }
        DashboardRequest::ConnectTelegram { token, owner } => {
            admin.tracker.clone().spawn(async move {
                let outcome = channels::connect_telegram(&admin, token, owner).await;
                let _ = reply.send(AdminReply::Dashboard(Ok(outcome.to_json())));
            });
            return;
        }
        DashboardRequest::ConnectMatrix {
            homeserver,
            user,
            password,
            owner,
        } => {
            admin.tracker.clone().spawn(async move {
                let outcome = connect_matrix(&admin, homeserver, user, password, owner).await;
                let _ = reply.send(AdminReply::Dashboard(Ok(outcome.to_json())));
            });
            return;
        }
        DashboardRequest::LinkSignal => {
            let _ = reply.send(AdminReply::Dashboard(Ok(channels::link_signal(&admin))));
            return;
        }
        DashboardRequest::Logs {
            after,
            level,
            target,
            limit,
        } => {
            let answered = logs::lines(
                admin.logs.as_deref(),
                after,
                level.as_deref(),
                target.as_deref(),
                limit,
                &*admin.redact,
            );
            let _ = reply.send(AdminReply::Dashboard(answered));
            return;
        }
        other => other,
    };
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
            DashboardRequest::WebAccess => web_access(&read),
            DashboardRequest::Channels => Ok(channels::shown(&read)),
            // Answered above.
            DashboardRequest::EditConfig { .. }
            | DashboardRequest::ConnectTelegram { .. }
            | DashboardRequest::LinkSignal
            | DashboardRequest::ConnectMatrix { .. }
            | DashboardRequest::Logs { .. } => Err(Unreadable::because("asked the wrong way")),
        })
        .await
        .unwrap_or_else(|error| Err(Unreadable::because(error)));
        let _ = reply.send(AdminReply::Dashboard(answered));
    });
}

/// Logs the Matrix account in, in a build with the Matrix client.
async fn connect_matrix(
    admin: &Arc<AdminContext>,
    homeserver: String,
    user: String,
    password: String,
    owner: Option<String>,
) -> config_write::Outcome {
    #[cfg(feature = "matrix")]
    {
        let form = channels::MatrixForm {
            homeserver,
            user,
            password,
            owner,
        };
        channels::connect_matrix(admin, form).await
    }
    #[cfg(not(feature = "matrix"))]
    {
        let _ = (admin, homeserver, user, password, owner);
        config_write::Outcome::refused(
            "this build of passepartout has no Matrix client (the `matrix` cargo feature is off); nothing was written",
        )
    }
}

/// The API keys and the signed-in browsers.
fn web_access(admin: &AdminContext) -> Result<serde_json::Value, Unreadable> {
    let keys = admin.web_keys.listed().map_err(Unreadable::because)?;
    let sessions = admin.sign_in.listed().map_err(Unreadable::because)?;
    Ok(serde_json::json!({ "keys": keys, "sessions": sessions }))
}
