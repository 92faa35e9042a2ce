//! The Channels page (`GET /channels`): each channel (Telegram, Signal,
//! the web, the socket, …) with its state and its last error; a form that
//! connects a Telegram bot by its token (`POST /channels/telegram`: the
//! core checks it with `getMe` at the configured `telegram.api_url`,
//! stores it in a file of mode 0600, and changes the configuration the way
//! an edit on the Configuration page does: checked, `.bak`, reloaded); and
//! a button that links the owner's own Signal account (`POST
//! /channels/signal`), after which the page shows the link as a QR code
//! (SVG drawn by the core) for the phone to scan, then what came of it;
//! and a form that logs the assistant's Matrix account in (`matrix.rs`).
//! Without scripting, "Check again" reloads the page; with it, the page
//! follows the core's state as the Logs page follows the log
//! (`GET /channels/events`). Every form passes the origin, cookie and CSRF
//! checks.

mod matrix;

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use axum::Form;
use axum::Router;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use passepartout_admin::DashboardRequest;
use serde::Deserialize;
use serde_json::Value;

use super::configuration::{Saved, reload_result, saved_result};
use super::layout::{Viewer, page};
use super::parts::{ask, items, table, text, when};
use super::shown::badge;
use crate::escape::Escaped;
use crate::events::{fingerprint, stream_changes};
use crate::posted::{TokenOnly, WithToken, accept, accept_with_session, see_other};
use crate::session::{FormSession, SignedIn, csrf_token};
use crate::state::AppState;

/// How often a page's stream looks at the channels.
const EVERY: Duration = Duration::from_secs(1);

/// `GET /channels`.
pub async fn channels(State(state): State<Arc<AppState>>, signed_in: SignedIn) -> Response {
    shown(&state, &signed_in.csrf, None).await
}

async fn shown(state: &AppState, csrf: &str, saved: Option<&Saved>) -> Response {
    let document = match ask(&state.admin, DashboardRequest::Channels).await {
        Ok(document) => document,
        Err(response) => return *response,
    };
    let status = match saved {
        Some(saved) if !saved.written => StatusCode::UNPROCESSABLE_ENTITY,
        _ => StatusCode::OK,
    };
    page(
        status,
        "Channels",
        "/channels",
        Some(Viewer { csrf }),
        &body(&document, csrf, saved),
    )
}

/// The page's body: what a form did, the channels, Telegram, Signal,
/// Matrix.
pub fn body(document: &Value, csrf: &str, saved: Option<&Saved>) -> String {
    // The stream starts from the state this page shows, so a change made
    // before it connects (a link ready meanwhile) is news to it too.
    let seen = fingerprint(document);
    let mut out = format!(
        r#"<p class="meta"><span id="live" class="live" data-stream="/channels/events?seen={seen}">Updates by itself.</span> <a href="/channels">Check again</a></p>"#,
    );
    if let Some(saved) = saved {
        out += &saved_result(saved);
        if let Some(reloaded) = &saved.reloaded {
            out += &reload_result(reloaded);
        }
    }
    let rows: Vec<Vec<String>> = items(&document["channels"])
        .map(|channel| {
            let state = channel["state"].as_str().unwrap_or("?");
            let class = match state {
                "up" => "good",
                "off" => "waiting",
                _ => "bad",
            };
            let state = match (state, channel["in_file"] == true) {
                ("off", true) => "on in the file: starts at a restart".to_owned(),
                (state, _) => state.to_owned(),
            };
            let last = &channel["last_error"];
            let last = match last["text"].as_str() {
                Some(line) => format!(
                    "{} <span class=\"meta\">{}</span>",
                    Escaped(line),
                    Escaped(&when(last["at_ms"].as_u64()))
                ),
                None => String::new(),
            };
            vec![
                text(&channel["name"]),
                badge(&state, class),
                text(&channel["detail"]),
                last,
            ]
        })
        .collect();
    out += "<section><h2>State</h2>";
    out += &table(&["Channel", "State", "Detail", "Last error"], rows, "No channel.");
    out += "</section>";
    out += &telegram(&document["telegram"], csrf);
    out += &signal(&document["signal"], csrf);
    out += &matrix::section(&document["matrix"], csrf);
    out
}

fn telegram(telegram: &Value, csrf: &str) -> String {
    let now = match telegram["enabled"] == true {
        true => format!(
            "Telegram is on in the configuration: the token is read from <code>{}</code>; let in: {}.",
            text(&telegram["token_file"]),
            match telegram["allowed_users"].as_array().map(Vec::len) {
                Some(0) | None => "nobody yet".to_owned(),
                Some(_) => text(&telegram["allowed_users"]),
            }
        ),
        false => "Telegram is off in the configuration.".to_owned(),
    };
    format!(
        r#"<section class="telegram"><h2>Telegram</h2><p>{now}</p><p class="help">Make a bot with @BotFather in Telegram (<code>/newbot</code>) and paste the token it gives. It is checked with Telegram (<code>getMe</code> at <code>{}</code>) before anything is written, then kept in a file only you can read (mode 0600). Your own Telegram user id lets you talk to the bot (a bot such as @userinfobot tells you yours).</p><form method="post" action="/channels/telegram"><input type="hidden" name="csrf" value="{}"><p><label>Bot token <input type="password" name="token" required autocomplete="off" size="46"></label></p><p><label>Your Telegram user id <input name="owner" inputmode="numeric" pattern="[0-9]*" size="14"></label></p><button type="submit">Check and connect</button></form></section>"#,
        text(&telegram["api_url"]),
        Escaped(csrf)
    )
}

fn signal(signal: &Value, csrf: &str) -> String {
    let link = &signal["link"];
    let mut out = String::from(r#"<section class="signal"><h2>Signal</h2>"#);
    match signal["account"].as_str().filter(|_| signal["enabled"] == true) {
        Some(account) => {
            let _ = write!(out, "<p>Signal is on for <code>{}</code>.</p>", Escaped(account));
        }
        None => out += "<p>Signal is off in the configuration.</p>",
    }
    let button = format!(
        r#"<form method="post" action="/channels/signal"><input type="hidden" name="csrf" value="{}"><button type="submit">Link my Signal account</button></form>"#,
        Escaped(csrf)
    );
    match link["state"].as_str().unwrap_or("idle") {
        "starting" => {
            out += r#"<p class="warn">Asking signal-cli for a link… <a href="/channels">Check again</a></p>"#;
        }
        "waiting" => {
            out += r#"<p>On your phone, open Signal → Settings → Linked devices → Link new device, and scan this code:</p>"#;
            if let Some(svg) = link["svg"].as_str().filter(|svg| svg.starts_with("<svg")) {
                // Drawn by the core from the link: rects and paths only.
                let _ = write!(out, r#"<figure class="qr">{svg}</figure>"#);
            }
            let _ = write!(
                out,
                r#"<details><summary>The link as text</summary><p><code class="uri">{}</code></p></details><p>Waiting for your phone… <a href="/channels">Check again</a></p>"#,
                text(&link["uri"])
            );
        }
        "linked" => {
            let _ = write!(
                out,
                r#"<p class="ok">Linked: <code>{}</code>. The assistant answers what you write to Note to Self.</p>"#,
                text(&link["number"])
            );
            if let Ok(saved) = serde_json::from_value::<Saved>(link["outcome"].clone()) {
                out += &saved_result(&saved);
                if let Some(reloaded) = &saved.reloaded {
                    out += &reload_result(reloaded);
                }
            }
            out += &button;
        }
        "failed" => {
            let _ = write!(
                out,
                r#"<p class="error">Linking failed: {}</p>"#,
                text(&link["message"])
            );
            out += &button;
        }
        _ => {
            out += r#"<p class="help">Link the assistant to your own Signal account as one of its devices, as <code>passepartout signal link</code> does: it then answers what you write to Note to Self. The page shows a code to scan with your phone.</p>"#;
            out += &button;
        }
    }
    out + "</section>"
}

/// The Telegram form: the token, and the owner's user id (may be empty).
#[derive(Deserialize)]
pub struct Telegram {
    csrf: String,
    token: String,
    #[serde(default)]
    owner: String,
}

impl WithToken for Telegram {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /channels/telegram`.
pub async fn connect_telegram(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<Telegram>, FormRejection>,
) -> Response {
    let (session, form) = match accept_with_session(sender, form) {
        Ok(accepted) => accepted,
        Err(refused) => return *refused,
    };
    let csrf = csrf_token(&session);
    let owner = match form.owner.trim() {
        "" => None,
        owner => match owner.parse::<i64>() {
            Ok(owner) if owner > 0 => Some(owner),
            _ => {
                let saved = Saved {
                    message: "A Telegram user id is a positive number; nothing was written.".into(),
                    ..Saved::default()
                };
                return shown(&state, &csrf, Some(&saved)).await;
            }
        },
    };
    let request = DashboardRequest::ConnectTelegram {
        token: form.token,
        owner,
    };
    connected(&state, &csrf, request, "Telegram").await
}

/// Asks the core to connect `channel` as `request` says, then shows the
/// page with what came of it.
async fn connected(state: &AppState, csrf: &str, request: DashboardRequest, channel: &str) -> Response {
    let saved: Saved = match ask(&state.admin, request).await {
        Ok(document) => serde_json::from_value(document).unwrap_or_default(),
        Err(response) => return *response,
    };
    tracing::info!(written = saved.written, "{channel} connected from the dashboard");
    shown(state, csrf, Some(&saved)).await
}

/// `POST /channels/signal`: starts linking, then to the page that shows it.
pub async fn link_signal(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<TokenOnly>, FormRejection>,
) -> Response {
    if let Err(refused) = accept(sender, form) {
        return *refused;
    }
    if let Err(response) = ask(&state.admin, DashboardRequest::LinkSignal).await {
        return *response;
    }
    see_other("/channels", &[])
}

/// What a page's stream says it last showed: the fingerprint of its
/// document, as the other pages' streams are told.
#[derive(Deserialize)]
pub struct Since {
    seen: Option<String>,
}

/// `GET /channels/events`: a `status` event whenever the channels or a
/// link's state change.
pub async fn events(
    State(state): State<Arc<AppState>>,
    _signed_in: SignedIn,
    since: Result<Form<Since>, FormRejection>,
) -> Response {
    // A query that is not one starts from the first look, as none does.
    let seen = since.ok().and_then(|Form(since)| since.seen);
    let admin = state.admin.clone();
    stream_changes(&state, seen, EVERY, move || {
        let admin = admin.clone();
        async move { ask(&admin, DashboardRequest::Channels).await.ok() }
    })
}

/// The Channels page, its stream and its forms.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/channels", get(channels))
        .route("/channels/events", get(events))
        .route("/channels/telegram", post(connect_telegram))
        .route("/channels/signal", post(link_signal))
        .route("/channels/matrix", post(matrix::connect))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_page_names_the_state_it_shows_for_its_stream_to_start_from() {
        let document = json!({"channels": [], "signal": {"link": {"state": "asking"}}});
        let html = body(&document, "tok", None);
        let seen = fingerprint(&document);
        assert!(html.contains(&format!("/channels/events?seen={seen}")), "{html}");
    }

    #[test]
    fn channels_their_state_and_last_error_are_shown_escaped() {
        let document = json!({
            "channels": [
                {"name": "telegram", "state": "down", "detail": "<x>", "in_file": true,
                 "last_error": {"at_ms": 0, "level": "WARN", "text": "getMe: 401 <Unauthorized>"}},
                {"name": "signal", "state": "off", "in_file": false, "last_error": null},
            ],
            "telegram": {"enabled": false, "api_url": "http://127.0.0.1:9/", "token_file": null, "allowed_users": []},
            "signal": {"enabled": false, "account": null, "link": {"state": "idle"}},
        });
        let html = body(&document, "tok", None);
        assert!(
            html.contains("401 &lt;Unauthorized&gt;") && html.contains("&lt;x&gt;"),
            "{html}"
        );
        assert!(html.contains(r#"action="/channels/telegram""#) && html.contains(r#"type="password" name="token""#));
        assert!(html.contains(r#"action="/channels/signal""#), "{html}");
        assert!(html.contains(r#"<a href="/channels">Check again</a>"#), "{html}");
    }

    #[test]
    fn a_link_waiting_shows_its_code_and_a_link_made_says_so() {
        let waiting = json!({"enabled": false, "link": {"state": "waiting", "uri": "sgnl://linkdevice?uuid=a&b=<c>", "svg": "<svg><rect/></svg>"}});
        let html = signal(&waiting, "tok");
        assert!(
            html.contains(r#"<figure class="qr"><svg><rect/></svg></figure>"#),
            "{html}"
        );
        assert!(html.contains("uuid=a&amp;b=&lt;c&gt;"), "{html}");
        let not_svg = json!({"link": {"state": "waiting", "uri": "u", "svg": "<script>x</script>"}});
        assert!(!signal(&not_svg, "t").contains("<script>"));
        let linked = json!({"enabled": true, "account": "+15550001", "link": {"state": "linked", "number": "+15550001",
            "outcome": {"written": true, "message": "Wrote /c.toml", "problems": [], "reloaded": {"applied": true, "message": "Reloaded", "changed": [], "need_restart": ["signal.enabled"], "problems": []}}}});
        let html = signal(&linked, "tok");
        assert!(html.contains("Linked: <code>+15550001</code>"), "{html}");
        assert!(html.contains("applied only after a restart"), "{html}");
    }
}
