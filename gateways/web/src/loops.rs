//! The Loops & tools page's routes: `GET /loops` shows the background
//! loops, the tools and their gates, the tool servers; `POST /loops/run`
//! runs a loop now, `POST /loops/stop` stops one and `POST /loops/start`
//! starts a stopped one again — the admin requests `passepartout loops
//! run|stop|start` sends. Then the browser is sent back to the page, which
//! says what came of it. A Stop is done only once confirmed: without its
//! `confirm` field the answer is a page saying what stopping does (for the
//! heartbeat, the backups and the approvals' expiry stop with it), whose
//! button confirms.

use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use passepartout_admin::{AdminReply, AdminRequest};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::pages::errors;
use crate::pages::layout::{Viewer, page};
use crate::pages::loops::{Notice, body, confirm_stop};
use crate::posted::{WithToken, accept, plain, see_other};
use crate::session::{FormSession, SignedIn};
use crate::state::AppState;

/// The page's query: what a button just did.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Query {
    ran: Option<String>,
    stopped: Option<String>,
    started: Option<String>,
}

/// `GET /loops`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    signed_in: SignedIn,
    query: Result<Form<Query>, FormRejection>,
) -> Response {
    let Ok(Form(query)) = query else {
        return errors::bad_request(StatusCode::BAD_REQUEST, "The page's address could not be read.");
    };
    let notice = match (query.ran, query.stopped, query.started) {
        (Some(name), ..) => Some(Notice::Ran(name)),
        (None, Some(name), _) => Some(Notice::Stopped(name)),
        (None, None, Some(name)) => Some(Notice::Started(name)),
        (None, None, None) => None,
    };
    // Before what the page shows is read: whatever changes after is news.
    let seen = crate::events::seen(&state.admin).await;
    let loops = match state.admin.ask(AdminRequest::Loops).await {
        Ok(AdminReply::Loops(Ok(loops))) => loops,
        Ok(AdminReply::Loops(Err(unreadable))) => json!({ "error": unreadable.message }),
        _ => return errors::unavailable("the daemon is shutting down"),
    };
    let tools = match state.admin.ask(AdminRequest::Tools).await {
        Ok(AdminReply::Tools(tools)) => tools,
        _ => return errors::unavailable("the daemon is shutting down"),
    };
    let status = match state.admin.ask(AdminRequest::Status).await {
        Ok(AdminReply::Status(status)) => status,
        _ => Value::Null,
    };
    let html = body(
        &loops,
        &tools,
        &status,
        notice.as_ref(),
        &signed_in.csrf,
        seen.as_deref(),
    );
    page(
        StatusCode::OK,
        "Loops & tools",
        "/loops",
        Some(Viewer { csrf: &signed_in.csrf }),
        &html,
    )
}

/// A Run now, Stop or Start button under a loop.
#[derive(Deserialize)]
pub struct Control {
    csrf: String,
    name: String,
    /// `yes` once the person confirmed a Stop.
    #[serde(default)]
    confirm: Option<String>,
}

impl WithToken for Control {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// What a loop's button asks for.
#[derive(Clone, Copy, Debug)]
enum Action {
    Run,
    Stop,
    Start,
}

impl Action {
    fn request(self, name: String) -> AdminRequest {
        match self {
            Action::Run => AdminRequest::TriggerLoop { name },
            Action::Stop => AdminRequest::StopLoop { name },
            Action::Start => AdminRequest::StartLoop { name },
        }
    }

    /// The page's query field that says it was done.
    fn done(self) -> &'static str {
        match self {
            Action::Run => "ran",
            Action::Stop => "stopped",
            Action::Start => "started",
        }
    }
}

/// `POST /loops/run`.
pub async fn run(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<Control>, FormRejection>,
) -> Response {
    control(&state, sender, form, Action::Run).await
}

/// `POST /loops/stop`.
pub async fn stop(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<Control>, FormRejection>,
) -> Response {
    control(&state, sender, form, Action::Stop).await
}

/// `POST /loops/start`.
pub async fn start(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<Control>, FormRejection>,
) -> Response {
    control(&state, sender, form, Action::Start).await
}

async fn control(
    state: &AppState,
    sender: FormSession,
    form: Result<Form<Control>, FormRejection>,
    action: Action,
) -> Response {
    let control = match accept(sender, form) {
        Ok(control) => control,
        Err(refused) => return *refused,
    };
    let name = control.name;
    if matches!(action, Action::Stop) && control.confirm.as_deref() != Some("yes") {
        return page(
            StatusCode::OK,
            &format!("Stop loop {name}?"),
            "/loops",
            Some(Viewer { csrf: &control.csrf }),
            &confirm_stop(&name, &control.csrf),
        );
    }
    match state.admin.ask(action.request(name.clone())).await {
        Ok(AdminReply::LoopControl(answer)) if answer.ok => {
            tracing::info!(loop_name = %name, ?action, "loop controlled from the web");
            see_other("/loops", &[(action.done(), &name)])
        }
        Ok(AdminReply::LoopControl(answer)) => {
            errors::conflict(&plain(&answer.message), "/loops", "Back to Loops & tools")
        }
        _ => errors::unavailable("the daemon is shutting down"),
    }
}

/// The Loops page and its buttons.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/loops", get(show))
        .route("/loops/run", post(run))
        .route("/loops/stop", post(stop))
        .route("/loops/start", post(start))
}
