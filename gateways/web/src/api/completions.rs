//! `POST /v1/chat/completions`: the request's last user message enters the
//! caller's conversation as a message from that person, and the answer is
//! what the core says in reply, whole (`chat.completion`) or as it is
//! written (`stream: true`: server-sent `chat.completion.chunk`s, then
//! `data: [DONE]`).
//!
//! The hub is followed *before* the message is handed in, so no reply can
//! come before anyone listens. Once the intake accepted the message, the
//! turn is the core's: a client that goes away (a closed stream, a timeout)
//! only stops listening, and the turn still completes and is kept in the
//! conversation's history.

use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::http::header::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt as _;
use futures_util::stream::{self, Stream};
use passepartout_gateway::{
    Ack, ConversationKey, GatewayId, Inbound, InboundBody, MessageId, Refusal, TurnEnd, unix_ms,
};

use super::answer::Answer;
use super::auth::Caller;
use super::error::ApiError;
use super::in_flight::Place;
use super::wire::{self, Made, Piece, Usage};
use crate::hub::Following;
use crate::people::Person;
use crate::router::AppState;
use crate::server::GATEWAY_ID;

/// How long a request waits for its turn to end. The turn goes on after
/// that; its answer is kept in the conversation.
pub const ANSWER_LIMIT: Duration = Duration::from_secs(15 * 60);

/// The header that picks one of the caller's conversations (as `user` does).
pub const CONVERSATION_HEADER: &str = "x-conversation";

/// `POST /v1/chat/completions`. The caller is known before the body is
/// read: a refused [`Caller`] ends the request before the body's extractor
/// runs (hence not taken as a `Result`).
pub async fn completions(
    State(state): State<Arc<AppState>>,
    caller: Caller,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let Caller { person, place } = caller;
    match answer(&state, &person, place, &headers, body).await {
        Ok(response) => response,
        Err(refused) => refused.into_response(),
    }
}

/// The answer; `place` is held until it is sent.
async fn answer(
    state: &Arc<AppState>,
    person: &Person,
    place: Place,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Result<Response, ApiError> {
    let body = body.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request_too_large",
                format!(
                    "The request is larger than the API takes ({} bytes).",
                    super::MAX_BODY_BYTES
                ),
            )
        } else {
            ApiError::invalid(
                None,
                "invalid_body",
                format!("The request body could not be read: {}", rejection.body_text()),
            )
        }
    })?;
    let asked = wire::read(&body)?;
    let named = headers
        .get(CONVERSATION_HEADER)
        .map(|value| value.to_str().map(str::to_owned))
        .transpose()
        .map_err(|_| ApiError::invalid(None, "invalid_value", "X-Conversation is not text."))?
        .or(asked.user.clone());
    let chat = person
        .chat(named.as_deref())
        .map_err(|bad| ApiError::invalid(Some("user"), "invalid_value", bad.0))?;
    let message_id = new_message_id();
    let made = Made {
        id: format!("chatcmpl-{}", message_id.as_str()),
        created: unix_ms() / 1000,
    };
    let following = state.hub.follow(chat.clone(), Some(message_id.clone()));
    let gateway = GatewayId::new(GATEWAY_ID).expect("the web gateway's id is valid");
    let inbound = Inbound {
        conversation: ConversationKey::new(gateway, chat),
        sender: person.sender(),
        message_id,
        reply_to: None,
        body: InboundBody::Text { text: asked.text },
        received_at_ms: unix_ms(),
        overheard: false,
        by_reply_only: false,
    };
    let Some(intake) = state.intake() else {
        return Err(going_away());
    };
    match intake.submit(inbound).await {
        Ok(Ack::Accepted) => {}
        Ok(Ack::Duplicate) => {
            return Err(ApiError::status(
                StatusCode::CONFLICT,
                "duplicate",
                "This message was taken before.",
            ));
        }
        Ok(Ack::Refused { reason }) => return Err(refused(reason)),
        Ok(Ack::Busy) => {
            return Err(ApiError::status(
                StatusCode::TOO_MANY_REQUESTS,
                "rate_limit_exceeded",
                "The conversation has too many messages waiting; try again shortly.",
            ));
        }
        Err(_closed) => return Err(going_away()),
    }
    let timed = Timed {
        state: state.clone(),
        taken: Instant::now(),
    };
    if asked.stream {
        let chunks = chunks(following, made, asked.include_usage, timed).map(move |chunk| {
            let _held = &place;
            chunk
        });
        Ok(Sse::new(chunks).keep_alive(KeepAlive::default()).into_response())
    } else {
        let whole = whole(following, made, timed).await;
        drop(place);
        whole
    }
}

/// Waits for the turn to end; the whole answer.
async fn whole(mut following: Following, made: Made, timed: Timed) -> Result<Response, ApiError> {
    let mut answer = Answer::new(timed.state.secrets.now());
    let waited = tokio::time::timeout(ANSWER_LIMIT, async {
        while let Some(heard) = following.next().await {
            answer.take(&heard);
            if let Some(end) = answer.ended() {
                return Some(end);
            }
        }
        None
    })
    .await;
    match waited {
        Ok(Some(end)) => {
            timed.done();
            // Redacted with the secrets as they are when it is sent: one a
            // reload added while the turn ran is kept out too.
            let text = timed.state.secrets.now().redact(&answer.text());
            let body = wire::completion(&made, &text, "stop", usage(end));
            Ok(json(body))
        }
        Ok(None) => Err(going_away()),
        Err(_) => Err(ApiError::status(
            StatusCode::GATEWAY_TIMEOUT,
            "timeout",
            "The answer is taking longer than this request waits; it will be kept in the conversation.",
        )),
    }
}

/// Where a stream is.
enum Phase {
    Start,
    Listening,
    /// The turn is over; its finish is next.
    Ending(TurnEnd),
    /// The finish was sent; the usage (when asked for) and `[DONE]` are next.
    Finished(Option<TurnEnd>),
    Done,
    Over,
}

/// The answer as chunks: the role, the text as it comes, the finish, the
/// usage when asked for, `[DONE]`.
fn chunks(
    following: Following,
    made: Made,
    include_usage: bool,
    timed: Timed,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let secrets = timed.state.secrets.now();
    let timed = Arc::new(timed);
    let start = (following, Answer::new(secrets), Phase::Start);
    stream::unfold(start, move |(mut following, mut answer, phase)| {
        let made = made.clone();
        let timed = timed.clone();
        async move {
            let data = |piece| Event::default().data(wire::chunk(&made, piece).to_string());
            match phase {
                Phase::Start => Some((Ok(data(Piece::Role)), (following, answer, Phase::Listening))),
                Phase::Listening => loop {
                    let Ok(Some(heard)) = tokio::time::timeout(ANSWER_LIMIT, following.next()).await else {
                        // Gone quiet or closing: end the answer here.
                        let finish = data(Piece::Finish("length"));
                        return Some((Ok(finish), (following, answer, Phase::Finished(None))));
                    };
                    let added = answer.take(&heard);
                    let next = match answer.ended() {
                        Some(end) => {
                            timed.done();
                            Phase::Ending(end)
                        }
                        None => Phase::Listening,
                    };
                    if !added.is_empty() {
                        return Some((Ok(data(Piece::Text(&added))), (following, answer, next)));
                    }
                    if let Phase::Ending(end) = next {
                        let finish = data(Piece::Finish("stop"));
                        return Some((Ok(finish), (following, answer, Phase::Finished(Some(end)))));
                    }
                },
                Phase::Ending(end) => {
                    let finish = data(Piece::Finish("stop"));
                    Some((Ok(finish), (following, answer, Phase::Finished(Some(end)))))
                }
                Phase::Finished(end) => match end {
                    Some(end) if include_usage => {
                        Some((Ok(data(Piece::Usage(usage(end)))), (following, answer, Phase::Done)))
                    }
                    _ => Some((Ok(Event::default().data("[DONE]")), (following, answer, Phase::Over))),
                },
                Phase::Done => Some((Ok(Event::default().data("[DONE]")), (following, answer, Phase::Over))),
                Phase::Over => None,
            }
        }
    })
}

/// When a request's message was taken, to time its answer.
struct Timed {
    state: Arc<AppState>,
    taken: Instant,
}

impl Timed {
    fn done(&self) {
        self.state.latency.record(self.taken.elapsed());
    }
}

fn usage(end: TurnEnd) -> Usage {
    Usage::new(end.tokens_in, end.tokens_out)
}

fn json(body: serde_json::Value) -> Response {
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn refused(reason: Refusal) -> ApiError {
    match reason {
        Refusal::TooLarge => ApiError::status(
            StatusCode::PAYLOAD_TOO_LARGE,
            "message_too_large",
            "The message is longer than the assistant takes.",
        ),
        Refusal::NotAllowed | Refusal::Pairing | Refusal::NotApprover => ApiError::status(
            StatusCode::FORBIDDEN,
            "not_allowed",
            "This key may not talk to the assistant.",
        ),
    }
}

fn going_away() -> ApiError {
    ApiError::status(
        StatusCode::SERVICE_UNAVAILABLE,
        "unavailable",
        "The daemon is shutting down and takes no more messages.",
    )
}

/// A message id no other request has: each `RandomState` is keyed apart
/// (from the system's randomness, then counted up), so two hashes of the
/// same value make 128 bits no request repeats.
fn new_message_id() -> MessageId {
    let (a, b) = (RandomState::new().hash_one(0u8), RandomState::new().hash_one(1u8));
    MessageId::new(format!("api-{a:016x}{b:016x}")).expect("a valid message id")
}
