//! A chat's routes. `GET /chat/{id}` shows one of the owner's chats (see
//! `chat_list.rs`) from the history the core keeps. `POST /chat/{id}` (a
//! multipart form: the CSRF token, the message's id, its text, maybe a
//! file) hands the message to the intake as a message from the owner in
//! that chat's conversation, like any gateway's, and then either
//!
//! - streams what the core says in reply as server-sent events, when the
//!   request accepts `text/event-stream` (the page's script): `draft` (the
//!   reply so far), `reply`, `approval`, `file`, `stopped`, then `end`; or
//! - waits until the turn ends or asks for an approval (at most
//!   [`WAIT_LIMIT`]) and sends the browser back to the page, which shows it
//!   (scripting off).
//!
//! The hub is followed *before* the message is handed in, so no reply is
//! missed. The message's id comes with the form, so a form sent twice (a
//! reload, a double click) enters once. A file is held by the gateway until
//! the core fetches it into the workspace's `inbox/`. A chat id that is not
//! one of the owner's chats is answered 404 before anything is read.

use std::collections::hash_map::RandomState;
use std::convert::Infallible;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::extract::multipart::{Multipart, MultipartError, MultipartRejection};
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::http::header::{self, HeaderMap};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::StreamExt as _;
use futures_util::stream::{self, Stream};
use passepartout_admin::{AdminReply, AdminRequest, DashboardRequest};
use passepartout_gateway::{
    Ack, Attachment, ConversationKey, FileRef, GatewayId, Inbound, InboundBody, MediaKind, MessageId, Refusal, Sender,
    unix_ms,
};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::chat_list;
use crate::chats::EARLIER_CHAT_ID;
use crate::downloads;
use crate::hub::{Following, Said};
use crate::pages::chat::{MAX_FILE_BYTES, Shown, body};
use crate::pages::errors;
use crate::pages::layout::{Viewer, page};
use crate::pages::parts::ask;
use crate::people::Person;
use crate::posted::see_other;
use crate::session::{FormSession, SignedIn, check_token};
use crate::state::AppState;
use crate::surface::GATEWAY_ID;
use crate::uploads::Upload;

/// How long a form sent with scripting off waits for the reply.
pub const WAIT_LIMIT: Duration = Duration::from_secs(120);

/// How long a stream waits for the core's next word before it ends; the
/// turn goes on, and the page shows it once reloaded.
const STREAM_LIMIT: Duration = Duration::from_secs(15 * 60);

/// The largest request `POST /chat` takes: a file and the form around it.
pub const MAX_POST_BYTES: usize = MAX_FILE_BYTES + 64 * 1024;

/// The conversation of the owner's chat `id` (checked to be one): the
/// owner's first conversation for [`EARLIER_CHAT_ID`].
pub fn conversation(id: &str) -> ConversationKey {
    let name = (id != EARLIER_CHAT_ID).then_some(id);
    let chat = Person::Owner
        .chat(name)
        .expect("a chat id is a valid conversation name");
    ConversationKey::new(GatewayId::new(GATEWAY_ID).expect("the web gateway's id is valid"), chat)
}

/// `GET /chat/{id}`.
pub async fn show(State(state): State<Arc<AppState>>, signed_in: SignedIn, Path(id): Path<String>) -> Response {
    let chat = match chat_list::find(&state, &id) {
        Ok(chat) => chat,
        Err(refused) => return *refused,
    };
    let chats = match chat_list::all(&state) {
        Ok(chats) => chats,
        Err(refused) => return *refused,
    };
    let key = conversation(&chat.id);
    let history = match ask(
        &state.admin,
        DashboardRequest::History {
            conversation: key.clone(),
        },
    )
    .await
    {
        Ok(history) => history,
        Err(response) => return *response,
    };
    let listing = match state.admin.ask(AdminRequest::Approvals { all: false }).await {
        Ok(AdminReply::Approvals(Ok(listing))) => listing,
        _ => json!({}),
    };
    let here = key.to_string();
    let waiting: Vec<&Value> = listing["approvals"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| a["conversation"] == here.as_str() && a["status"] == "pending")
        .collect();
    let files: Vec<_> = state
        .downloads
        .list()
        .into_iter()
        .filter(|file| file.chat == key.chat.as_str())
        .collect();
    let shown = Shown {
        chat: &chat,
        chats: &chats,
        history: &history,
        waiting: &waiting,
        files: &files,
    };
    page(
        StatusCode::OK,
        "Chat",
        "/chat",
        Some(Viewer { csrf: &signed_in.csrf }),
        &body(&shown, &signed_in.csrf, &nonce()),
    )
}

/// `GET /chat/files/{key}`: a file the assistant sent, as an attachment.
pub async fn download(State(state): State<Arc<AppState>>, _signed_in: SignedIn, Path(key): Path<String>) -> Response {
    let Some(file) = state.downloads.get(&key) else {
        return errors::not_found();
    };
    let disposition = format!("attachment; filename=\"{}\"", downloads::safe_name(&file.name));
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
            (header::CACHE_CONTROL, "private, no-store".to_owned()),
        ],
        file.bytes.clone(),
    )
        .into_response()
}

/// What the form brought.
#[derive(Default)]
struct Posted {
    csrf: String,
    id: String,
    text: String,
    file: Option<(Option<String>, Upload)>,
}

/// `POST /chat/{id}`.
pub async fn send(
    State(state): State<Arc<AppState>>,
    FormSession { session }: FormSession,
    Path(id): Path<String>,
    headers: HeaderMap,
    multipart: Result<Multipart, MultipartRejection>,
) -> Response {
    let chat = match chat_list::find(&state, &id) {
        Ok(chat) => chat,
        Err(refused) => return *refused,
    };
    let back = format!("/chat/{}#newest", chat.id);
    let Ok(mut multipart) = multipart else {
        return errors::bad_request(
            StatusCode::BAD_REQUEST,
            "The message could not be read: the chat form is sent as multipart/form-data.",
        );
    };
    let posted = match read(&mut multipart).await {
        Ok(posted) => posted,
        Err(refused) => return refused,
    };
    if let Err(refused) = check_token(&session, &posted.csrf) {
        return *refused;
    }
    // A form sends its lines ended CRLF; the history keeps them as written.
    let text = posted.text.trim().replace("\r\n", "\n");
    if text.is_empty() && posted.file.is_none() {
        return errors::bad_request(StatusCode::BAD_REQUEST, "Write a message or choose a file to send.");
    }
    // A reply's stream is taken before the message goes in: past the cap
    // the message is refused whole, and no running reply is cut off.
    let reply = match open_reply(&state, &headers) {
        Ok(reply) => reply,
        Err(refused) => return *refused,
    };
    let message_id = message_id(&posted.id);
    let file_name = posted.file.as_ref().and_then(|(name, _)| name.clone());
    let body = message_body(&state, &message_id, &text, posted.file);
    let key = conversation(&chat.id);
    let following = state.hub.follow(key.chat.clone(), Some(message_id.clone()));
    let inbound = Inbound {
        conversation: key,
        sender: Sender::new(Person::Owner.user()),
        message_id,
        reply_to: None,
        body,
        received_at_ms: unix_ms(),
        overheard: false,
        by_reply_only: false,
        client: None,
    };
    let Some(intake) = state.intake() else {
        return errors::unavailable("the daemon is shutting down and takes no more messages");
    };
    match intake.submit(inbound).await {
        Ok(Ack::Accepted) => {
            // Named from the message as redacted: a secret pasted into a
            // chat's first line is not shown on every page.
            if !text.starts_with('/')
                && let Err(error) = state.chats.sent(
                    &chat.id,
                    &chat_list::name_from(&state.secrets.now().redact(&text), file_name.as_deref()),
                )
            {
                tracing::warn!(%error, "the chat's use could not be noted");
            }
        }
        // Sent before: what came of it is on the page.
        Ok(Ack::Duplicate) => return see_other(&back, &[]),
        Ok(Ack::Refused { reason }) => return refused(reason),
        Ok(Ack::Busy) => {
            return errors::bad_request(
                StatusCode::TOO_MANY_REQUESTS,
                "The conversation has too many messages waiting; send again shortly.",
            );
        }
        Err(_closed) => return errors::unavailable("the daemon is shutting down and takes no more messages"),
    }
    if let Some((closed, opened)) = reply {
        let stream = said(following, state.clone(), Until::TurnEnds, closed).map(move |event| {
            let _held = &opened;
            event
        });
        Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
    } else {
        wait(following).await;
        see_other(&back, &[])
    }
}

/// The stream a reply is written to, when the request `headers` accept
/// one; refused 429 past the dashboard's cap of them.
fn open_reply(
    state: &Arc<AppState>,
    headers: &HeaderMap,
) -> Result<Option<(CancellationToken, crate::events::Opened)>, Box<Response>> {
    let streams = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|accept| accept.contains("text/event-stream"));
    if !streams {
        return Ok(None);
    }
    match crate::events::open_reply(state) {
        Some(reply) => Ok(Some(reply)),
        None => Err(Box::new(errors::bad_request(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "{} replies are being written to this dashboard already; send again once one is done.",
                crate::streams::MAX_REPLIES
            ),
        ))),
    }
}

/// The message `text`, with the `file` that came with it as a document the
/// gateway holds until the core fetches it (`text` its caption).
fn message_body(
    state: &AppState,
    message_id: &MessageId,
    text: &str,
    file: Option<(Option<String>, Upload)>,
) -> InboundBody {
    match file {
        None => InboundBody::Text { text: text.to_owned() },
        Some((name, upload)) => {
            let file = FileRef(format!("upload-{}", message_id.as_str()));
            let attachment = Attachment {
                kind: MediaKind::Document,
                file: file.clone(),
                mime: upload.mime.clone(),
                size: Some(upload.bytes.len() as u64),
                name,
                duration_s: None,
            };
            state.uploads.hold(file, upload);
            InboundBody::Media {
                attachments: vec![attachment],
                caption: Some(text.to_owned()).filter(|t| !t.is_empty()),
            }
        }
    }
}

/// Reads the form's fields; a body past the limit is answered 413.
async fn read(multipart: &mut Multipart) -> Result<Posted, Response> {
    let mut posted = Posted::default();
    while let Some(field) = multipart.next_field().await.map_err(unreadable)? {
        match field.name() {
            Some("csrf") => posted.csrf = field.text().await.map_err(unreadable)?,
            Some("id") => posted.id = field.text().await.map_err(unreadable)?,
            Some("text") => posted.text = field.text().await.map_err(unreadable)?,
            Some("file") => {
                let name = field.file_name().map(str::to_owned).filter(|n| !n.is_empty());
                let mime = field.content_type().map(str::to_owned);
                let bytes = field.bytes().await.map_err(unreadable)?;
                if bytes.len() > MAX_FILE_BYTES {
                    return Err(too_large());
                }
                // A form with no file chosen still sends the field, empty.
                if name.is_some() || !bytes.is_empty() {
                    posted.file = Some((
                        name,
                        Upload {
                            bytes: bytes.to_vec(),
                            mime,
                        },
                    ));
                }
            }
            _ => {}
        }
    }
    Ok(posted)
}

fn unreadable(error: MultipartError) -> Response {
    if error.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large();
    }
    errors::bad_request(
        StatusCode::BAD_REQUEST,
        &format!("The message could not be read: {}", error.body_text()),
    )
}

fn too_large() -> Response {
    errors::bad_request(
        StatusCode::PAYLOAD_TOO_LARGE,
        &format!(
            "The file is too large: the chat takes files up to {} MB.",
            MAX_FILE_BYTES / (1024 * 1024)
        ),
    )
}

fn refused(reason: Refusal) -> Response {
    match reason {
        Refusal::TooLarge => errors::bad_request(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The message is longer than the assistant takes.",
        ),
        Refusal::NotAllowed | Refusal::Pairing | Refusal::NotApprover => {
            errors::forbidden("The assistant takes no messages from here.")
        }
    }
}

/// Waits until the turn ends or asks for an approval, at most [`WAIT_LIMIT`].
async fn wait(mut following: Following) {
    let _ = tokio::time::timeout(WAIT_LIMIT, async {
        while let Some(heard) = following.next().await {
            if heard.turn_end.is_some() || matches!(heard.said, Said::Approval { .. }) {
                return;
            }
        }
    })
    .await;
}

/// `GET /chat/{id}/stream`: everything said in the chat from now on, the
/// same events as a sent message's stream, each turn closed by `end`; how
/// an open page learns of a turn it did not start (the rest of one an
/// approval let go on, a message from another tab).
pub async fn stream(State(state): State<Arc<AppState>>, _signed_in: SignedIn, Path(id): Path<String>) -> Response {
    let chat = match chat_list::find(&state, &id) {
        Ok(chat) => chat,
        Err(refused) => return *refused,
    };
    let following = state.hub.follow(conversation(&chat.id).chat, None);
    // Counted with the dashboard's other streams, so forgotten tabs cannot
    // pile up.
    let (closed, opened) = crate::events::open_other(&state);
    let stream = said(following, state.clone(), Until::Closed, closed).map(move |event| {
        let _held = &opened;
        event
    });
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}

/// When a stream of what is said ends.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Until {
    /// With the turn: a sent message's reply.
    TurnEnds,
    /// When the browser goes or the gateway stops.
    Closed,
}

/// What the core says, as events, secrets kept out; `end` after each turn.
/// Ends when `stopping` is cancelled (the gateway stops, or too many
/// streams were opened since).
fn said(
    following: Following,
    state: Arc<AppState>,
    until: Until,
    stopping: CancellationToken,
) -> impl Stream<Item = Result<Event, Infallible>> {
    let start = (following, String::new(), false);
    stream::unfold(start, move |(mut following, mut draft, over)| {
        let state = state.clone();
        let stopping = stopping.clone();
        async move {
            if over {
                return None;
            }
            let next = tokio::select! {
                () = stopping.cancelled() => return None,
                next = tokio::time::timeout(STREAM_LIMIT, following.next()) => next,
            };
            let Ok(Some(heard)) = next else {
                if until == Until::Closed {
                    return None;
                }
                let end = Event::default().event("end").data("{}");
                return Some((stream::iter(vec![Ok(end)]), (following, draft, true)));
            };
            let secrets = state.secrets.now();
            let redact = |text: &str| secrets.redact(text);
            let (name, data) = match &heard.said {
                Said::Draft { text, restart } => {
                    if *restart {
                        draft.clear();
                    }
                    draft.push_str(text);
                    ("draft", json!({ "text": secrets.redact_growing(&draft) }))
                }
                Said::Reply { text, .. } => {
                    draft.clear();
                    ("reply", json!({ "text": redact(text) }))
                }
                Said::Approval { token, text } => {
                    ("approval", json!({ "token": token.as_str(), "text": redact(text) }))
                }
                Said::File { name, caption, outbound } => (
                    "file",
                    json!({ "name": redact(name), "caption": caption.as_deref().map(redact), "href": format!("/chat/files/{}", downloads::key(outbound)) }),
                ),
                Said::Stopped { partial } => ("stopped", json!({ "partial": redact(partial) })),
                Said::Nothing => ("nothing", json!({})),
            };
            let ended = heard.turn_end.is_some();
            if ended {
                draft.clear();
            }
            let event = Event::default().event(name).data(data.to_string());
            // The turn's last message comes with the end: one more event.
            let mut next = vec![Ok(event)];
            if ended {
                next.push(Ok(Event::default().event("end").data("{}")));
            }
            let over = ended && until == Until::TurnEnds;
            let next = stream::iter(next);
            Some((next, (following, draft, over)))
        }
    })
    .flatten()
}

/// The message's id: the form's, when it is one a form makes, so that a
/// form sent twice enters once; else a fresh one.
fn message_id(sent: &str) -> MessageId {
    let made_here = (16..=64).contains(&sent.len()) && sent.bytes().all(|b| b.is_ascii_hexdigit());
    let id = if made_here { sent.to_owned() } else { nonce() };
    MessageId::new(format!("chat-{id}")).expect("a valid message id")
}

/// 128 bits no page repeats: each `RandomState` is keyed apart (from the
/// system's randomness, then counted up).
pub fn nonce() -> String {
    let (a, b) = (RandomState::new().hash_one(0u8), RandomState::new().hash_one(1u8));
    format!("{a:016x}{b:016x}")
}

/// The chat page, its reply stream and the files sent in it.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(
            "/chat/{id}",
            get(show).post(send).layer(DefaultBodyLimit::max(MAX_POST_BYTES)),
        )
        .route("/chat/{id}/stream", get(stream))
        .route("/chat/files/{key}", get(download))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forms_id_is_kept_and_anything_else_replaced() {
        let id = nonce();
        assert_eq!(message_id(&id).as_str(), format!("chat-{id}"));
        let made = message_id("../../etc");
        assert!(made.as_str().starts_with("chat-") && made.as_str().len() == 5 + 32);
        assert_ne!(nonce(), nonce());
    }
}
