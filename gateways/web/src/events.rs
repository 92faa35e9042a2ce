//! Live updates: `GET /events` is a stream of server-sent events, one
//! `status` event whenever the status document changes, or what waits for
//! approval, the standing rules or the loops' states (looked at every
//! [`EVERY`]), which the page's script answers by fetching the page again.
//! A page rendered with [`seen`] hands its stream what it showed, so that a
//! change that came between the page and its stream is news too. A page
//! showing one conversation (`?conversation=`, its path segment) is told of
//! each new turn of it as well.
//! At most [`MAX_STREAMS`](crate::streams::MAX_STREAMS) streams are open at once; one more closes the
//! oldest, so forgotten tabs cannot pile up. Replies being streamed to a
//! sent message are counted apart, at most [`MAX_REPLIES`](crate::streams::MAX_REPLIES), and never closed
//! for another: one more is refused, so no tab cuts a reply off mid-turn.
//! Every stream ends when the gateway stops.

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Form;
use axum::Router;
use axum::extract::State;
use axum::extract::rejection::FormRejection;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::stream;
use passepartout_admin::{AdminAs, AdminReply, AdminRequest, DashboardRequest};
use passepartout_gateway::ConversationKey;
use serde::Deserialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use tokio_util::sync::CancellationToken;

use crate::pages::parts::conversation_of;
use crate::session::SignedIn;
use crate::state::AppState;

/// How often a stream looks at the status document.
const EVERY: Duration = Duration::from_secs(2);

/// Forgets a stream when the response's body is dropped (the browser went).
pub struct Opened {
    streams: Arc<AppState>,
    /// The page stream's id; none for a reply.
    id: Option<u64>,
}

/// Opens a stream of another kind (the chat's) among the capped ones: the
/// token that closes it (the gateway stops, or too many opened since) and
/// the guard that forgets it once dropped.
pub fn open_other(state: &Arc<AppState>) -> (CancellationToken, Opened) {
    let (id, closed) = state.streams.open();
    (
        closed,
        Opened {
            streams: state.clone(),
            id: Some(id),
        },
    )
}

/// Opens a reply's stream, unless [`MAX_REPLIES`](crate::streams::MAX_REPLIES) are being streamed: the
/// token that closes it (the gateway stops) and the guard that gives its
/// place back once dropped.
pub fn open_reply(state: &Arc<AppState>) -> Option<(CancellationToken, Opened)> {
    let closed = state.streams.open_reply()?;
    Some((
        closed,
        Opened {
            streams: state.clone(),
            id: None,
        },
    ))
}

impl Drop for Opened {
    fn drop(&mut self) {
        match self.id {
            Some(id) => self.streams.streams.close(id),
            None => self.streams.streams.close_reply(),
        }
    }
}

/// `GET /events?seen=FINGERPRINT`: `seen` is the [`fingerprint`] of what the
/// page was rendered from, so that a change between the page and its stream
/// is not missed; without it, what the stream first sees is the baseline.
pub async fn events(
    State(state): State<Arc<AppState>>,
    _signed_in: SignedIn,
    since: Result<Form<Since>, FormRejection>,
) -> Response {
    let (seen, conversation) = match since {
        Ok(Form(since)) => (since.seen, since.conversation.as_deref().and_then(conversation_of)),
        Err(_) => (None, None),
    };
    let admin = state.admin.clone();
    stream_changes(&state, seen, EVERY, move || {
        let (admin, conversation) = (admin.clone(), conversation.clone());
        async move { snapshot(&admin, conversation.as_ref()).await }
    })
}

/// The query of `GET /events`.
#[derive(Deserialize)]
pub struct Since {
    seen: Option<String>,
    /// A conversation's path segment, as `/conversations/{key}` has it.
    conversation: Option<String>,
}

/// A page's stream: one `status` event each time what `look` returns
/// differs from the last seen (`seen` at first, else the first look is only
/// remembered), looked at every `every`; it ends when the gateway stops,
/// when too many streams opened since, or once `look` finds nothing.
pub(crate) fn stream_changes<L, F>(state: &Arc<AppState>, seen: Option<String>, every: Duration, look: L) -> Response
where
    L: Fn() -> F + Send + 'static,
    F: Future<Output = Option<Value>> + Send,
{
    let (closed, opened) = open_other(state);
    let start = (look, closed, seen, opened);
    let changes = stream::unfold(start, move |(look, closed, mut last, opened)| async move {
        loop {
            let now = fingerprint(&look().await?);
            let changed = last.as_ref().is_some_and(|last| *last != now);
            last = Some(now);
            if changed {
                let event = Event::default().event("status").data("changed");
                return Some((Ok::<_, Infallible>(event), (look, closed, last, opened)));
            }
            tokio::select! {
                () = closed.cancelled() => return None,
                () = tokio::time::sleep(every) => {}
            }
        }
    });
    Sse::new(changes).keep_alive(KeepAlive::default()).into_response()
}

/// What the pages show, as the streams compare it: the status document
/// without what changes by itself, what the Approvals and Loops pages
/// show beside it, and how far `conversation` has come when a page shows
/// one; none once the daemon no longer answers.
async fn snapshot(admin: &AdminAs, conversation: Option<&ConversationKey>) -> Option<Value> {
    let Ok(AdminReply::Status(mut now)) = admin.ask(AdminRequest::Status).await else {
        return None;
    };
    // The uptime changes every second; it is no news.
    if let Some(document) = now.as_object_mut() {
        document.remove("uptime_s");
        document.remove("backups");
        document.insert("seen_by_pages".into(), pages_state(admin).await);
        if let Some(conversation) = conversation {
            let request = DashboardRequest::Latest {
                conversation: conversation.clone(),
            };
            let latest = match admin.ask(AdminRequest::Dashboard { request }).await {
                Ok(AdminReply::Dashboard(Ok(latest))) => latest,
                _ => Value::Null,
            };
            document.insert("conversation".into(), latest);
        }
    }
    Some(now)
}

/// A short digest of `snapshot`, for a page to hand its stream.
pub(crate) fn fingerprint(snapshot: &Value) -> String {
    let digest = Sha256::digest(snapshot.to_string().as_bytes());
    URL_SAFE_NO_PAD.encode(&digest[..12])
}

/// The fingerprint of what the pages show now, taken before a page reads
/// what it shows; none once the daemon no longer answers.
pub async fn seen(admin: &AdminAs) -> Option<String> {
    seen_with(admin, None).await
}

/// Like [`seen`], for a page that shows `conversation` too.
pub async fn seen_with(admin: &AdminAs, conversation: Option<&ConversationKey>) -> Option<String> {
    Some(fingerprint(&snapshot(admin, conversation).await?))
}

/// What the Approvals and Loops pages show that the status document does
/// not: which approvals wait, which standing rules hold, where each loop
/// is. One approval decided while another arrives leaves the count alone,
/// but not this. Times that pass by themselves are left out.
async fn pages_state(admin: &AdminAs) -> Value {
    let pending = match admin.ask(AdminRequest::Approvals { all: false }).await {
        Ok(AdminReply::Approvals(Ok(listing))) => tokens(&listing["approvals"], "token"),
        _ => Value::Null,
    };
    let rules = match admin.ask(AdminRequest::Rules).await {
        Ok(AdminReply::Rules(Ok(listing))) => tokens(&listing["rules"], "id"),
        _ => Value::Null,
    };
    let loops = match admin.ask(AdminRequest::Loops).await {
        Ok(AdminReply::Loops(Ok(loops))) => loops
            .as_array()
            .into_iter()
            .flatten()
            .map(|l| json!([l["name"], l["state"], l["attempts"], l["next_wake_ms"]]))
            .collect(),
        _ => Value::Null,
    };
    json!({ "pending": pending, "rules": rules, "loops": loops })
}

/// The `key` of each item of `list`.
fn tokens(list: &Value, key: &str) -> Value {
    list.as_array()
        .into_iter()
        .flatten()
        .map(|item| item[key].clone())
        .collect()
}

/// The pages' live updates.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new().route("/events", get(events))
}
