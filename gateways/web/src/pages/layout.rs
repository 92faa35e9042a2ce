//! The shell every page shares: the head with the embedded stylesheet and
//! script, the navigation, and (signed in) the sign-out form with the
//! session's CSRF token. Pages hand in their body already escaped.

use axum::http::StatusCode;
use axum::http::header::{self, HeaderValue};
use axum::response::{IntoResponse, Response};

use crate::escape::Escaped;

/// The pages in the navigation: path and name. A page not built yet is
/// not listed.
pub const NAVIGATION: &[(&str, &str)] = &[
    ("/", "Overview"),
    ("/chat", "Chat"),
    ("/approvals", "Approvals"),
    ("/loops", "Loops & tools"),
    ("/conversations", "Conversations"),
    ("/usage", "Usage"),
    ("/config", "Configuration"),
    ("/channels", "Channels"),
    ("/logs", "Logs"),
    ("/keys", "Keys & sessions"),
];

/// Who is looking, for the shell: signed in, with the session's CSRF token.
pub struct Viewer<'a> {
    pub csrf: &'a str,
}

/// A whole page: `title`, and `body` (HTML, every value in it escaped),
/// with the navigation when `viewer` is signed in, `current` marked.
pub fn page(status: StatusCode, title: &str, current: &str, viewer: Option<Viewer<'_>>, body: &str) -> Response {
    let nav = match &viewer {
        Some(viewer) => {
            let links: String = NAVIGATION
                .iter()
                .map(|(path, name)| {
                    let here = if *path == current {
                        r#" aria-current="page""#
                    } else {
                        ""
                    };
                    format!(r#"<a href="{path}"{here}>{name}</a>"#)
                })
                .collect();
            format!(
                r#"<nav>{links}<form method="post" action="/sign-out"><input type="hidden" name="csrf" value="{}"><button type="submit">Sign out</button></form></nav>"#,
                Escaped(viewer.csrf)
            )
        }
        None => String::new(),
    };
    let html = format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title} — passepartout</title>
<link rel="stylesheet" href="/assets/style.css">
<script src="/assets/live.js" defer></script>
<script src="/assets/chat.js" defer></script>
</head>
<body>
<header><span class="brand">passepartout</span>{nav}</header>
<main>
<h1>{title}</h1>
{body}
</main>
</body>
</html>
"#,
        title = Escaped(title),
    );
    let mut response = (status, html).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}
