//! The pages that say something went wrong or what to do first: not signed
//! in, a link that is not valid, too many tries, not found, a bad or
//! refused request. Each says what to do next.

use axum::http::StatusCode;
use axum::response::Response;

use super::layout::{Viewer, page};
use crate::escape::Escaped;

/// How a person gets a sign-in link, on every page that needs one.
const HOW_TO_SIGN_IN: &str = "<p>To sign in, run <code>passepartout web</code> in a terminal on the machine \
     the assistant runs on, and open the link it prints (add <code>--open</code> to open it in the browser \
     there). A link works once, for 5 minutes.</p>";

/// Not signed in (or the session ended).
pub fn not_signed_in() -> Response {
    page(
        StatusCode::UNAUTHORIZED,
        "Sign in",
        "",
        None,
        &format!("<p>You are not signed in to this assistant's dashboard.</p>{HOW_TO_SIGN_IN}"),
    )
}

/// A sign-in link unknown, used or expired: one answer for all three.
pub fn link_not_valid() -> Response {
    page(
        StatusCode::UNAUTHORIZED,
        "This link is not valid",
        "",
        None,
        &format!(
            "<p>This sign-in link is not valid: it was used already, it expired, or it was never issued.</p>{HOW_TO_SIGN_IN}"
        ),
    )
}

/// Too many wrong links or session cookies from this address.
pub fn too_many_tries() -> Response {
    page(
        StatusCode::TOO_MANY_REQUESTS,
        "Too many tries",
        "",
        None,
        &format!(
            "<p>Too many sign-in links or sessions that were not valid came from this address. Wait a minute, then use a new link.</p>{HOW_TO_SIGN_IN}"
        ),
    )
}

/// No page at this address.
pub fn not_found() -> Response {
    not_found_for(None)
}

/// No page at this address, with the navigation when `viewer` is signed
/// in, so the way on is at hand.
pub fn not_found_for(viewer: Option<Viewer<'_>>) -> Response {
    page(
        StatusCode::NOT_FOUND,
        "Not found",
        "",
        viewer,
        r#"<p>There is no page at this address. <a href="/">The overview</a> lists what the assistant is doing.</p>"#,
    )
}

/// A request refused for what it is (403), with why.
pub fn forbidden(why: &str) -> Response {
    page(
        StatusCode::FORBIDDEN,
        "Not allowed",
        "",
        None,
        &format!(r#"<p>{}</p><p><a href="/">Back to the overview</a></p>"#, Escaped(why)),
    )
}

/// A request that cannot be read (400, or 413 when too large), with why.
pub fn bad_request(status: StatusCode, why: &str) -> Response {
    page(
        status,
        "Bad request",
        "",
        None,
        &format!(r#"<p>{}</p><p><a href="/">Back to the overview</a></p>"#, Escaped(why)),
    )
}

/// A request that could not be done as things stand (409), with why and
/// the way back to the page it came from.
pub fn conflict(why: &str, back: &str, back_name: &str) -> Response {
    page(
        StatusCode::CONFLICT,
        "Not done",
        "",
        None,
        &format!(
            r#"<p>{}</p><p><a href="{}">{}</a></p>"#,
            Escaped(why),
            Escaped(back),
            Escaped(back_name)
        ),
    )
}

/// A `Host` that is not this dashboard's: refused before anything else.
pub fn wrong_host() -> Response {
    page(
        StatusCode::MISDIRECTED_REQUEST,
        "Wrong address",
        "",
        None,
        "<p>This dashboard does not answer at this host name. Open it at the address <code>passepartout web</code> prints.</p>",
    )
}

/// The daemon could not answer (shutting down, its store failed).
pub fn unavailable(why: &str) -> Response {
    page(
        StatusCode::SERVICE_UNAVAILABLE,
        "Not available",
        "",
        None,
        &format!("<p>The assistant cannot answer now: {}</p>", Escaped(why)),
    )
}
