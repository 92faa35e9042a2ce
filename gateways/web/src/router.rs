//! The router: every feature's routes, each brought by its own file
//! (`routes()`), and what every request goes through: the security headers,
//! the `Host` check, a body limit. The routes:
//!
//! | route | what | guard |
//! | --- | --- | --- |
//! | `GET /` | the overview | signed in, else how to sign in |
//! | `GET /chat` | sends the browser to the chat used last (a fresh one when there is none) | signed in |
//! | `GET /chat/{id}` | one of the owner's chats, the list of them, a form to talk | signed in |
//! | `POST /chat/{id}` | a message (multipart, maybe a file); its reply streamed or waited for | origin, cookie, CSRF token |
//! | `GET /chat/{id}/stream` | what is said in it from now on (server-sent events) | signed in |
//! | `POST /chat/new`, `/chat/{id}/rename` | a fresh chat; a chat's name | origin, cookie, CSRF token |
//! | `GET /chat/{id}/delete`, `POST` it | the question before a chat is deleted; the deletion | signed in; origin, cookie, CSRF token |
//! | `GET /chat/files/{key}` | a file the assistant sent, as an attachment | signed in |
//! | `GET /events` | live updates (server-sent events) | signed in |
//! | `GET /approvals` | what waits for approval, decided, standing rules | signed in |
//! | `POST /approvals/decide`, `/approvals/rules/revoke` | answer an approval, revoke a rule | origin, cookie, CSRF token |
//! | `GET /loops` | background loops, tools and their gates | signed in |
//! | `POST /loops/run`, `/loops/stop`, `/loops/start` | run a loop now, stop it, start a stopped one again | origin, cookie, CSRF token |
//! | `GET /sign-in/{token}` | a one-time link traded for a session | rate-limited per client |
//! | `POST /sign-out` | ends the session | origin, cookie, CSRF token |
//! | `GET /assets/style.css`, `/assets/live.js`, `/assets/chat.js` | embedded assets | none |
//! | `GET /assets/favicon.svg` | the icon, cached for a year | none |
//! | `GET /conversations`, `?q=` | every conversation; a search over all history | signed in |
//! | `GET /conversations/{key}` | one conversation's history and summary | signed in |
//! | `GET /usage` | tokens per day, provider, conversation | signed in |
//! | `GET /config` | the config file masked, its check | signed in |
//! | `POST /config/reload` | reloads the configuration | origin, cookie, CSRF token |
//! | `POST /config/edit` | writes the edited configuration (checked, `.bak`), reloads | origin, cookie, CSRF token |
//! | `GET /logs`, `?level=&target=` | the daemon's recent log lines | signed in |
//! | `GET /logs/events` | new log lines (server-sent events) | signed in |
//! | `GET /keys` | API keys and signed-in browsers | signed in |
//! | `POST /keys/create`, `/keys/revoke`, `/keys/sessions/revoke` | make or revoke a key, sign a browser out | origin, cookie, CSRF token |
//! | `GET /channels` | each channel's state; Telegram and Signal set up | signed in |
//! | `GET /channels/events` | the channels' changes (server-sent events) | signed in |
//! | `POST /channels/telegram`, `/channels/signal` | connect a bot by its token, link a Signal account | origin, cookie, CSRF token |
//! | `GET /v1/models`, `POST /v1/chat/completions` | the OpenAI-compatible API (`api/`) | API key |
//! | `GET /metrics` | Prometheus text | an API key or a signed-in browser, none with `open_metrics` |
//! | anything else | 404 page | |
//!
//! "Signed in" and "cookie" count a cookie naming no live session as a
//! guess, like a wrong link; "API key" also holds the request's place
//! among those being answered at once (`api/in_flight.rs`).

use std::sync::Arc;

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::Response;

use crate::host::Refused;
use crate::pages::errors;
use crate::pages::layout::Viewer;
use crate::pages::{channels, configuration, conversations, keys, logs, overview, usage};
use crate::session::SignedIn;
use crate::state::AppState;
use crate::{api, approvals, assets, chat, chat_list, events, headers, loops, metrics, sign_in};

/// The largest request body taken, in bytes: the forms are small.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// The dashboard's router over `state`: each feature's routes, and what
/// every request goes through.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .merge(overview::routes())
        .merge(chat_list::routes())
        .merge(chat::routes())
        .merge(events::routes())
        .merge(approvals::routes())
        .merge(loops::routes())
        .merge(sign_in::routes())
        .merge(assets::routes())
        .merge(conversations::routes())
        .merge(usage::routes())
        .merge(configuration::routes())
        .merge(logs::routes())
        .merge(keys::routes())
        .merge(channels::routes())
        .nest("/v1", api::router())
        .merge(metrics::routes())
        .fallback(not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(middleware::from_fn_with_state(state.clone(), check_host))
        .layer(middleware::from_fn(headers::secure))
        .with_state(state)
}

/// Refuses a request for another host before any route sees it.
async fn check_host(State(state): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let host = request.headers().get(header::HOST).and_then(|v| v.to_str().ok());
    match state.hosts.check_host(host) {
        Ok(()) => next.run(request).await,
        Err(Refused::NoHost) => errors::bad_request(StatusCode::BAD_REQUEST, "The request names no host."),
        Err(_) => {
            tracing::info!(host = ?host, "web request for another host refused");
            errors::wrong_host()
        }
    }
}

/// Anything else: the 404 page, with the navigation when signed in.
async fn not_found(signed_in: Option<SignedIn>) -> Response {
    errors::not_found_for(signed_in.as_ref().map(|s| Viewer { csrf: &s.csrf }))
}
