//! The dashboard's stylesheet, script and icon, compiled into the binary:
//! no page loads anything from elsewhere, and the strict
//! Content-Security-Policy allows only these (no inline script or style
//! anywhere).

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;

use crate::state::AppState;

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

/// The embedded assets.
pub fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route("/assets/style.css", get(style))
        .route("/assets/live.js", get(live))
        .route("/assets/chat.js", get(chat))
        .route("/assets/favicon.svg", get(favicon))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    const CSS: &str = include_str!("../assets/style.css");

    /// The colours (`--name: #rrggbb;`) the first `:root { … }` after
    /// `from` sets, over `base`.
    fn colours<'a>(from: &str, mut base: HashMap<&'a str, [f64; 3]>) -> HashMap<&'a str, [f64; 3]> {
        let start = CSS.find(from).expect("the block") + from.len();
        let block = &CSS[start..];
        let block = &block[block.find(":root {").expect(":root")..];
        let block = &block[..block.find('}').expect("its end")];
        for line in block.lines() {
            let Some((name, value)) = line.trim().split_once(':') else {
                continue;
            };
            let value = value.trim().trim_end_matches(';');
            if let (Some(name), Some(hex)) = (name.strip_prefix("--"), value.strip_prefix('#'))
                && hex.len() == 6
            {
                let channel = |at: usize| f64::from(u8::from_str_radix(&hex[at..at + 2], 16).unwrap()) / 255.0;
                base.insert(name, [channel(0), channel(2), channel(4)]);
            }
        }
        base
    }

    /// WCAG's relative luminance and contrast ratio.
    fn contrast(a: [f64; 3], b: [f64; 3]) -> f64 {
        let luminance = |c: [f64; 3]| {
            let lin = |v: f64| {
                if v <= 0.039_28 {
                    v / 12.92
                } else {
                    ((v + 0.055) / 1.055).powf(2.4)
                }
            };
            0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2])
        };
        let (la, lb) = (luminance(a), luminance(b));
        (la.max(lb) + 0.05) / (la.min(lb) + 0.05)
    }

    #[test]
    fn text_keeps_wcag_aa_contrast_in_both_themes() {
        let light = colours("", HashMap::new());
        let dark = colours("@media (prefers-color-scheme: dark)", light.clone());
        let mut pairs: Vec<(&str, &str)> = Vec::new();
        for text in ["text", "muted", "accent", "ok", "warn", "error"] {
            for ground in ["bg", "surface", "surface-2"] {
                pairs.push((text, ground));
            }
        }
        pairs.extend([
            ("ok", "ok-soft"),
            ("warn", "warn-soft"),
            ("error", "error-soft"),
            ("accent", "accent-soft"),
            ("accent-text", "accent"),
            ("surface", "ok"),
        ]);
        for (theme, colours) in [("light", &light), ("dark", &dark)] {
            for (text, ground) in &pairs {
                let ratio = contrast(colours[text], colours[ground]);
                assert!(ratio >= 4.5, "{theme}: --{text} on --{ground} is {ratio:.2}:1");
            }
        }
    }
}
