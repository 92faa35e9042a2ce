//! Who is calling the API: `Authorization: Bearer KEY`, a key made with
//! `passepartout web keys create NAME`. No key, or one the core does not
//! know, is answered 401 before anything reaches the core's intake; a
//! client that keeps trying wrong keys has them answered 429, as one that
//! guesses sign-in links does, while a valid key always passes.

use std::net::IpAddr;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap};
use axum::http::request::Parts;

use super::error::ApiError;
use super::in_flight::{Full, IN_ALL, PER_KEY, Place};
use crate::people::Person;
use crate::rate_limit::client;
use crate::state::AppState;

/// The person a request's key authenticates, and the request's place among
/// those being answered. As an extractor placed before the body's, it
/// refuses a request before its body is read: a client without a valid key,
/// or with too many requests being answered, never makes the server hold a
/// body.
pub struct Caller {
    /// The key's person.
    pub person: Person,
    /// Held until the answer is sent.
    pub place: Place,
}

impl FromRequestParts<Arc<AppState>> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Arc<AppState>) -> Result<Self, Self::Rejection> {
        let person = caller(state, client(parts), &parts.headers)?;
        let place = state.in_flight.take(person.user().as_str()).map_err(|full| {
            let why = match full {
                Full::Key => format!(
                    "This key has {PER_KEY} requests being answered already; send this one when one of them is done."
                ),
                Full::All => format!(
                    "The assistant is answering {IN_ALL} API requests already; send this one when one of them is done."
                ),
            };
            ApiError::status(StatusCode::TOO_MANY_REQUESTS, "rate_limit_exceeded", why)
        })?;
        Ok(Self { person, place })
    }
}

/// The person `headers` authenticate, or the refusal.
pub fn caller(state: &AppState, client: IpAddr, headers: &HeaderMap) -> Result<Person, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Err(ApiError::unauthorized(
            "No API key: send `Authorization: Bearer KEY`, with a key made by `passepartout web keys create NAME`.",
        ));
    };
    let key = value
        .to_str()
        .ok()
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim)
        .filter(|key| !key.is_empty());
    let Some(key) = key else {
        return Err(ApiError::unauthorized("The Authorization header is not `Bearer KEY`."));
    };
    match state.keys.check(key) {
        Ok(Some(key)) => Ok(Person::Key(key)),
        Ok(None) => {
            if state.guesses.failed(client) {
                tracing::warn!(%client, "API request refused: too many keys that were not valid");
                return Err(ApiError::status(
                    StatusCode::TOO_MANY_REQUESTS,
                    "rate_limit_exceeded",
                    "Too many requests with keys that are not valid; wait a minute.",
                ));
            }
            tracing::info!(%client, "an API key that is not valid was tried");
            Err(ApiError::unauthorized(
                "The API key is not valid: it was revoked, or never made here (see `passepartout web keys`).",
            ))
        }
        Err(unavailable) => Err(ApiError::status(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!("The keys cannot be read now: {unavailable}"),
        )),
    }
}
