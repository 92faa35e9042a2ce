//! The Approvals page's routes: `GET /approvals` shows what waits, what was
//! decided and the standing rules; `POST /approvals/decide` answers one
//! approval (approve, always allow, deny) and `POST /approvals/rules/revoke`
//! revokes a standing rule. Each answer goes to the core through the same
//! admin requests `passepartout approvals` uses, marked as coming from the
//! web; then the browser is sent back to the page, which says what came of
//! it.

use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use passepartout_admin::{AdminReply, AdminRequest};
use passepartout_gateway::ApprovalToken;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::pages::approvals::{Choice, Filter, Notice, body};
use crate::pages::errors;
use crate::pages::layout::{Viewer, page};
use crate::posted::{WithToken, accept, plain, see_other};
use crate::session::{FormSession, SignedIn};
use crate::state::AppState;

/// The page's query: the history's filters, and what a button just did.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
pub struct Query {
    outcome: String,
    gateway: String,
    /// The approval this browser's answer decided, with `choice`.
    decided: String,
    choice: Option<Choice>,
    /// The approval that was decided before this browser's answer came.
    already: String,
    /// The standing rule just revoked.
    revoked: Option<u64>,
}

impl Query {
    fn filter(&self) -> Filter {
        let some = |s: &str| Some(s.trim().to_owned()).filter(|s| !s.is_empty());
        Filter {
            outcome: some(&self.outcome),
            gateway: some(&self.gateway),
        }
    }

    fn notice(&self) -> Option<Notice> {
        if let Some(choice) = self.choice.filter(|_| !self.decided.is_empty()) {
            return Some(Notice::Decided {
                token: self.decided.clone(),
                choice,
            });
        }
        if !self.already.is_empty() {
            return Some(Notice::Already {
                token: self.already.clone(),
            });
        }
        self.revoked.map(|id| Notice::Revoked { id })
    }
}

/// `GET /approvals`.
pub async fn show(
    State(state): State<Arc<AppState>>,
    signed_in: SignedIn,
    query: Result<Form<Query>, FormRejection>,
) -> Response {
    let Ok(Form(query)) = query else {
        return errors::bad_request(StatusCode::BAD_REQUEST, "The page's filters could not be read.");
    };
    // Before what the page shows is read: whatever changes after is news.
    let seen = crate::events::seen(&state.admin).await;
    let Some(listing) = listing(&state).await else {
        return errors::unavailable("the daemon is shutting down");
    };
    let rules = match state.admin.ask(AdminRequest::Rules).await {
        Ok(AdminReply::Rules(Ok(rules))) => rules,
        Ok(AdminReply::Rules(Err(unreadable))) => json!({ "error": unreadable.message }),
        _ => return errors::unavailable("the daemon is shutting down"),
    };
    let html = body(
        &listing,
        &rules,
        &query.filter(),
        query.notice().as_ref(),
        &signed_in.csrf,
        seen.as_deref(),
    );
    page(
        StatusCode::OK,
        "Approvals",
        "/approvals",
        Some(Viewer { csrf: &signed_in.csrf }),
        &html,
    )
}

/// Every approval and the audit trail, or `{"error": …}`; none when the
/// daemon no longer answers.
async fn listing(state: &AppState) -> Option<Value> {
    match state.admin.ask(AdminRequest::Approvals { all: true }).await {
        Ok(AdminReply::Approvals(Ok(listing))) => Some(listing),
        Ok(AdminReply::Approvals(Err(unreadable))) => Some(json!({ "error": unreadable.message })),
        _ => None,
    }
}

/// An answer from a button under an approval.
#[derive(Deserialize)]
pub struct Answer {
    csrf: String,
    token: String,
    choice: Choice,
    /// The page to return to, when not the Approvals page.
    #[serde(default)]
    back: Option<Back>,
}

/// A page an answer may return to: only these, so no form can send the
/// browser elsewhere.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Back {
    Chat,
}

impl WithToken for Answer {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /approvals/decide`.
pub async fn decide(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<Answer>, FormRejection>,
) -> Response {
    let answer = match accept(sender, form) {
        Ok(answer) => answer,
        Err(refused) => return *refused,
    };
    let Ok(token) = ApprovalToken::parse_typed(&answer.token) else {
        return errors::bad_request(StatusCode::BAD_REQUEST, "The form names no approval token.");
    };
    let request = AdminRequest::Decide {
        token: token.as_str().to_owned(),
        approve: answer.choice != Choice::Deny,
        always: answer.choice == Choice::Always,
    };
    let decision = match state.admin.ask(request).await {
        Ok(AdminReply::Decision(decision)) => decision,
        _ => return errors::unavailable("the daemon is shutting down"),
    };
    let token = token.as_str();
    if decision.decided {
        tracing::info!(token, choice = answer.choice.as_str(), "approval decided from the web");
        if answer.back == Some(Back::Chat) {
            return see_other("/chat", &[]);
        }
        return see_other("/approvals", &[("decided", token), ("choice", answer.choice.as_str())]);
    }
    // Not taken: decided before (a second click, another answer first, the
    // timer), or something else the core says.
    let decided_before = listing(&state).await.is_some_and(|listing| {
        listing["approvals"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|a| a["token"] == token && a["status"] != "pending")
    });
    if decided_before {
        if answer.back == Some(Back::Chat) {
            return see_other("/chat", &[]);
        }
        return see_other("/approvals", &[("already", token)]);
    }
    errors::conflict(&plain(&decision.message), "/approvals", "Back to Approvals")
}

/// A Revoke button under a standing rule.
#[derive(Deserialize)]
pub struct Revoke {
    csrf: String,
    id: u64,
}

impl WithToken for Revoke {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /approvals/rules/revoke`.
pub async fn revoke(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<Revoke>, FormRejection>,
) -> Response {
    let revoke = match accept(sender, form) {
        Ok(revoke) => revoke,
        Err(refused) => return *refused,
    };
    let request = AdminRequest::RevokeRule { id: revoke.id };
    match state.admin.ask(request).await {
        Ok(AdminReply::RuleRevoked(answer)) if answer.revoked => {
            see_other("/approvals", &[("revoked", &revoke.id.to_string())])
        }
        Ok(AdminReply::RuleRevoked(answer)) => {
            errors::conflict(&plain(&answer.message), "/approvals", "Back to Approvals")
        }
        _ => errors::unavailable("the daemon is shutting down"),
    }
}

/// The Approvals page and its buttons.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/approvals", get(show))
        .route("/approvals/decide", post(decide))
        .route("/approvals/rules/revoke", post(revoke))
}
