//! Which character encoding a body is in, and the body decoded. In the
//! order browsers follow: a byte order mark, the `charset` the server
//! declared, for HTML a `<meta charset>` near the start of the document,
//! then UTF-8 if the bytes are valid UTF-8, and last a guess from the bytes
//! (by `chardetng`, the detector Firefox uses).

use std::borrow::Cow;

use dom_query::Document;
use encoding_rs::{Encoding, UTF_8, UTF_16BE, UTF_16LE, WINDOWS_1252};

/// How far into a page a `<meta charset>` is looked for. The HTML standard
/// says 1024 bytes; pages with long comments or scripts first put it later,
/// and browsers find it there when they parse again.
const META_PRESCAN_BYTES: usize = 4096;

/// How much of an undeclared, non-UTF-8 body the detector reads.
const GUESS_BYTES: usize = 64 * 1024;

/// Where the encoding came from, said to the model when it is not UTF-8.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    ByteOrderMark,
    Header,
    Meta,
    Utf8,
    Guessed,
}

/// A body as text.
#[derive(Debug)]
pub struct Decoded {
    pub text: String,
    pub encoding: &'static Encoding,
    pub source: Source,
    /// Whether bytes invalid in the encoding were replaced by U+FFFD.
    pub lossy: bool,
}

impl Decoded {
    /// A note for the model when the text was not plain UTF-8, else `None`.
    pub fn note(&self) -> Option<String> {
        let name = self.encoding.name();
        let how = match self.source {
            Source::Utf8 | Source::ByteOrderMark | Source::Header | Source::Meta if self.encoding == UTF_8 => None,
            Source::Header => Some(format!("decoded from {name}")),
            Source::Meta => Some(format!("decoded from {name} (declared in the page)")),
            Source::ByteOrderMark => Some(format!("decoded from {name} (byte order mark)")),
            Source::Guessed => Some(format!("decoded from {name} (guessed; no charset declared)")),
            Source::Utf8 => None,
        };
        let lossy = self.lossy.then_some("invalid bytes shown as U+FFFD".to_owned());
        match (how, lossy) {
            (Some(how), Some(lossy)) => Some(format!("{how}; {lossy}")),
            (how, lossy) => how.or(lossy),
        }
    }
}

/// Decodes `bytes`, declared by the server as `declared` (a charset label);
/// `html` lets a `<meta>` in the document declare it.
pub fn decode(bytes: &[u8], declared: Option<&str>, html: bool) -> Decoded {
    let (encoding, source, skip) = if let Some((encoding, length)) = Encoding::for_bom(bytes) {
        (encoding, Source::ByteOrderMark, length)
    } else if let Some(encoding) = declared.and_then(|label| Encoding::for_label(label.as_bytes())) {
        (encoding, Source::Header, 0)
    } else if let Some(encoding) = html.then(|| meta_charset(bytes)).flatten() {
        (encoding, Source::Meta, 0)
    } else if std::str::from_utf8(bytes).is_ok() {
        (UTF_8, Source::Utf8, 0)
    } else {
        let mut detector = chardetng::EncodingDetector::new();
        detector.feed(&bytes[..bytes.len().min(GUESS_BYTES)], bytes.len() <= GUESS_BYTES);
        (detector.guess(None, true), Source::Guessed, 0)
    };
    let (text, lossy) = encoding.decode_without_bom_handling(&bytes[skip..]);
    Decoded {
        text: text.into_owned(),
        encoding,
        source,
        lossy,
    }
}

/// The encoding a page's `<meta charset=…>` or `<meta http-equiv=
/// "Content-Type" content="…; charset=…">` names near its start. The start
/// is read as windows-1252, which keeps every ASCII byte as it is, so the
/// markup of any ASCII-compatible page parses.
fn meta_charset(bytes: &[u8]) -> Option<&'static Encoding> {
    let start = &bytes[..bytes.len().min(META_PRESCAN_BYTES)];
    let (text, _) = WINDOWS_1252.decode_without_bom_handling(start);
    let document = Document::from(match text {
        Cow::Borrowed(text) => text.to_owned(),
        Cow::Owned(text) => text,
    });
    let declared = document
        .select("meta[charset]")
        .iter()
        .find_map(|meta| meta.attr("charset").map(|value| value.to_string()))
        .or_else(|| {
            document.select("meta[http-equiv][content]").iter().find_map(|meta| {
                let equiv = meta.attr("http-equiv")?;
                if !equiv.trim().eq_ignore_ascii_case("content-type") {
                    return None;
                }
                super::ContentType::parse(&meta.attr("content")?).charset
            })
        })?;
    let encoding = Encoding::for_label(declared.trim().as_bytes())?;
    // A page cannot be UTF-16 if its markup read as ASCII: the standard
    // takes such a declaration to mean UTF-8.
    Some(if encoding == UTF_16LE || encoding == UTF_16BE {
        UTF_8
    } else {
        encoding
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_then_the_page_then_the_bytes_decide() {
        let latin1 = decode(b"caf\xe9", Some("iso-8859-1"), false);
        assert_eq!((latin1.text.as_str(), latin1.source), ("café", Source::Header));
        assert_eq!(latin1.note().as_deref(), Some("decoded from windows-1252"));

        let page = b"<html><head><meta charset=\"Shift_JIS\"></head><body>\x93\xfa\x96\x7b</body></html>";
        let sjis = decode(page, None, true);
        assert_eq!(sjis.source, Source::Meta);
        assert!(sjis.text.contains("日本"), "{}", sjis.text);

        let equiv = b"<meta http-equiv=\"content-type\" content=\"text/html; charset=iso-8859-1\"><p>\xe9t\xe9";
        assert!(decode(equiv, None, true).text.contains("été"));
        // Not HTML: the meta is not read, and the bytes are guessed at.
        assert_eq!(decode(equiv, None, false).source, Source::Guessed);

        let plain = decode("naïve".as_bytes(), None, false);
        assert_eq!((plain.source, plain.note()), (Source::Utf8, None));
        let bom = decode(b"\xef\xbb\xbfhi", Some("iso-8859-1"), false);
        assert_eq!((bom.text.as_str(), bom.source), ("hi", Source::ByteOrderMark));
    }
}
