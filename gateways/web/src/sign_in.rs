//! Signing in and out. `GET /sign-in/{token}` trades a one-time link
//! (from `passepartout web`) for a session cookie and sends the browser to
//! the overview (through a page of its own when another site's page led
//! there, so the cookie goes along); a link unknown, used or expired gets one answer, and a
//! client that tries too many is held for a while. `POST /sign-out` ends
//! the session (a form: the page's origin, the cookie and the CSRF token).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::header::{self, HeaderMap};
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::pages::errors;
use crate::posted::TokenOnly;
use crate::session::{FormSession, clear_cookie, set_cookie};
use crate::state::AppState;

/// The longest user agent kept with a session.
const MAX_USER_AGENT: usize = 200;

/// `GET /sign-in/{token}`.
pub async fn redeem(
    State(state): State<Arc<AppState>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    Path(token): Path<String>,
    headers: HeaderMap,
) -> Response {
    let client = client.ip();
    let user_agent: String = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .chars()
        .take(MAX_USER_AGENT)
        .collect();
    match state.sessions.redeem(&token, &user_agent) {
        Ok(Some(session)) => {
            tracing::info!(%client, "a browser signed in to the dashboard");
            let mut response = if from_elsewhere(&headers) {
                signed_in_page()
            } else {
                (
                    StatusCode::SEE_OTHER,
                    [(header::LOCATION, HeaderValue::from_static("/"))],
                )
                    .into_response()
            };
            response
                .headers_mut()
                .insert(header::SET_COOKIE, set_cookie(&session, state.secure_cookie));
            response
        }
        Ok(None) => {
            if state.guesses.failed(client) {
                tracing::warn!(%client, "sign-in refused: too many links that were not valid");
                return errors::too_many_tries();
            }
            tracing::info!(%client, "a sign-in link that is not valid was tried");
            errors::link_not_valid()
        }
        Err(unavailable) => errors::unavailable(&unavailable.message),
    }
}

/// Whether the link was followed from another site's page (as the page
/// `passepartout web --open` writes, a `file://` one): a browser does not
/// send a `SameSite=Strict` cookie on a redirect that such a navigation
/// started, so the overview would not see the session.
fn from_elsewhere(headers: &HeaderMap) -> bool {
    headers
        .get("sec-fetch-site")
        .is_some_and(|site| site.as_bytes() == b"cross-site")
}

/// Signed in, and sent on to the overview by the dashboard's own page: a
/// navigation from this origin, which carries the new cookie.
fn signed_in_page() -> Response {
    let mut response = crate::pages::layout::page(
        StatusCode::OK,
        "Signed in",
        "",
        None,
        r#"<p>Signed in. <a href="/">Open the dashboard</a>.</p>"#,
    );
    response
        .headers_mut()
        .insert(header::REFRESH, HeaderValue::from_static("0; url=/"));
    response
}

/// `POST /sign-out`.
pub async fn sign_out(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<TokenOnly>, FormRejection>,
) -> Response {
    let session = match crate::posted::accept_with_session(sender, form) {
        Ok((session, _)) => session,
        Err(refused) => return *refused,
    };
    if let Err(unavailable) = state.sessions.end(&session) {
        return errors::unavailable(&unavailable.message);
    }
    let mut response = (
        StatusCode::SEE_OTHER,
        [(header::LOCATION, HeaderValue::from_static("/"))],
    )
        .into_response();
    response.headers_mut().insert(header::SET_COOKIE, clear_cookie());
    response
}

/// Signing in with a link, and out.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/sign-in/{token}", get(redeem))
        .route("/sign-out", post(sign_out))
}
