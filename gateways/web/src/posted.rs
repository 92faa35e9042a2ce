//! What every form that changes something goes through before its handler
//! acts: the page's own origin and a live session ([`FormSession`], before
//! the body is read), a body that reads ([`bad_form`]), the session's CSRF
//! token ([`check_token`]);
//! and the answer once it acted, a redirect to the page that shows what
//! came of it (so reloading that page sends nothing again).

use axum::Form;
use axum::extract::rejection::FormRejection;
use axum::http::StatusCode;
use axum::http::header::{self, HeaderValue};
use axum::response::{IntoResponse, Response};
use passepartout_admin::{Asker, Via};
use passepartout_gateway::{ChatId, ConversationKey, GatewayId, UserId};
use serde::Deserialize;

use crate::pages::errors;
use crate::session::{FormSession, check_token};

/// The user the dashboard acts as on the admin path. A signed-in browser
/// has the machine owner's rights; the core shows its decisions as made
/// "from the web".
pub const OWNER: &str = "web";

/// The chat the owner asks in, on the admin path: one of the dashboard's
/// own, which no skill names, so the tools' gates the Loops page lists are
/// those that hold in general.
const OWNER_CHAT: &str = "dashboard";

/// The owner, as the admin path knows who asks: [`OWNER`], answering from
/// the web, in the dashboard's own chat.
pub fn asker() -> Asker {
    Asker {
        by: UserId::new(OWNER).expect("the dashboard's user id is valid"),
        via: Via::Web,
        conversation: ConversationKey::new(
            GatewayId::new(crate::surface::GATEWAY_ID).expect("the web gateway's id is valid"),
            ChatId::new(OWNER_CHAT).expect("a valid chat id"),
        ),
    }
}

/// A form that could not be read: 413 when too large, else 400, saying why.
pub fn bad_form(rejection: FormRejection) -> Response {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return errors::bad_request(
            StatusCode::PAYLOAD_TOO_LARGE,
            "The form is larger than the dashboard takes.",
        );
    }
    errors::bad_request(
        StatusCode::BAD_REQUEST,
        &format!("The form could not be read: {}", rejection.body_text()),
    )
}

/// A form that carries the session's CSRF token.
pub trait WithToken {
    fn csrf(&self) -> &str;
}

/// A form that sends only its CSRF token: a button that does one thing.
#[derive(Deserialize)]
pub struct TokenOnly {
    csrf: String,
}

impl WithToken for TokenOnly {
    fn csrf(&self) -> &str {
        &self.csrf
    }
}

/// The form, if it passed every check; else the page saying why not.
pub fn accept<T: WithToken>(sender: FormSession, form: Result<Form<T>, FormRejection>) -> Result<T, Box<Response>> {
    accept_with_session(sender, form).map(|(_, form)| form)
}

/// The session that sent the form and the form, if it passed every
/// check; else the page saying why not.
pub fn accept_with_session<T: WithToken>(
    sender: FormSession,
    form: Result<Form<T>, FormRejection>,
) -> Result<(String, T), Box<Response>> {
    let session = sender.session;
    let Form(form) = form.map_err(|rejection| Box::new(bad_form(rejection)))?;
    check_token(&session, form.csrf())?;
    Ok((session, form))
}

/// `303 See Other` to `path` with `query` (what the page there is to say).
pub fn see_other(path: &str, query: &[(&str, &str)]) -> Response {
    let query = serde_urlencoded::to_string(query).unwrap_or_default();
    let location = if query.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{query}")
    };
    let location = HeaderValue::from_str(&location).unwrap_or_else(|_| HeaderValue::from_static("/"));
    (StatusCode::SEE_OTHER, [(header::LOCATION, location)]).into_response()
}

/// A message of the core's for a page: its Markdown code marks dropped.
pub fn plain(message: &str) -> String {
    message.replace('`', "")
}
