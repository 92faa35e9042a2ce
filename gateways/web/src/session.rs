//! The browser's side of a session: the cookie that carries its id, the
//! CSRF token derived from it, and the guards a route puts in front of what
//! it serves — [`SignedIn`] for a page, [`FormSession`] for a form that
//! changes something, both checked before any body is read.
//!
//! The CSRF token is a hash of the session id under its own label: only
//! someone holding the id can know it, it needs no storage, and it dies with
//! the session. A form must bring the cookie, the page's own `Origin` and the
//! token; anything less is answered 403.
//!
//! A cookie naming no live session is a guess at a session id, counted with
//! the wrong sign-in links of the same client ([`Guesses`](crate::rate_limit::Guesses)):
//! past the limit it is answered 429. The cookie is left alone: browsers do
//! not keep cookies apart by port, so it may be another dashboard's on this
//! machine, still good there.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::{FromRequestParts, OptionalFromRequestParts};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::request::Parts;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

use crate::pages::errors;
use crate::rate_limit::client;
use crate::state::AppState;

/// The session cookie's name.
pub const COOKIE: &str = "passepartout_session";

/// How long a browser keeps the cookie: as long as a session can live at
/// most (the core ends it sooner when idle).
const COOKIE_MAX_AGE_S: u64 = 30 * 24 * 3600;

/// The `Set-Cookie` value that hands `session` to the browser: never to
/// scripts, never on another site's requests, only over TLS when the
/// dashboard is served with it.
pub fn set_cookie(session: &str, secure: bool) -> HeaderValue {
    let secure = if secure { "; Secure" } else { "" };
    let value = format!("{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/; Max-Age={COOKIE_MAX_AGE_S}{secure}");
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("passepartout_session=; Max-Age=0"))
}

/// The `Set-Cookie` value that removes the cookie.
pub fn clear_cookie() -> HeaderValue {
    HeaderValue::from_static("passepartout_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

/// The session id the request's cookie carries, if any.
pub fn session_id(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|cookies| cookies.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
}

/// The CSRF token of `session`.
pub fn csrf_token(session: &str) -> String {
    let digest = Sha256::new()
        .chain_update(b"passepartout web csrf\0")
        .chain_update(session.as_bytes())
        .finalize();
    URL_SAFE_NO_PAD.encode(digest)
}

/// A request from a signed-in browser: its session's CSRF token, for the
/// forms a page shows. A request that is not signed in is answered with the
/// page saying how to sign in.
pub struct SignedIn {
    pub csrf: String,
}

impl FromRequestParts<Arc<AppState>> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        let Some(session) = session_id(&parts.headers) else {
            return Err(errors::not_signed_in());
        };
        match state.sessions.check(session) {
            Ok(true) => Ok(SignedIn {
                csrf: csrf_token(session),
            }),
            Ok(false) => Err(wrong_session(state, client(parts), errors::not_signed_in())),
            Err(unavailable) => Err(errors::unavailable(&unavailable.message)),
        }
    }
}

/// A page anyone may see (the 404), with the navigation for a signed-in
/// browser: none without a cookie, and a cookie naming no live session is
/// counted as a guess like anywhere else.
impl OptionalFromRequestParts<Arc<AppState>> for SignedIn {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Option<Self>, Self::Rejection> {
        if session_id(&parts.headers).is_none() {
            return Ok(None);
        }
        match <SignedIn as FromRequestParts<Arc<AppState>>>::from_request_parts(parts, state).await {
            Ok(signed_in) => Ok(Some(signed_in)),
            Err(refused) if refused.status() == StatusCode::TOO_MANY_REQUESTS => Err(refused),
            Err(_) => Ok(None),
        }
    }
}

/// A form that changes something, checked before its body is read: its
/// `Origin` is the page's own and it comes with a live session, whose id
/// [`check_token`] checks the form's token against once the body is read.
pub struct FormSession {
    pub session: String,
}

impl FromRequestParts<Arc<AppState>> for FormSession {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        let headers = &parts.headers;
        let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
        let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
        if state.hosts.check_origin(host, origin, fetch_site).is_err() {
            return Err(errors::forbidden(
                "This form came from another site, so it was not taken.",
            ));
        }
        let Some(session) = session_id(headers) else {
            return Err(errors::forbidden("You are not signed in, so the form was not taken."));
        };
        match state.sessions.check(session) {
            Ok(true) => Ok(FormSession {
                session: session.to_owned(),
            }),
            Ok(false) => Err(wrong_session(
                state,
                client(parts),
                errors::forbidden("Your session has ended, so the form was not taken."),
            )),
            Err(unavailable) => Err(errors::unavailable(&unavailable.message)),
        }
    }
}

/// The answer to a cookie that names no live session: `answer`, or 429
/// past the client's guesses.
fn wrong_session(state: &AppState, client: IpAddr, answer: Response) -> Response {
    if state.guesses.failed(client) {
        tracing::warn!(%client, "request refused: too many sessions or links that were not valid");
        errors::too_many_tries()
    } else {
        tracing::info!(%client, "a session that is not valid was tried");
        answer
    }
}

/// Whether `sent` (the form's `csrf` field) is `session`'s token.
pub fn check_token(session: &str, sent: &str) -> Result<(), Box<Response>> {
    let expected = csrf_token(session);
    // Compared whole: both are hashes, and the length is fixed.
    if expected.len() == sent.len()
        && expected
            .bytes()
            .zip(sent.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    {
        Ok(())
    } else {
        Err(Box::new(errors::forbidden(
            "The form's token is not this session's, so it was not taken.",
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_read_from_among_other_cookies() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; passepartout_session=abc; b=2"),
        );
        assert_eq!(session_id(&headers), Some("abc"));
        headers.insert(header::COOKIE, HeaderValue::from_static("passepartout_session="));
        assert_eq!(session_id(&headers), None);
        assert_eq!(session_id(&HeaderMap::new()), None);
    }

    #[test]
    fn the_cookie_is_http_only_strict_and_secure_under_tls() {
        let plain = set_cookie("abc", false);
        let plain = plain.to_str().unwrap();
        assert!(plain.starts_with("passepartout_session=abc; HttpOnly; SameSite=Strict; Path=/"));
        assert!(!plain.contains("Secure"));
        assert!(set_cookie("abc", true).to_str().unwrap().ends_with("; Secure"));
    }

    #[test]
    fn the_csrf_token_is_the_sessions_own() {
        let token = csrf_token("session-a");
        assert_eq!(token.len(), 43, "32 bytes, base64url");
        assert_ne!(token, csrf_token("session-b"));
        assert!(check_token("session-a", &token).is_ok());
        assert!(check_token("session-b", &token).is_err());
        assert!(check_token("session-a", "").is_err());
    }
}
