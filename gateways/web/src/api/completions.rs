//! `POST /v1/chat/completions`: a request's messages are its conversation.
//! Its last message, a user's, enters the conversation the ones before it
//! belong to ([`route`](super::route)) as a message from the key's person,
//! and the answer is what the core says in reply, whole (`chat.completion`)
//! or as it is written (`stream: true`: server-sent
//! `chat.completion.chunk`s, then `data: [DONE]`). Once answered, the
//! conversation's tip moves on to include the answer, so the client's next
//! request, which resends it, continues it.
//!
//! The hub is followed *before* the message is handed in, so no reply can
//! come before anyone listens. Once the intake accepted the message, the
//! turn is the core's: a client that goes away (a closed stream, a timeout)
//! only stops listening, and the turn still completes and is kept in the
//! conversation's history.
//!
//! When the turn asks for an approval that the key may not give, a
//! streamed answer waits for the owner's decision up to [`DECISION_LIMIT`]
//! (keep-alive comments go out meanwhile), then streams the outcome; a
//! whole answer ends with the notice. Either way, an outcome that comes
//! later is kept for the conversation's next request, whose answer begins
//! with it.

use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::StatusCode;
use axum::http::header::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use passepartout_gateway::{
    Ack, ChatId, ClientContext, ConversationKey, EarlierRole, GatewayId, Inbound, InboundBody, MessageId, Refusal,
    TurnEnd, unix_ms,
};

use super::answer::Answer;
use super::auth::Caller;
use super::chain::Chain;
use super::error::ApiError;
use super::in_flight::Place;
use super::route::{self, Route};
use super::wire::{self, Made, Piece, Usage};
use crate::hub::Following;
use crate::keys::Key;
use crate::people::Person;
use crate::state::AppState;
use crate::surface::GATEWAY_ID;

/// How long a request waits for its turn to end. The turn goes on after
/// that; its answer is kept in the conversation.
pub const ANSWER_LIMIT: Duration = Duration::from_secs(15 * 60);

/// How long a streamed answer waits for the owner's decision on an
/// approval its turn asked for, before it ends saying the approval waits.
pub const DECISION_LIMIT: Duration = Duration::from_secs(10 * 60);

/// The header that picks one of the caller's conversations by name.
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
    let body = body.map_err(unreadable)?;
    let asked = wire::read(&body)?;
    let named = headers
        .get(CONVERSATION_HEADER)
        .map(|value| value.to_str().map(str::to_owned))
        .transpose()
        .map_err(|_| ApiError::invalid(None, "invalid_value", "X-Conversation is not text."))?;
    let Person::Key(key) = person else {
        return Err(ApiError::unauthorized("The API answers API keys only."));
    };
    let route = route::route(state.threads.as_ref(), person, key, named.as_deref(), &asked)?;
    let Route {
        chat,
        chain,
        seed,
        continued,
    } = route;
    let message_id = new_message_id();
    let made = Made {
        id: format!("chatcmpl-{}", message_id.as_str()),
        created: unix_ms() / 1000,
    };
    let following = state.hub.follow(chat.clone(), Some(message_id.clone()));
    let mut answer = Answer::new(state.secrets.now());
    if !key.approver {
        answer = answer.for_a_key_that_may_not_approve();
    }
    let client = ClientContext {
        instructions: asked.instructions.clone(),
        earlier: if seed { asked.earlier.clone() } else { Vec::new() },
    };
    let gateway = GatewayId::new(GATEWAY_ID).expect("the web gateway's id is valid");
    let inbound = Inbound {
        conversation: ConversationKey::new(gateway, chat.clone()),
        sender: person.sender(),
        message_id: message_id.clone(),
        reply_to: None,
        body: InboundBody::Text {
            text: asked.text.clone(),
        },
        received_at_ms: unix_ms(),
        overheard: false,
        by_reply_only: false,
        client: (!client.is_empty()).then_some(client),
    };
    hand_in(state, inbound).await?;
    // An outcome nobody heard since this conversation's last answer opens
    // this one (taken once the message is, so a refused request leaves it).
    let missed: String = match continued {
        true => state
            .hub
            .take_missed(&chat)
            .iter()
            .map(|heard| answer.take_missed(heard))
            .collect(),
        false => String::new(),
    };
    let replying = Replying {
        state: state.clone(),
        taken: Instant::now(),
        key: key.clone(),
        chat,
        message_id,
        chain: chain.with(EarlierRole::User, &asked.text),
        continued,
    };
    if asked.stream {
        let (events, heard) = mpsc::channel(16);
        let streaming = Streaming {
            events,
            made,
            include_usage: asked.include_usage,
        };
        tokio::spawn(async move {
            streaming.run(following, answer, missed, replying).await;
            drop(place);
        });
        let chunks = stream::unfold(heard, |mut heard| async move {
            let event = heard.recv().await?;
            Some((Ok::<_, Infallible>(event), heard))
        });
        Ok(Sse::new(chunks).keep_alive(KeepAlive::default()).into_response())
    } else {
        let whole = whole(following, answer, made, replying).await;
        drop(place);
        whole
    }
}

/// A body that could not be read, refused: 413 past the API's limit.
fn unreadable(rejection: BytesRejection) -> ApiError {
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
}

/// Hands `inbound` to the intake; the refusal when it is not taken.
async fn hand_in(state: &AppState, inbound: Inbound) -> Result<(), ApiError> {
    let Some(intake) = state.intake() else {
        return Err(going_away());
    };
    match intake.submit(inbound).await {
        Ok(Ack::Accepted) => Ok(()),
        Ok(Ack::Duplicate) => Err(ApiError::status(
            StatusCode::CONFLICT,
            "duplicate",
            "This message was taken before.",
        )),
        Ok(Ack::Refused { reason }) => Err(refused(reason)),
        Ok(Ack::Busy) => Err(ApiError::status(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limit_exceeded",
            "The conversation has too many messages waiting; try again shortly.",
        )),
        Err(_closed) => Err(going_away()),
    }
}

/// Waits for the turn to end; the whole answer.
async fn whole(
    mut following: Following,
    mut answer: Answer,
    made: Made,
    replying: Replying,
) -> Result<Response, ApiError> {
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
            replying.done();
            if answer.waits_for_a_decision() {
                if !replying.key.approver {
                    answer.note(LATER);
                }
                replying.keep_missed(following);
            }
            // Redacted with the secrets as they are when it is sent: one a
            // reload added while the turn ran is kept out too.
            let text = match replying.late() {
                Some(late) => format!("{late}\n\n{}", answer.text()),
                None => answer.text(),
            };
            let text = replying.state.secrets.now().redact(&text);
            replying.answered(&text);
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

/// What a whole answer that ends while an approval waits says last.
const LATER: &str = "(The approval waits. Send your next message in this conversation when it is decided: \
                     its answer begins with the outcome.)";

/// The chunks of a streamed answer, sent as they come.
struct Streaming {
    events: mpsc::Sender<Event>,
    made: Made,
    include_usage: bool,
}

impl Streaming {
    /// Sends `piece`; false once the client is gone.
    async fn send(&self, piece: Piece<'_>) -> bool {
        let data = wire::chunk(&self.made, piece).to_string();
        self.events.send(Event::default().data(data)).await.is_ok()
    }

    /// The role, what was missed, the text as it comes (and, after an
    /// approval the key may not give, the outcome once decided), the
    /// finish, the usage when asked for, `[DONE]`.
    async fn run(self, mut following: Following, mut answer: Answer, missed: String, replying: Replying) {
        if !self.send(Piece::Role).await {
            return;
        }
        if !missed.is_empty() && !self.send(Piece::Text(&missed)).await {
            return;
        }
        let mut until = Instant::now() + ANSWER_LIMIT;
        let mut deciding = false;
        let mut finish = "stop";
        loop {
            let next = tokio::select! {
                next = tokio::time::timeout_at(until, following.next()) => Some(next),
                // Gone while nothing was said (waiting for a decision, say).
                () = self.events.closed() => None,
            };
            let Some(next) = next else {
                if deciding {
                    replying.keep_missed(following);
                }
                return;
            };
            let Ok(Some(heard)) = next else {
                if deciding {
                    let note = answer.note(&format!(
                        "(No decision after {} minutes. The approval still waits on the dashboard's Approvals \
                         page; send your next message in this conversation when it is decided: its answer begins \
                         with the outcome.)",
                        DECISION_LIMIT.as_secs() / 60
                    ));
                    if !self.send(Piece::Text(&note)).await {
                        return;
                    }
                    replying.keep_missed(following);
                    replying.answered(&answer.text());
                } else {
                    // Gone quiet or closing: end the answer here.
                    finish = "length";
                }
                break;
            };
            if deciding {
                // Decided: the outcome's turn runs now.
                until = Instant::now() + ANSWER_LIMIT;
            }
            let added = answer.take(&heard);
            if !added.is_empty() && !self.send(Piece::Text(&added)).await {
                return;
            }
            if answer.ended().is_none() {
                continue;
            }
            if !deciding {
                replying.done();
            }
            if answer.waits_for_a_decision() && !replying.key.approver {
                if !deciding {
                    let note = answer.note(&format!(
                        "(Waiting for the owner's decision, up to {} minutes.)",
                        DECISION_LIMIT.as_secs() / 60
                    ));
                    if !self.send(Piece::Text(&note)).await {
                        return;
                    }
                    deciding = true;
                    until = Instant::now() + DECISION_LIMIT;
                }
                answer.go_on();
                continue;
            }
            if answer.waits_for_a_decision() {
                replying.keep_missed(following);
            }
            if let Some(late) = replying.late() {
                let late = answer.note(&late);
                if !self.send(Piece::Text(&late)).await {
                    return;
                }
            }
            replying.answered(&answer.text());
            break;
        }
        if !self.send(Piece::Finish(finish)).await {
            return;
        }
        if let Some(end) = answer.ended().filter(|_| self.include_usage)
            && !self.send(Piece::Usage(usage(end))).await
        {
            return;
        }
        let _ = self.events.send(Event::default().data("[DONE]")).await;
    }
}

/// A request whose message was taken: what its answer moves on.
struct Replying {
    state: Arc<AppState>,
    /// When its message was taken, to time its answer.
    taken: Instant,
    key: Key,
    chat: ChatId,
    message_id: MessageId,
    /// The conversation's messages up to the request's own.
    chain: Chain,
    /// It went on with a conversation the daemon has.
    continued: bool,
}

impl Replying {
    /// The turn ended: its time is counted.
    fn done(&self) {
        self.state.latency.record(self.taken.elapsed());
    }

    /// The answer `text` was sent whole: the conversation stands at it now,
    /// and a request that resends it continues it.
    fn answered(&self, text: &str) {
        let tip = self.chain.clone().with(EarlierRole::Assistant, text).tip();
        if let Err(error) = self.state.threads.advance(&self.key.id, &self.chat, &tip) {
            tracing::warn!(conversation = %self.chat, %error, "where an API conversation stands was not kept");
        }
    }

    /// An outcome nobody heard that came while the request was answered
    /// (said in reply to the conversation's earlier message), as text.
    fn late(&self) -> Option<String> {
        if !self.continued {
            return None;
        }
        let mut late = Answer::new(self.state.secrets.now());
        let text: String = self
            .state
            .hub
            .take_missed(&self.chat)
            .iter()
            .map(|heard| late.take_missed(heard))
            .collect();
        (!text.is_empty()).then_some(text)
    }

    /// Keeps what is said later in reply to the request, and what
    /// `following` has not read, for the conversation's next request.
    fn keep_missed(&self, mut following: Following) {
        let unread = following.unread();
        self.state
            .hub
            .keep_missed(self.chat.clone(), self.message_id.clone(), unread);
        drop(following);
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
