//! The dashboard's stylesheet, script and icon, compiled into the binary:
//! no page loads anything from elsewhere, and the strict
//! Content-Security-Policy allows only these (no inline script or style
//! anywhere).

use axum::http::header;
use axum::response::IntoResponse;

/// `GET /assets/style.css`.
pub async fn style() -> impl IntoResponse {
    asset("text/css; charset=utf-8", include_str!("../assets/style.css"))
}

/// `GET /assets/live.js`.
pub async fn live() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", include_str!("../assets/live.js"))
}

/// `GET /assets/chat.js`.
pub async fn chat() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", include_str!("../assets/chat.js"))
}

/// `GET /assets/favicon.svg`: the icon every page links, with the build's
/// version in the link, so it is kept for a year.
pub async fn favicon() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "public, max-age=31536000, immutable"),
        ],
        include_str!("../assets/favicon.svg"),
    )
}

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            // The binary is the version: an hour is plenty, and no secret is here.
            (header::CACHE_CONTROL, "private, max-age=3600"),
        ],
        body,
    )
}
