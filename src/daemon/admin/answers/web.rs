//! The web dashboard on the admin path: `passepartout web` (a one-time
//! sign-in link), `web sessions` and `web sessions revoke ID`, and the API
//! keys (`web keys`, `web keys create NAME`, `web keys revoke NAME|ID`),
//! asked by the local user, who owns the machine and so may let a browser
//! or a client in. A link, a key or a revocation is made durable before the
//! owner is told.

use std::sync::Arc;

use passepartout_admin::{AdminReply, WebAnswer, WebRequest};

use crate::daemon::admin::{AdminContext, Reply};

/// Answers `request`. What writes the store is spawned, so it is never in
/// the way of other questions.
pub(super) fn answer(admin: &Arc<AdminContext>, request: WebRequest, reply: Reply) {
    let admin = admin.clone();
    admin.tracker.clone().spawn(async move {
        let answer = match request {
            WebRequest::Link => link(&admin).await,
            WebRequest::Sessions => match admin.sign_in.listing() {
                Ok(listing) => done(listing),
                Err(error) => refused(error.to_string()),
            },
            WebRequest::Revoke { id } => match admin.sign_in.revoke(&id) {
                Ok(Ok(message)) => durable(&admin, done(message)).await,
                Ok(Err(why)) => refused(why),
                Err(error) => refused(error.to_string()),
            },
            WebRequest::Keys => match admin.web_keys.listing() {
                Ok(listing) => done(listing),
                Err(error) => refused(error.to_string()),
            },
            WebRequest::CreateKey { name, approver } => match admin.web_keys.create(&name, approver) {
                Ok(Ok(shown)) => {
                    let key = shown.lines().next().unwrap_or_default();
                    let usage = how_to_use(listening(&admin).as_deref(), key);
                    durable(&admin, done(format!("{shown}{usage}"))).await
                }
                Ok(Err(why)) => refused(why),
                Err(error) => refused(error.to_string()),
            },
            WebRequest::RevokeKey { key } => match admin.web_keys.revoke(&key) {
                Ok(Ok(message)) => durable(&admin, done(message)).await,
                Ok(Err(why)) => refused(why),
                Err(error) => refused(error.to_string()),
            },
        };
        let _ = reply.send(AdminReply::Web(answer));
    });
}

/// Why there is no dashboard to link to: the configuration leaves it off,
/// or (`in_file`) turns it on since the daemon started, which takes a
/// restart.
fn off(in_file: bool) -> String {
    if in_file {
        "the running daemon started with the web dashboard off; the configuration turns it on now \
         (`enabled = true` under [web]), which takes effect when the daemon restarts"
            .into()
    } else {
        "the web dashboard is off: set `enabled = true` under [web] in the configuration and restart the daemon".into()
    }
}

/// A new link at the address the running dashboard gives in the status
/// document; refused when the dashboard is off.
async fn link(admin: &AdminContext) -> WebAnswer {
    let status = (admin.status)();
    let web = status["gateways"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|gateway| gateway["name"] == crate::gateways::web::GATEWAY_ID);
    let Some(web) = web else {
        // Reads the disk: off the async threads.
        let reload = admin.reload.clone();
        let in_file = tokio::task::spawn_blocking(move || reload.inspect().web_enabled)
            .await
            .unwrap_or(false);
        return refused(off(in_file));
    };
    let detail = web["detail"].as_str().unwrap_or_default().to_owned();
    if web["state"] != "up" {
        return refused(format!(
            "the web dashboard is not listening ({detail}); the daemon tries again, see its log"
        ));
    }
    let base = detail;
    match admin.sign_in.issue_link() {
        Ok((token, _expires_ms)) => {
            let link = format!("{base}/sign-in/{token}");
            let answer = WebAnswer {
                ok: true,
                message: format!("{link}\nOpen it within 5 minutes; it works once.\n"),
                link: Some(link),
            };
            durable(admin, answer).await
        }
        Err(error) => refused(error.to_string()),
    }
}

/// The address the running dashboard is reached at, when it listens.
fn listening(admin: &AdminContext) -> Option<String> {
    let status = (admin.status)();
    let web = status["gateways"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|gateway| gateway["name"] == crate::gateways::web::GATEWAY_ID)?;
    (web["state"] == "up").then(|| web["detail"].as_str().map(str::to_owned))?
}

/// How a client uses the API with `key`: the base URL (under `base`, the
/// dashboard's address, when it listens), the model name and a request to
/// try.
fn how_to_use(base: Option<&str>, key: &str) -> String {
    let model = crate::gateways::web::API_MODEL;
    let Some(base) = base else {
        return format!(
            "The dashboard is not listening now: the API's base URL is its address followed by /v1 \
             (`passepartout status` shows it), and the model is called {model}.\n"
        );
    };
    let body = format!(r#"{{"model": "{model}", "messages": [{{"role": "user", "content": "Hello"}}]}}"#);
    format!(
        "Base URL: {base}/v1\nModel:    {model}\nTry it:\n  curl {base}/v1/chat/completions -H 'Authorization: Bearer {key}' \
         -H 'Content-Type: application/json' -d '{body}'\n"
    )
}

/// `answer`, once what was written is on disk.
async fn durable(admin: &AdminContext, answer: WebAnswer) -> WebAnswer {
    match admin.store.durable().await {
        Ok(()) => answer,
        Err(error) => refused(format!("the change could not be made durable: {error}")),
    }
}

fn done(message: String) -> WebAnswer {
    WebAnswer {
        ok: true,
        message,
        link: None,
    }
}

fn refused(message: String) -> WebAnswer {
    WebAnswer {
        ok: false,
        message,
        link: None,
    }
}
