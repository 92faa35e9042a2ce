//! The Configuration page (`GET /config`): the file the daemon reads, with
//! every secret masked by the core (nothing a `*_file` names is ever read
//! into it), what `check-config` says of it, and a Reload button
//! (`POST /config/reload`: the page's origin, the cookie, the CSRF token)
//! that says what applied at once and what waits for a restart, as
//! `passepartout reload` does.
//!
//! The file can be edited there too (`POST /config/edit`, the same
//! checks): the masked file in a text area, with the digest of the file it
//! was read from. The core lays the edit over the file (a value left
//! masked keeps its secret, comments are kept), refuses it with every
//! problem `check-config` finds (the file untouched) or when the file
//! changed since the page read it, else keeps the old file as `.bak`,
//! writes the new one and reloads; the page says which.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use passepartout_admin::{AdminReply, AdminRequest, DashboardRequest, Reloaded};
use serde::Deserialize;
use serde_json::Value;

use super::errors;
use super::layout::{Viewer, page};
use super::parts::items;
use crate::escape::Escaped;
use crate::posted::TokenOnly;
use crate::session::{FormSession, SignedIn};
use crate::state::AppState;

/// The largest edited file taken, in bytes.
pub const MAX_EDIT_BYTES: usize = 512 * 1024;

/// `GET /config`.
pub async fn configuration(State(state): State<Arc<AppState>>, signed_in: SignedIn) -> Response {
    shown(&state, &signed_in.csrf, None).await
}

/// The edit form: the file as edited, the digest of the file it was read
/// from, the CSRF token.
#[derive(Deserialize)]
pub struct EditForm {
    csrf: String,
    text: String,
    based_on: String,
}

impl crate::posted::WithToken for EditForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// What came of saving an edit, as the core answered it.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Saved {
    /// Whether the file was written.
    pub written: bool,
    /// What happened, or why not, for people.
    pub message: String,
    /// What `check-config` found wrong with the edit.
    pub problems: Vec<String>,
    /// What came of the reload that followed, if it was written.
    pub reloaded: Option<Reloaded>,
}

/// `POST /config/edit`: writes the edited file (or says why not), then
/// shows the page with what came of it.
pub async fn edit(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<EditForm>, FormRejection>,
) -> Response {
    let (session, form) = match crate::posted::accept_with_session(sender, form) {
        Ok(accepted) => accepted,
        Err(refused) => return *refused,
    };
    let request = DashboardRequest::EditConfig {
        text: form.text.clone(),
        based_on: form.based_on.clone(),
    };
    let saved: Saved = match super::parts::ask(&state.admin, request).await {
        Ok(document) => serde_json::from_value(document).unwrap_or_default(),
        Err(response) => return *response,
    };
    tracing::info!(written = saved.written, "configuration edited from the dashboard");
    let csrf = crate::session::csrf_token(&session);
    let config = match super::parts::ask(&state.admin, DashboardRequest::Config).await {
        Ok(document) => document,
        Err(response) => return *response,
    };
    // Refused for a problem in it: the edit stays in the box to be fixed,
    // based on the file it was made from (still the file).
    let kept = (!saved.written && !saved.problems.is_empty()).then_some(form.text.as_str());
    let mut out = saved_result(&saved);
    out += &body_with(&config, saved.reloaded.as_ref(), &csrf, kept);
    let status = match saved.written || saved.problems.is_empty() && saved.message.contains("unchanged") {
        true => StatusCode::OK,
        false => StatusCode::CONFLICT,
    };
    page(status, "Configuration", "/config", Some(Viewer { csrf: &csrf }), &out)
}

/// What came of saving, at the top of the page.
pub(crate) fn saved_result(saved: &Saved) -> String {
    let class = if saved.written { "ok" } else { "error" };
    let mut out = format!(
        r#"<section class="result saved" aria-live="polite"><h2>Save</h2><p class="{class}">{}</p>"#,
        Escaped(&crate::posted::plain(&saved.message))
    );
    if !saved.problems.is_empty() {
        let problems: Vec<&str> = saved.problems.iter().map(String::as_str).collect();
        out += &list(&problems);
    }
    out + "</section>"
}

/// `POST /config/reload`: reloads, then shows the page with what came of it.
pub async fn reload(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<TokenOnly>, FormRejection>,
) -> Response {
    let session = match crate::posted::accept_with_session(sender, form) {
        Ok((session, _)) => session,
        Err(refused) => return *refused,
    };
    let reloaded = match state.admin.ask(AdminRequest::Reload).await {
        Ok(AdminReply::Reloaded(reloaded)) => reloaded,
        _ => return errors::unavailable("the daemon is shutting down"),
    };
    tracing::info!(applied = reloaded.applied, "configuration reloaded from the dashboard");
    shown(&state, &crate::session::csrf_token(&session), Some(&reloaded)).await
}

async fn shown(state: &AppState, csrf: &str, reloaded: Option<&Reloaded>) -> Response {
    let config = match super::parts::ask(&state.admin, DashboardRequest::Config).await {
        Ok(document) => document,
        Err(response) => return *response,
    };
    page(
        StatusCode::OK,
        "Configuration",
        "/config",
        Some(Viewer { csrf }),
        &body(&config, reloaded, csrf),
    )
}

/// The page's body: what a reload did (if one was asked), the check, the
/// Reload button, the masked file.
pub fn body(config: &Value, reloaded: Option<&Reloaded>, csrf: &str) -> String {
    body_with(config, reloaded, csrf, None)
}

/// [`body`], with `edited` in the edit box instead of the file.
fn body_with(config: &Value, reloaded: Option<&Reloaded>, csrf: &str, edited: Option<&str>) -> String {
    let mut out = String::new();
    if let Some(reloaded) = reloaded {
        out += &reload_result(reloaded);
    }
    let file = config["file"].as_str();
    let _ = write!(
        out,
        r#"<p class="meta">{}</p>"#,
        match file {
            Some(file) => format!("The file <code>{}</code>, as the daemon reads it: comments left out, secrets masked (••••••). Files named by <code>*_file</code> settings are never read here.", Escaped(file)),
            None => "The daemon runs on the built-in defaults and the environment: it was started without a configuration file.".into(),
        }
    );
    out += "<section><h2>Check</h2>";
    let problems: Vec<&str> = items(&config["problems"]).filter_map(Value::as_str).collect();
    let warnings: Vec<&str> = items(&config["warnings"]).filter_map(Value::as_str).collect();
    if let Some(unreadable) = config["unreadable"].as_str() {
        let _ = write!(
            out,
            r#"<p class="error">The file cannot be shown: {}.</p>"#,
            Escaped(unreadable)
        );
    } else if problems.is_empty() {
        out += r#"<p class="ok">ok: <code>passepartout check-config</code> finds no problem.</p>"#;
    } else {
        let _ = write!(
            out,
            r#"<p class="error">{} problem(s): the daemon would not start on this file, and a reload refuses it.</p>{}"#,
            problems.len(),
            list(&problems)
        );
    }
    if !warnings.is_empty() {
        let _ = write!(out, r#"<p class="warn">Warnings:</p>{}"#, list(&warnings));
    }
    let _ = write!(
        out,
        r#"<form method="post" action="/config/reload"><input type="hidden" name="csrf" value="{}"><button type="submit">Reload</button> <span class="meta">Reads the file again, as <code>passepartout reload</code> does: what can change while the daemon runs applies at once; the page says what waits for a restart.</span></form></section>"#,
        Escaped(csrf)
    );
    if let Some(text) = config["text"].as_str() {
        let _ = write!(
            out,
            r#"<section><h2>The file</h2><pre class="config">{}</pre></section>"#,
            Escaped(text)
        );
        if let Some(based_on) = config["based_on"].as_str() {
            out += &edit_form(edited.unwrap_or(text), edited.is_some(), based_on, csrf);
        }
    }
    out
}

/// The file in a box to edit, and Save; folded away unless `open` (an
/// edit to fix).
fn edit_form(text: &str, open: bool, based_on: &str, csrf: &str) -> String {
    let rows = text.lines().count().clamp(8, 40);
    let open = if open { " open" } else { "" };
    format!(
        r#"<details class="edit"{open}><summary>Edit the file</summary><p class="help">Secrets show as <code>••••••</code>: leave one as it is to keep it, or replace it whole. Comments are not shown here, and those in the file are kept. Saving checks the file as <code>passepartout check-config</code> does and writes nothing if it finds a problem; otherwise the file before is kept as <code>.bak</code> and the daemon reloads.</p><form method="post" action="/config/edit"><input type="hidden" name="csrf" value="{}"><input type="hidden" name="based_on" value="{}"><label for="config-text" class="hidden">The configuration file</label><textarea id="config-text" name="text" rows="{rows}" spellcheck="false" autocomplete="off">{}</textarea><div class="actions"><button type="submit">Save and reload</button></div></form></details>"#,
        Escaped(csrf),
        Escaped(based_on),
        Escaped(text)
    )
}

/// What came of a reload, at the top of the page.
pub(crate) fn reload_result(reloaded: &Reloaded) -> String {
    let class = if reloaded.applied { "ok" } else { "error" };
    let mut out = format!(
        r#"<section class="result" aria-live="polite"><h2>Reload</h2><p class="{class}">{}</p>"#,
        Escaped(&reloaded.message)
    );
    if !reloaded.changed.is_empty() {
        let changed: Vec<&str> = reloaded.changed.iter().map(String::as_str).collect();
        let _ = write!(out, "<p>Applied now:</p>{}", list(&changed));
    }
    if !reloaded.need_restart.is_empty() {
        let waiting: Vec<&str> = reloaded.need_restart.iter().map(String::as_str).collect();
        let _ = write!(
            out,
            r#"<p class="warn">Changed in the file, applied only after a restart:</p>{}"#,
            list(&waiting)
        );
    }
    if !reloaded.problems.is_empty() {
        let problems: Vec<&str> = reloaded.problems.iter().map(String::as_str).collect();
        let _ = write!(
            out,
            "<p>The file was refused, and the running configuration kept, because:</p>{}",
            list(&problems)
        );
    }
    out + "</section>"
}

fn list(lines: &[&str]) -> String {
    let mut out = String::from("<ul>");
    for line in lines {
        let _ = write!(out, "<li><code>{}</code></li>", Escaped(line));
    }
    out + "</ul>"
}

/// The Configuration page, its Reload button and its edit.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/config", get(configuration))
        .route("/config/reload", post(reload))
        .route("/config/edit", post(edit).layer(DefaultBodyLimit::max(MAX_EDIT_BYTES)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_file_its_check_and_the_reload_form_are_shown() {
        let config = json!({"file": "/etc/<pp>.toml", "text": "[web]\nenabled = true\nx = \"<b>\"\n", "problems": [], "warnings": ["a <w>"]});
        let html = body(&config, None, "tok<en>");
        assert!(html.contains("<code>/etc/&lt;pp&gt;.toml</code>"), "{html}");
        assert!(
            html.contains("finds no problem") && html.contains("a &lt;w&gt;"),
            "{html}"
        );
        assert!(
            html.contains("[web]\nenabled = true\nx = &quot;&lt;b&gt;&quot;"),
            "{html}"
        );
        assert!(
            html.contains(r#"action="/config/reload""#) && html.contains(r#"value="tok&lt;en&gt;""#),
            "{html}"
        );
    }

    #[test]
    fn problems_and_an_unreadable_file_are_said() {
        let html = body(
            &json!({"file": "/c.toml", "text": null, "problems": ["web.listen: bad"]}),
            None,
            "t",
        );
        assert!(
            html.contains("1 problem(s)") && html.contains("web.listen: bad"),
            "{html}"
        );
        let html = body(
            &json!({"file": "/c.toml", "text": null, "unreadable": "not TOML"}),
            None,
            "t",
        );
        assert!(html.contains("The file cannot be shown: not TOML."), "{html}");
        let html = body(&json!({"file": null, "problems": []}), None, "t");
        assert!(html.contains("built-in defaults"), "{html}");
    }

    #[test]
    fn the_file_is_offered_for_editing_with_the_digest_it_was_read_at() {
        let config = json!({"file": "/c.toml", "text": "a = \"<x>\"\n", "based_on": "d1g", "problems": []});
        let html = body(&config, None, "tok");
        assert!(html.contains(r#"action="/config/edit""#), "{html}");
        assert!(html.contains(r#"name="based_on" value="d1g""#), "{html}");
        assert!(html.contains("a = &quot;&lt;x&gt;&quot;\n</textarea>"), "{html}");
        let html = body_with(&config, None, "tok", Some("b = 1"));
        assert!(html.contains(">b = 1</textarea>"), "the edit kept: {html}");
        assert!(html.contains(r#"<details class="edit" open>"#), "open to fix: {html}");
        let saved = Saved {
            message: "1 problem(s)".into(),
            problems: vec!["web.listen: <bad>".into()],
            ..Saved::default()
        };
        let html = saved_result(&saved);
        assert!(
            html.contains("web.listen: &lt;bad&gt;") && html.contains(r#"class="error""#),
            "{html}"
        );
    }

    #[test]
    fn a_reload_says_what_applied_and_what_waits() {
        let reloaded = Reloaded {
            applied: true,
            message: "Reloaded: telegram.allowed_users now apply.".into(),
            changed: vec!["telegram.allowed_users".into()],
            need_restart: vec!["web.listen".into()],
            problems: vec![],
        };
        let html = body(&json!({"file": "/c.toml", "text": ""}), Some(&reloaded), "t");
        assert!(
            html.contains("Applied now:</p><ul><li><code>telegram.allowed_users</code>"),
            "{html}"
        );
        assert!(
            html.contains("applied only after a restart:</p><ul><li><code>web.listen</code>"),
            "{html}"
        );
    }
}
