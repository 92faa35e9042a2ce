//! The Keys & sessions page (`GET /keys`): the API keys (name, id prefix,
//! made, whether it approves) with Revoke each and a form to make one, and
//! the signed-in browsers (id prefix, signed in, last seen, user agent)
//! with Sign out each, this browser's marked. The same admin requests as
//! `passepartout web keys` and `web sessions` (`AdminRequest::Web`); the
//! listings are the dashboard's document of them.
//!
//! A key made is shown once, on the page the form answers (`POST
//! /keys/create`), exactly as the core says it. Revoking a key (`POST
//! /keys/revoke`) or a session (`POST /keys/sessions/revoke`) answers
//! with a redirect to the page saying so; revoking this browser's own
//! session asks to be confirmed first, and then signs it out. Every form
//! passes the origin, cookie and CSRF checks.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use passepartout_admin::{AdminReply, AdminRequest, DashboardRequest, WebAnswer, WebRequest};
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::errors;
use super::layout::{Viewer, page};
use super::parts::{ask, items, table, text, when};
use crate::escape::Escaped;
use crate::posted::{WithToken, accept, accept_with_session, plain, see_other};
use crate::session::{FormSession, SignedIn, csrf_token, session_id};
use crate::state::AppState;

/// How many hex digits of an id the core shows.
const ID_PREFIX: usize = 12;

/// What the page says first, after a button.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Said {
    #[serde(default)]
    done: Option<String>,
}

/// `GET /keys`.
pub async fn keys(
    State(state): State<Arc<AppState>>,
    signed_in: SignedIn,
    headers: HeaderMap,
    said: Result<Form<Said>, FormRejection>,
) -> Response {
    let said = said.map(|Form(s)| s).unwrap_or_default();
    let mine = session_id(&headers).map(session_prefix).unwrap_or_default();
    shown(&state, &signed_in.csrf, &mine, said.done.as_deref(), None).await
}

async fn shown(state: &AppState, csrf: &str, mine: &str, done: Option<&str>, made: Option<&WebAnswer>) -> Response {
    let listing = match ask(&state.admin, DashboardRequest::WebAccess).await {
        Ok(listing) => listing,
        Err(response) => return *response,
    };
    let status = match made {
        Some(made) if !made.ok => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::OK,
    };
    page(
        status,
        "Keys & sessions",
        "/keys",
        Some(Viewer { csrf }),
        &body(&listing, csrf, mine, done, made),
    )
}

/// The id prefix the core shows for a session: its SHA-256, in hex.
pub fn session_prefix(session: &str) -> String {
    let digest = Sha256::digest(session.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..ID_PREFIX].to_owned()
}

/// The page's body: what was done, the keys, the form to make one, the
/// sessions (`mine` is this browser's id prefix).
pub fn body(listing: &Value, csrf: &str, mine: &str, done: Option<&str>, made: Option<&WebAnswer>) -> String {
    let mut out = String::new();
    if let Some(done) = done {
        let _ = write!(out, r#"<p class="notice" aria-live="polite">{}</p>"#, Escaped(done));
    }
    if let Some(made) = made {
        out += &made_key(made);
    }
    out += r#"<section><h2>API keys</h2><p class="help">Each key lets a program use the OpenAI-compatible API at <code>/v1</code> as a person of its own, with its own conversations. Only a hash is kept: a key is shown once, when it is made.</p>"#;
    let keys: Vec<Vec<String>> = items(&listing["keys"])
        .map(|key| {
            vec![
                text(&key["name"]),
                format!("<code>{}</code>", text(&key["id"])),
                Escaped(&when(key["made_ms"].as_u64())).to_string(),
                if key["approver"] == true { "yes" } else { "no" }.to_owned(),
                button(
                    "/keys/revoke",
                    csrf,
                    &[("key", key["id"].as_str().unwrap_or_default())],
                    "Revoke",
                ),
            ]
        })
        .collect();
    out += &table(
        &["Name", "Id", "Made", "Approves", ""],
        keys,
        "No API key yet: make one below.",
    );
    let _ = write!(
        out,
        r#"<form method="post" action="/keys/create" class="filters"><input type="hidden" name="csrf" value="{}"><label>Name <input name="name" required maxlength="64" pattern="[A-Za-z0-9._\-]+" placeholder="laptop"></label> <label><input type="checkbox" name="approver" value="yes"> may approve what its own conversations ask</label> <button type="submit">Make a key</button></form></section>"#,
        Escaped(csrf)
    );
    out += r#"<section><h2>Browsers signed in</h2>"#;
    let sessions: Vec<Vec<String>> = items(&listing["sessions"])
        .map(|session| {
            let id = session["id"].as_str().unwrap_or_default();
            let this = id == mine;
            let action = if this {
                format!(
                    r#"<form method="post" action="/keys/sessions/revoke" class="inline"><input type="hidden" name="csrf" value="{}"><input type="hidden" name="id" value="{}"><label><input type="checkbox" name="confirm" value="yes" required> this browser</label> <button type="submit">Sign out</button></form>"#,
                    Escaped(csrf),
                    Escaped(id)
                )
            } else {
                button("/keys/sessions/revoke", csrf, &[("id", id)], "Sign out")
            };
            vec![
                format!(
                    "<code>{}</code>{}",
                    Escaped(id),
                    if this { r#" <span class="state good">this browser</span>"# } else { "" }
                ),
                Escaped(&when(session["created_ms"].as_u64())).to_string(),
                Escaped(&when(session["seen_ms"].as_u64())).to_string(),
                text(&session["agent"]),
                action,
            ]
        })
        .collect();
    out += &table(
        &["Id", "Signed in", "Last seen", "Browser", ""],
        sessions,
        "No browser is signed in.",
    );
    out + r#"<p class="help">A new browser signs in with a link from <code>passepartout web</code>.</p></section>"#
}

/// A key just made, shown this once; or why it was not made.
fn made_key(made: &WebAnswer) -> String {
    if !made.ok {
        return format!(
            r#"<section class="result" aria-live="polite"><h2>New key</h2><p class="error">No key was made: {}</p></section>"#,
            Escaped(&plain(&made.message))
        );
    }
    format!(
        r#"<section class="result made" aria-live="polite"><h2>New key</h2><p class="warn">Copy it now: it is shown only this once.</p><pre class="key">{}</pre></section>"#,
        Escaped(made.message.trim_end())
    )
}

/// A one-button form posting `fields` to `action`.
fn button(action: &str, csrf: &str, fields: &[(&str, &str)], label: &str) -> String {
    let mut out = format!(
        r#"<form method="post" action="{action}" class="inline"><input type="hidden" name="csrf" value="{}">"#,
        Escaped(csrf)
    );
    for (name, value) in fields {
        let _ = write!(out, r#"<input type="hidden" name="{name}" value="{}">"#, Escaped(value));
    }
    let _ = write!(out, r#"<button type="submit">{}</button></form>"#, Escaped(label));
    out
}

/// The form that makes a key.
#[derive(Deserialize)]
pub struct Create {
    csrf: String,
    name: String,
    #[serde(default)]
    approver: Option<String>,
}

impl WithToken for Create {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /keys/create`: makes the key and shows it, once.
pub async fn create(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<Create>, FormRejection>,
) -> Response {
    let (session, create) = match accept_with_session(sender, form) {
        Ok(accepted) => accepted,
        Err(refused) => return *refused,
    };
    let request = WebRequest::CreateKey {
        name: create.name,
        approver: create.approver.as_deref() == Some("yes"),
    };
    let made = match state.admin.ask(AdminRequest::Web { request }).await {
        Ok(AdminReply::Web(answer)) => answer,
        _ => return errors::unavailable("the daemon is shutting down"),
    };
    tracing::info!(made = made.ok, "API key asked for from the dashboard");
    let csrf = csrf_token(&session);
    shown(&state, &csrf, &session_prefix(&session), None, Some(&made)).await
}

/// The form that revokes a key: its id.
#[derive(Deserialize)]
pub struct RevokeKey {
    csrf: String,
    key: String,
}

impl WithToken for RevokeKey {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /keys/revoke`.
pub async fn revoke_key(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<RevokeKey>, FormRejection>,
) -> Response {
    let revoke = match accept(sender, form) {
        Ok(revoke) => revoke,
        Err(refused) => return *refused,
    };
    let request = WebRequest::RevokeKey { key: revoke.key };
    answered(state.admin.ask(AdminRequest::Web { request }).await)
}

/// The form that signs a browser out: its id, and for this browser's own
/// session the confirmation.
#[derive(Deserialize)]
pub struct RevokeSession {
    csrf: String,
    id: String,
    #[serde(default)]
    confirm: Option<String>,
}

impl WithToken for RevokeSession {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /keys/sessions/revoke`: this browser's own session only when
/// confirmed, and then to the page that says how to sign in again.
pub async fn revoke_session(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<RevokeSession>, FormRejection>,
) -> Response {
    let (session, revoke) = match accept_with_session(sender, form) {
        Ok(accepted) => accepted,
        Err(refused) => return *refused,
    };
    let id = revoke.id.trim().to_ascii_lowercase();
    let own = id.len() >= 4 && session_prefix(&session).starts_with(&id);
    if own && revoke.confirm.as_deref() != Some("yes") {
        return errors::conflict(
            "That is this browser's own session: signing it out signs you out here. Tick \"this browser\" beside it to do so.",
            "/keys",
            "Back to Keys & sessions",
        );
    }
    let request = WebRequest::Revoke { id };
    let reply = state.admin.ask(AdminRequest::Web { request }).await;
    match (own, &reply) {
        (true, Ok(AdminReply::Web(answer))) if answer.ok => see_other("/", &[]),
        _ => answered(reply),
    }
}

/// A revocation's answer: back to the page saying what was done, or why not.
fn answered(reply: Result<AdminReply, passepartout_admin::AdminClosed>) -> Response {
    match reply {
        Ok(AdminReply::Web(answer)) if answer.ok => see_other("/keys", &[("done", &plain(&answer.message))]),
        Ok(AdminReply::Web(answer)) => errors::conflict(&plain(&answer.message), "/keys", "Back to Keys & sessions"),
        _ => errors::unavailable("the daemon is shutting down"),
    }
}

/// The Keys & sessions page and its buttons.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/keys", get(keys))
        .route("/keys/create", post(create))
        .route("/keys/revoke", post(revoke_key))
        .route("/keys/sessions/revoke", post(revoke_session))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn listing() -> Value {
        json!({
            "keys": [{"id": "abcdef012345", "name": "lap<top>", "made_ms": 0, "approver": true}],
            "sessions": [
                {"id": "111111111111", "created_ms": 0, "seen_ms": 0, "agent": "Firefox"},
                {"id": "222222222222", "created_ms": 0, "seen_ms": 0, "agent": "<b>Chromium</b>"},
            ],
        })
    }

    #[test]
    fn keys_and_sessions_are_listed_with_their_forms_and_this_browser_marked() {
        let html = body(&listing(), "tok", "222222222222", None, None);
        assert!(
            html.contains("lap&lt;top&gt;") && html.contains("abcdef012345"),
            "{html}"
        );
        assert!(html.contains(r#"action="/keys/revoke""#) && html.contains(r#"name="key" value="abcdef012345""#));
        assert!(html.contains(r#"action="/keys/create""#), "{html}");
        assert!(html.contains("&lt;b&gt;Chromium&lt;/b&gt;"), "{html}");
        let own = html.find("222222222222").unwrap();
        assert!(html[own..].contains("this browser"), "{html}");
        assert!(html.contains(r#"name="confirm""#), "{html}");
    }

    #[test]
    fn a_key_made_is_shown_once_and_a_refusal_says_why() {
        let made = WebAnswer {
            ok: true,
            message: "pp-secretkey\nAPI key laptop (id abc).\n".into(),
            link: None,
        };
        let html = body(&listing(), "tok", "", None, Some(&made));
        assert!(
            html.contains("<pre class=\"key\">pp-secretkey\nAPI key laptop (id abc).</pre>"),
            "{html}"
        );
        let refused = WebAnswer {
            ok: false,
            message: "there is a key called laptop already (see `passepartout web keys`)".into(),
            link: None,
        };
        let html = body(&listing(), "tok", "", None, Some(&refused));
        assert!(
            html.contains("No key was made: there is a key called laptop already"),
            "{html}"
        );
    }

    #[test]
    fn a_sessions_prefix_is_the_hex_of_its_hash() {
        // SHA-256("abc").
        assert_eq!(session_prefix("abc"), "ba7816bf8f01");
    }
}
