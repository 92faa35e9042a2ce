//! The Configuration page (`GET /config`): the file the daemon reads, with
//! every secret masked by the core (nothing a `*_file` names is ever read
//! into it), what `check-config` says of it, and a Reload button
//! (`POST /config/reload`: the page's origin, the cookie, the CSRF token)
//! that says what applied at once and what waits for a restart, as
//! `passepartout reload` does.

use std::fmt::Write as _;
use std::sync::Arc;

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::Response;
use passepartout_admin::{AdminReply, AdminRequest, DashboardRequest, Reloaded};
use serde::Deserialize;
use serde_json::Value;

use super::errors;
use super::layout::{Viewer, page};
use super::parts::items;
use crate::escape::Escaped;
use crate::router::AppState;
use crate::session::{FormSession, SignedIn};

/// `GET /config`.
pub async fn configuration(State(state): State<Arc<AppState>>, signed_in: SignedIn) -> Response {
    shown(&state, &signed_in.csrf, None).await
}

/// The reload form: its CSRF token only.
#[derive(Deserialize)]
pub struct ReloadForm {
    csrf: String,
}

impl crate::posted::WithToken for ReloadForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /config/reload`: reloads, then shows the page with what came of it.
pub async fn reload(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<ReloadForm>, FormRejection>,
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
    }
    out
}

/// What came of a reload, at the top of the page.
fn reload_result(reloaded: &Reloaded) -> String {
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
