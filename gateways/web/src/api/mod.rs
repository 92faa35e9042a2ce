//! The OpenAI-compatible API on the dashboard's listener, under `/v1`, for
//! any client that speaks OpenAI's Chat Completions (the official `openai`
//! packages among them). Each API key is a person of its own, with its own
//! conversations: its requests are messages from that person, answered by
//! the assistant's turns as on any gateway, and journaled, kept and
//! remembered by the core alike. A request's messages are its
//! conversation: the history a client resends picks the conversation it
//! continues, and anything else starts a new one (`route.rs`).
//!
//! | route | what |
//! | --- | --- |
//! | `GET /v1/models` | the one model, `passepartout` |
//! | `POST /v1/chat/completions` | a message in, the answer out (whole or streamed) |
//!
//! | concept | file |
//! | --- | --- |
//! | the bearer key | `auth.rs` |
//! | requests being answered at once, per key and in all | `in_flight.rs` |
//! | the request read, the objects written | `wire.rs` |
//! | a conversation's messages as a hash chain | `chain.rs` |
//! | which conversation a request belongs to | `route.rs` |
//! | the OpenAI error object | `error.rs` |
//! | an answer put together from what the core says | `answer.rs` |
//! | the completions route | `completions.rs` |

mod answer;
mod auth;
pub mod chain;
mod completions;
pub mod error;
pub mod in_flight;
mod route;
pub mod wire;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, DefaultBodyLimit, State};
use axum::http::header::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

pub use auth::{Caller, caller};
pub use completions::{ANSWER_LIMIT, CONVERSATION_HEADER, DECISION_LIMIT};
pub use error::ApiError;

use crate::state::AppState;

/// The largest request taken, in bytes: a client resends the whole
/// history with every request.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The API's routes, nested under `/v1`, with their own body limit.
pub fn router() -> Router<Arc<AppState>> {
    Router::new()
        .route("/models", get(models))
        .route("/chat/completions", post(completions::completions))
        .fallback(unknown)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
}

/// `GET /v1/models`.
async fn models(
    State(state): State<Arc<AppState>>,
    ConnectInfo(client): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
) -> Response {
    match auth::caller(&state, client.ip(), &headers) {
        Ok(_) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            wire::models(0).to_string(),
        )
            .into_response(),
        Err(refused) => refused.into_response(),
    }
}

/// Any other path under `/v1`.
async fn unknown() -> Response {
    ApiError::status(
        axum::http::StatusCode::NOT_FOUND,
        "unknown_url",
        "The API serves GET /v1/models and POST /v1/chat/completions.",
    )
    .into_response()
}
