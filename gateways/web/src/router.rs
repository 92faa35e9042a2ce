//! The routes and what every request goes through: the security headers,
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

use std::sync::{Arc, Mutex, PoisonError};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::StatusCode;
use axum::http::header;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{get, post};
use passepartout_admin::{AdminAs, AdminReply, AdminRequest};
use serde_json::{Value, json};

use passepartout_gateway::Intake;

use crate::api;
use crate::api::in_flight::InFlight;
use crate::chat_list;
use crate::chats::Chats;
use crate::downloads::Downloads;
use crate::events::{self, Streams};
use crate::host::{Hosts, Refused};
use crate::hub::Hub;
use crate::keys::ApiKeys;
use crate::metrics::{self, Latency};
use crate::pages::errors;
use crate::pages::layout::{Viewer, page};
use crate::pages::{channels, keys, logs};
use crate::pages::{configuration, conversations, usage};
use crate::rate_limit::Guesses;
use crate::redact::LiveSecrets;
use crate::session::SignedIn;
use crate::sessions::Sessions;
use crate::threads::Threads;
use crate::uploads::Uploads;
use crate::{approvals, loops};
use crate::{assets, chat, headers, sign_in};

/// The largest request body taken, in bytes: the forms are small.
pub const MAX_BODY_BYTES: usize = 16 * 1024;

/// What every route may use.
pub struct AppState {
    /// Who waits on which conversation.
    pub hub: Arc<Hub>,
    /// The core's intake, once the gateway listens.
    pub intake: Mutex<Option<Intake>>,
    /// The API keys, kept by the core.
    pub keys: Arc<dyn ApiKeys>,
    /// The owner's chats, kept by the core.
    pub chats: Arc<dyn Chats>,
    /// Where each API conversation stands, kept by the core.
    pub threads: Arc<dyn Threads>,
    /// Kept out of every answer; an answer keeps those it started with.
    pub secrets: LiveSecrets,
    /// How long the API's answers took.
    pub latency: Latency,
    /// The API requests being answered.
    pub in_flight: Arc<InFlight>,
    /// Whether `/metrics` is open without a key (`[web] open_metrics`).
    pub metrics_open: bool,
    /// The core's answers: the status document, the approvals; asked as
    /// the owner, from the web.
    pub admin: AdminAs,
    /// Sign-in links and sessions, kept by the core.
    pub sessions: Arc<dyn Sessions>,
    /// The hosts and origins this dashboard answers.
    pub hosts: Hosts,
    /// Whether the cookie is `Secure` (the public address is https).
    pub secure_cookie: bool,
    /// Failed sign-ins per client.
    pub guesses: Guesses,
    /// The open event streams.
    pub streams: Streams,
    /// Files attached on the chat page, until the core fetches them.
    pub uploads: Uploads,
    /// Files the assistant sent, for the chat page to offer.
    pub downloads: Downloads,
}

impl AppState {
    /// The core's intake, when the gateway listens.
    pub fn intake(&self) -> Option<Intake> {
        self.intake.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

/// The dashboard's router over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new()
        .route("/", get(overview))
        .route("/chat", get(chat_list::newest))
        .route("/chat/new", post(chat_list::new_chat))
        .route(
            "/chat/{id}",
            get(chat::show)
                .post(chat::send)
                .layer(DefaultBodyLimit::max(chat::MAX_POST_BYTES)),
        )
        .route("/chat/{id}/stream", get(chat::stream))
        .route("/chat/{id}/rename", post(chat_list::rename))
        .route(
            "/chat/{id}/delete",
            get(chat_list::confirm_delete).post(chat_list::delete),
        )
        .route("/chat/files/{key}", get(chat::download))
        .route("/events", get(events::events))
        .route("/approvals", get(approvals::show))
        .route("/approvals/decide", post(approvals::decide))
        .route("/approvals/rules/revoke", post(approvals::revoke))
        .route("/loops", get(loops::show))
        .route("/loops/run", post(loops::run))
        .route("/loops/stop", post(loops::stop))
        .route("/loops/start", post(loops::start))
        .route("/sign-in/{token}", get(sign_in::redeem))
        .route("/sign-out", post(sign_in::sign_out))
        .route("/assets/style.css", get(assets::style))
        .route("/assets/live.js", get(assets::live))
        .route("/assets/chat.js", get(assets::chat))
        .route("/assets/favicon.svg", get(assets::favicon))
        .route("/conversations", get(conversations::listing))
        .route("/conversations/{key}", get(conversations::conversation))
        .route("/usage", get(usage::usage))
        .route("/config", get(configuration::configuration))
        .route("/config/reload", post(configuration::reload))
        .route(
            "/config/edit",
            post(configuration::edit).layer(DefaultBodyLimit::max(configuration::MAX_EDIT_BYTES)),
        )
        .route("/logs", get(logs::logs))
        .route("/logs/events", get(logs::events))
        .route("/keys", get(keys::keys))
        .route("/keys/create", post(keys::create))
        .route("/keys/revoke", post(keys::revoke_key))
        .route("/keys/sessions/revoke", post(keys::revoke_session))
        .route("/channels", get(channels::channels))
        .route("/channels/events", get(channels::events))
        .route("/channels/telegram", post(channels::connect_telegram))
        .route("/channels/signal", post(channels::link_signal))
        .nest("/v1", api::router())
        .route("/metrics", get(metrics::metrics))
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

/// `GET /`.
async fn overview(State(state): State<Arc<AppState>>, signed_in: SignedIn) -> Response {
    let status = match state.admin.ask(AdminRequest::Status).await {
        Ok(AdminReply::Status(status)) => status,
        _ => return errors::unavailable("the daemon is shutting down"),
    };
    let approvals: Value = match state.admin.ask(AdminRequest::Approvals { all: false }).await {
        Ok(AdminReply::Approvals(Ok(listing))) => listing,
        Ok(AdminReply::Approvals(Err(unreadable))) => json!({ "error": unreadable.message }),
        _ => json!({ "error": "no answer" }),
    };
    let body = crate::pages::overview::body(&status, &approvals);
    page(
        StatusCode::OK,
        "Overview",
        "/",
        Some(Viewer { csrf: &signed_in.csrf }),
        &body,
    )
}

/// Anything else: the 404 page, with the navigation when signed in.
async fn not_found(signed_in: Option<SignedIn>) -> Response {
    errors::not_found_for(signed_in.as_ref().map(|s| Viewer { csrf: &s.csrf }))
}
