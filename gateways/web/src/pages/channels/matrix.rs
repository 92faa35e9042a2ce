//! The Channels page's Matrix part: what `[matrix]` says now, and a form
//! that logs the assistant's own Matrix account in (`POST
//! /channels/matrix`): the core logs in once as a new device, keeps that
//! device's access token in a file of mode 0600 instead of the password,
//! and changes the configuration the way an edit on the Configuration page
//! does (checked, `.bak`, reloaded). The password goes to the core and no
//! further: it is neither shown nor kept.

use std::sync::Arc;

use axum::Form;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::response::Response;
use passepartout_admin::DashboardRequest;
use serde::Deserialize;
use serde_json::Value;

use super::super::parts::text;
use super::connected;
use crate::escape::Escaped;
use crate::posted::{WithToken, accept_with_session};
use crate::session::{FormSession, csrf_token};
use crate::state::AppState;

/// The Matrix part of the page.
pub fn section(matrix: &Value, csrf: &str) -> String {
    let now = match (matrix["enabled"] == true, matrix["user"].as_str()) {
        (true, Some(user)) if !user.is_empty() => format!(
            "Matrix is on in the configuration for <code>{}</code> on <code>{}</code>{}; let in: {}.",
            Escaped(user),
            text(&matrix["homeserver"]),
            match matrix["device_id"].as_str() {
                Some(device) => format!(", device <code>{}</code>", Escaped(device)),
                None => String::new(),
            },
            match matrix["allowed_users"].as_array().map(Vec::len) {
                Some(0) | None => "nobody yet".to_owned(),
                Some(_) => text(&matrix["allowed_users"]),
            }
        ),
        _ => "Matrix is off in the configuration.".to_owned(),
    };
    if matrix["built"] == false {
        return format!(
            r#"<section class="matrix"><h2>Matrix</h2><p>{now}</p><p class="warn">This build has no Matrix client: it was built without the <code>matrix</code> feature.</p></section>"#
        );
    }
    format!(
        r#"<section class="matrix"><h2>Matrix</h2><p>{now}</p><p class="help">Make an account for the assistant on your homeserver (not your own), and give its password here. It logs in once, as a new device; that device's access token is kept in a file only you can read (mode 0600), never the password. Your own user id lets you talk to the assistant and approve what it does. Then invite it to a direct chat.</p><form method="post" action="/channels/matrix"><input type="hidden" name="csrf" value="{}"><p><label>Homeserver <input type="url" name="homeserver" required placeholder="https://matrix.example.org" size="34"></label></p><p><label>The assistant's user id <input name="user" required placeholder="@assistant:example.org" autocomplete="off" size="30"></label></p><p><label>Its password <input type="password" name="password" required autocomplete="off" size="30"></label></p><p><label>Your own user id <input name="owner" placeholder="@you:example.org" size="30"></label></p><button type="submit">Log in and connect</button></form></section>"#,
        Escaped(csrf)
    )
}

/// The Matrix form.
#[derive(Deserialize)]
pub struct MatrixForm {
    csrf: String,
    homeserver: String,
    user: String,
    password: String,
    #[serde(default)]
    owner: String,
}

impl WithToken for MatrixForm {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /channels/matrix`.
pub async fn connect(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<MatrixForm>, FormRejection>,
) -> Response {
    let (session, form) = match accept_with_session(sender, form) {
        Ok(accepted) => accepted,
        Err(refused) => return *refused,
    };
    let csrf = csrf_token(&session);
    let owner = Some(form.owner.trim().to_owned()).filter(|owner| !owner.is_empty());
    let request = DashboardRequest::ConnectMatrix {
        homeserver: form.homeserver,
        user: form.user,
        password: form.password,
        owner,
    };
    connected(&state, &csrf, request, "Matrix").await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_form_asks_for_the_password_hidden_and_the_state_is_escaped() {
        let off = json!({"enabled": false, "built": true});
        let html = section(&off, "tok");
        assert!(
            html.contains("Matrix is off") && html.contains(r#"action="/channels/matrix""#),
            "{html}"
        );
        assert!(html.contains(r#"type="password" name="password""#), "{html}");
        let on = json!({"enabled": true, "built": true, "user": "@a:<x>", "homeserver": "https://m.example",
            "device_id": "DEV", "allowed_users": ["@ada:m.example"]});
        let html = section(&on, "tok");
        assert!(
            html.contains("<code>@a:&lt;x&gt;</code>") && html.contains("device <code>DEV</code>"),
            "{html}"
        );
        let without = json!({"enabled": false, "built": false});
        let html = section(&without, "tok");
        assert!(
            html.contains("without the <code>matrix</code> feature") && !html.contains("<form"),
            "{html}"
        );
    }
}
