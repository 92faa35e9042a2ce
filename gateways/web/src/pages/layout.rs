//! The shell every page shares: the head with the embedded stylesheet,
//! script and icon, the navigation, and (signed in) the sign-out form with
//! the session's CSRF token. Pages hand in their body already escaped.
//!
//! On a wide screen the navigation is a sidebar; on a narrow one it folds
//! into a top bar whose "Menu" opens it. The menu is a checkbox and its
//! label, styled: it opens and closes with scripting off, and no inline
//! script or style is needed (the Content-Security-Policy allows none).

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

/// Where the icon is served; the version in its link makes a new build's
/// icon a new address, so it can be cached for long.
pub const FAVICON: &str = "/assets/favicon.svg";

/// The mark beside the name: a key in a rounded square, drawn in the
/// text's colour (the same drawing as the icon).
const MARK: &str = r#"<svg class="mark" viewBox="0 0 32 32" width="28" height="28" aria-hidden="true" focusable="false"><rect width="32" height="32" rx="8" class="mark-tile"/><circle cx="11" cy="16" r="5" fill="none" class="mark-key" stroke-width="3"/><path d="M16 16h11M23 16v5M27 16v4" fill="none" class="mark-key" stroke-width="3" stroke-linecap="round"/></svg>"#;

/// The three lines of the menu button.
const MENU_ICON: &str = r#"<svg viewBox="0 0 24 24" width="22" height="22" aria-hidden="true" focusable="false"><path d="M4 7h16M4 12h16M4 17h16" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round"/></svg>"#;

/// Who is looking, for the shell: signed in, with the session's CSRF token.
pub struct Viewer<'a> {
    /// The session's CSRF token, for the forms.
    pub csrf: &'a str,
}

/// The navigation's links, `current` marked for the browser and for
/// screen readers.
fn links(current: &str) -> String {
    NAVIGATION
        .iter()
        .map(|(path, name)| {
            let here = if *path == current {
                r#" aria-current="page""#
            } else {
                ""
            };
            format!(r#"<a href="{path}"{here}>{name}</a>"#)
        })
        .collect()
}

/// A whole page: `title`, and `body` (HTML, every value in it escaped),
/// with the navigation when `viewer` is signed in, `current` marked.
pub fn page(status: StatusCode, title: &str, current: &str, viewer: Option<Viewer<'_>>, body: &str) -> Response {
    let (class, menu) = match &viewer {
        Some(viewer) => (
            "app",
            format!(
                r#"<input type="checkbox" id="menu-toggle" class="menu-toggle" aria-controls="nav"><label for="menu-toggle" class="menu-button">{MENU_ICON}<span>Menu</span></label>
<nav id="nav" aria-label="Pages">{}<form method="post" action="/sign-out" class="sign-out"><input type="hidden" name="csrf" value="{}"><button type="submit">Sign out</button></form></nav>"#,
                links(current),
                Escaped(viewer.csrf)
            ),
        ),
        None => ("app signed-out", String::new()),
    };
    let html = format!(
        r##"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>{title} — passepartout</title>
<link rel="icon" href="{FAVICON}?v={version}" type="image/svg+xml">
<link rel="stylesheet" href="/assets/style.css">
<script src="/assets/live.js" defer></script>
<script src="/assets/chat.js" defer></script>
</head>
<body>
<a class="skip" href="#main">Skip to the page</a>
<div class="{class}">
<header class="bar"><a class="brand" href="/">{MARK}<span>passepartout</span></a>
{menu}</header>
<main id="main">
<h1>{title}</h1>
{body}
</main>
</div>
</body>
</html>
"##,
        title = Escaped(title),
        version = env!("CARGO_PKG_VERSION"),
    );
    let mut response = (status, html).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn html(viewer: Option<Viewer<'_>>) -> String {
        let response = page(StatusCode::OK, "A <page>", "/usage", viewer, "<p>body</p>");
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20).await.unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn signed_in_the_menu_reaches_every_page_and_sign_out() {
        let page = html(Some(Viewer { csrf: "to\"ken" })).await;
        for (path, name) in NAVIGATION {
            assert!(page.contains(&format!(r#"href="{path}""#)), "{name} missing: {page}");
        }
        assert!(
            page.contains(r#"<a href="/usage" aria-current="page">Usage</a>"#),
            "{page}"
        );
        assert!(
            page.contains(r#"<label for="menu-toggle" class="menu-button">"#),
            "{page}"
        );
        assert!(page.contains(r#"value="to&quot;ken""#), "{page}");
        assert!(page.contains("<h1>A &lt;page&gt;</h1>"), "{page}");
        assert!(
            page.contains(r#"<link rel="icon" href="/assets/favicon.svg?v="#),
            "{page}"
        );
        assert!(!page.contains("style=") && !page.contains("<script>"), "{page}");
    }

    #[tokio::test]
    async fn signed_out_there_is_no_menu() {
        let page = html(None).await;
        assert!(!page.contains("<nav") && !page.contains("menu-toggle"), "{page}");
        assert!(page.contains(r#"class="app signed-out""#), "{page}");
    }
}
