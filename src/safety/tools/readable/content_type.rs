//! The `Content-Type` of an answer, and what kind of document that makes
//! the body: a page, JSON, a PDF, other text, or something not read.

use reqwest::header::HeaderValue;

/// What a body is read as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An HTML page: its main content becomes Markdown.
    Html,
    /// JSON, pretty-printed.
    Json,
    /// A PDF's text.
    Pdf,
    /// Other text (plain, XML, CSS, JavaScript), as it is.
    Text,
    /// Anything else: images, archives, audio… not read.
    Binary,
}

/// The `Content-Type` of an answer: its essence (`text/html`, lowercase)
/// and declared charset; both `None` when the header is missing.
#[derive(Clone, Debug, Default)]
pub struct ContentType {
    pub essence: Option<String>,
    pub charset: Option<String>,
}

impl ContentType {
    pub fn of(header: Option<&HeaderValue>) -> Self {
        let Some(value) = header.and_then(|value| value.to_str().ok()) else {
            return Self::default();
        };
        Self::parse(value)
    }

    /// Reads a `Content-Type` value: `text/html; charset="Shift_JIS"`.
    pub fn parse(value: &str) -> Self {
        let mut parts = value.split(';');
        let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let charset = parts.find_map(|parameter| {
            let (key, value) = parameter.split_once('=')?;
            let charset = value.trim().trim_matches('"').to_ascii_lowercase();
            key.trim().eq_ignore_ascii_case("charset").then_some(charset)
        });
        Self {
            essence: (!essence.is_empty()).then_some(essence),
            charset,
        }
    }

    pub fn label(&self) -> &str {
        self.essence.as_deref().unwrap_or("no content type")
    }

    /// What `body` is read as. A declared type decides, except that a PDF
    /// served as `application/octet-stream` (as many servers do) is still a
    /// PDF; without a type, the body's first bytes decide.
    pub fn kind(&self, body: &[u8]) -> Kind {
        let is_pdf = body.starts_with(b"%PDF-");
        let Some(essence) = self.essence.as_deref() else {
            return if is_pdf {
                Kind::Pdf
            } else if looks_like_html(body) {
                Kind::Html
            } else {
                Kind::Text
            };
        };
        match essence {
            "text/html" | "application/xhtml+xml" => Kind::Html,
            "application/json" => Kind::Json,
            "application/pdf" => Kind::Pdf,
            "application/octet-stream" if is_pdf => Kind::Pdf,
            _ if essence.ends_with("+json") => Kind::Json,
            _ if essence.starts_with("text/")
                || matches!(essence, "application/xml" | "application/javascript")
                || essence.ends_with("+xml") =>
            {
                Kind::Text
            }
            _ => Kind::Binary,
        }
    }

    /// Whether the declared type is one never read, whatever the body: said
    /// before the body is downloaded.
    pub fn is_binary(&self) -> bool {
        self.essence
            .as_deref()
            .is_some_and(|essence| essence != "application/octet-stream" && self.kind(b"") == Kind::Binary)
    }
}

/// Whether an untyped body starts like an HTML document.
fn looks_like_html(body: &[u8]) -> bool {
    let start = body.trim_ascii_start();
    let head = &start[..start.len().min(15)];
    ["<!doctype html", "<html"]
        .iter()
        .any(|prefix| head.len() >= prefix.len() && head[..prefix.len()].eq_ignore_ascii_case(prefix.as_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_type_decides_and_untyped_bodies_are_sniffed() {
        let typed = |value: &str, body: &[u8]| ContentType::parse(value).kind(body);
        assert_eq!(typed("text/html; charset=UTF-8", b""), Kind::Html);
        assert_eq!(typed("application/ld+json", b""), Kind::Json);
        assert_eq!(typed("application/atom+xml", b""), Kind::Text);
        assert_eq!(typed("application/pdf", b""), Kind::Pdf);
        assert_eq!(typed("application/octet-stream", b"%PDF-1.4"), Kind::Pdf);
        assert_eq!(typed("application/octet-stream", b"PK\x03\x04"), Kind::Binary);
        assert_eq!(typed("image/png", b""), Kind::Binary);
        let untyped = ContentType::default();
        assert_eq!(untyped.kind(b"  <!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(untyped.kind(b"%PDF-1.7"), Kind::Pdf);
        assert_eq!(untyped.kind(b"just words"), Kind::Text);
        assert_eq!(
            ContentType::parse("text/plain; Charset=\"Shift_JIS\"")
                .charset
                .as_deref(),
            Some("shift_jis")
        );
        assert!(ContentType::parse("image/png").is_binary());
        assert!(!ContentType::parse("application/octet-stream").is_binary());
    }
}
