//! The owner's chats: `GET /chat` opens the one used last (a fresh one
//! when there is none), `POST /chat/new` starts another, `POST
//! /chat/{id}/rename` names one, and deleting one is asked twice — `GET
//! /chat/{id}/delete` is the question, a page of its own so that it works
//! with scripting off, and `POST /chat/{id}/delete` the answer, which sends
//! `/forget` into the chat's conversation (the core forgets its history in
//! the conversation's order, after a turn still running) and then drops the
//! chat from the list. The core keeps the list ([`crate::chats::Chats`]).
//! Every form passes the checks of `posted.rs`; an id that is not one of
//! the owner's chats is answered 404.

use std::sync::Arc;

use axum::Form;
use axum::Router;
use axum::extract::rejection::FormRejection;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use axum::routing::{get, post};
use passepartout_gateway::{Ack, Inbound, InboundBody, MessageId, Sender, unix_ms};
use serde::Deserialize;

use crate::chat::{conversation, nonce};
use crate::chats::WebChat;
use crate::escape::Escaped;
use crate::pages::errors;
use crate::pages::layout::{Viewer, page};
use crate::people::Person;
use crate::posted::{TokenOnly, WithToken, accept, see_other};
use crate::session::{FormSession, SignedIn};
use crate::state::AppState;

/// The longest name a chat may be given, in characters.
pub const MAX_NAME_CHARS: usize = 80;

/// How much of a first message names its chat, in characters.
const NAMED_FROM_CHARS: usize = 48;

/// The chat `id`, if it is one of the owner's; else the page saying not.
pub fn find(state: &AppState, id: &str) -> Result<WebChat, Box<Response>> {
    let well_formed = (8..=32).contains(&id.len()) && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    let found = match well_formed {
        true => state
            .chats
            .get(id)
            .map_err(|error| Box::new(errors::unavailable(&error.message)))?,
        false => None,
    };
    found.ok_or_else(|| Box::new(no_such_chat()))
}

/// Every chat, the most recently used first.
pub fn all(state: &AppState) -> Result<Vec<WebChat>, Box<Response>> {
    state
        .chats
        .list()
        .map_err(|error| Box::new(errors::unavailable(&error.message)))
}

fn no_such_chat() -> Response {
    page(
        StatusCode::NOT_FOUND,
        "No such chat",
        "",
        None,
        r#"<p>There is no chat at this address: it was deleted, or it never was one of yours. <a href="/chat">Your chats</a></p>"#,
    )
}

/// What names a chat from its first message: its first line, cut short;
/// the file's name when it says nothing.
pub fn name_from(text: &str, file: Option<&str>) -> String {
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .or(file)
        .unwrap_or("A file");
    let line: String = line.chars().filter(|c| !c.is_control()).collect();
    match line.char_indices().nth(NAMED_FROM_CHARS) {
        Some((cut, _)) => format!("{}…", line[..cut].trim_end()),
        None => line,
    }
}

/// A chat's name as shown: its own, or what says it has none yet.
pub fn shown_name(chat: &WebChat) -> &str {
    if chat.name.is_empty() { "New chat" } else { &chat.name }
}

/// `GET /chat`: the chat used last, or a fresh one.
pub async fn newest(State(state): State<Arc<AppState>>, _signed_in: SignedIn) -> Response {
    let newest = match all(&state) {
        Ok(chats) => chats.into_iter().next(),
        Err(refused) => return *refused,
    };
    let chat = match newest {
        Some(chat) => chat,
        None => match state.chats.open() {
            Ok(chat) => chat,
            Err(error) => return errors::unavailable(&error.message),
        },
    };
    see_other(&format!("/chat/{}", chat.id), &[])
}

/// `POST /chat/new`: a fresh chat (the newest, when nothing was said in
/// it yet).
pub async fn new_chat(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    form: Result<Form<TokenOnly>, FormRejection>,
) -> Response {
    if let Err(refused) = accept(sender, form) {
        return *refused;
    }
    match state.chats.open() {
        Ok(chat) => see_other(&format!("/chat/{}", chat.id), &[]),
        Err(error) => errors::unavailable(&error.message),
    }
}

/// The rename form.
#[derive(Deserialize)]
pub struct Renamed {
    csrf: String,
    name: String,
}

impl WithToken for Renamed {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// `POST /chat/{id}/rename`.
pub async fn rename(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    Path(id): Path<String>,
    form: Result<Form<Renamed>, FormRejection>,
) -> Response {
    let renamed = match accept(sender, form) {
        Ok(renamed) => renamed,
        Err(refused) => return *refused,
    };
    let chat = match find(&state, &id) {
        Ok(chat) => chat,
        Err(refused) => return *refused,
    };
    let name = renamed.name.trim();
    if let Err(why) = check_name(name) {
        return errors::bad_request(StatusCode::BAD_REQUEST, &why);
    }
    match state.chats.rename(&chat.id, name) {
        Ok(true) => see_other(&format!("/chat/{}", chat.id), &[]),
        Ok(false) => no_such_chat(),
        Err(error) => errors::unavailable(&error.message),
    }
}

/// Whether `name` may name a chat; why not.
fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("A chat's name cannot be empty.".into());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("A chat's name is at most {MAX_NAME_CHARS} characters."));
    }
    if name.chars().any(char::is_control) {
        return Err("A chat's name is one line of text, without control characters.".into());
    }
    Ok(())
}

/// `GET /chat/{id}/delete`: the question, asked before anything goes.
pub async fn confirm_delete(
    State(state): State<Arc<AppState>>,
    signed_in: SignedIn,
    Path(id): Path<String>,
) -> Response {
    let chat = match find(&state, &id) {
        Ok(chat) => chat,
        Err(refused) => return *refused,
    };
    let body = format!(
        r#"<section class="chat-delete"><p>Delete the chat <strong>{name}</strong>? Its messages are forgotten for good: the assistant no longer has them, and they are gone from Conversations. What it remembered about you stays.</p>
<form method="post" action="/chat/{id}/delete" class="actions"><input type="hidden" name="csrf" value="{csrf}"><button type="submit" class="deny" id="delete-confirmed">Delete it</button> <a href="/chat/{id}">Keep it</a></form></section>"#,
        name = Escaped(shown_name(&chat)),
        id = Escaped(&chat.id),
        csrf = Escaped(&signed_in.csrf),
    );
    page(
        StatusCode::OK,
        "Delete this chat?",
        "/chat",
        Some(Viewer { csrf: &signed_in.csrf }),
        &body,
    )
}

/// `POST /chat/{id}/delete`: the chat's history forgotten, then the chat.
pub async fn delete(
    State(state): State<Arc<AppState>>,
    sender: FormSession,
    Path(id): Path<String>,
    form: Result<Form<TokenOnly>, FormRejection>,
) -> Response {
    if let Err(refused) = accept(sender, form) {
        return *refused;
    }
    let chat = match find(&state, &id) {
        Ok(chat) => chat,
        Err(refused) => return *refused,
    };
    let Some(intake) = state.intake() else {
        return errors::unavailable("the daemon is shutting down and takes no more messages");
    };
    let forget = Inbound {
        conversation: conversation(&chat.id),
        sender: Sender::new(Person::Owner.user()),
        message_id: MessageId::new(format!("forget-{}", nonce())).expect("a valid message id"),
        reply_to: None,
        body: InboundBody::Text { text: "/forget".into() },
        received_at_ms: unix_ms(),
        overheard: false,
        by_reply_only: false,
        client: None,
    };
    match intake.submit(forget).await {
        Ok(Ack::Accepted | Ack::Duplicate) => {}
        Ok(Ack::Busy) => {
            return errors::bad_request(
                StatusCode::TOO_MANY_REQUESTS,
                "The chat has too many messages waiting; delete it again shortly.",
            );
        }
        Ok(Ack::Refused { .. }) | Err(_) => {
            return errors::unavailable("the chat's history could not be forgotten, so the chat is kept");
        }
    }
    match state.chats.delete(&chat.id) {
        Ok(_) => see_other("/chat", &[]),
        Err(error) => errors::unavailable(&error.message),
    }
}

/// The owner's chats: the newest, a new one, renamed, deleted.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/chat", get(newest))
        .route("/chat/new", post(new_chat))
        .route("/chat/{id}/rename", post(rename))
        .route("/chat/{id}/delete", get(confirm_delete).post(delete))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_is_named_from_the_first_line_of_its_first_message_cut_short() {
        assert_eq!(name_from("\n  Plan the trip  \nto Rome", None), "Plan the trip");
        let long = "word ".repeat(20);
        let named = name_from(&long, None);
        assert!(
            named.ends_with('…') && named.chars().count() <= NAMED_FROM_CHARS + 1,
            "{named}"
        );
        assert_eq!(name_from("", Some("notes.txt")), "notes.txt");
        assert_eq!(name_from("a\u{1b}[2Jb", None), "a[2Jb");
    }

    #[test]
    fn a_name_is_one_short_line() {
        assert!(check_name("Trip to Rome").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name(&"x".repeat(MAX_NAME_CHARS + 1)).is_err());
        assert!(check_name(&"é".repeat(MAX_NAME_CHARS)).is_ok(), "characters, not bytes");
        assert!(check_name("two\nlines").is_err());
    }
}
