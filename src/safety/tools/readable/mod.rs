//! A downloaded body made readable for the model, by what it is: an HTML
//! page becomes its main article as Markdown (`html`), JSON is
//! pretty-printed (`json`), a PDF gives its text (`pdf`), other text comes
//! as it is; each decoded from its charset first (`charset`). The text is
//! then shown a page at a time (`page`). Nothing here touches the network:
//! `http_get` downloads, this reads.

mod charset;
mod content_type;
mod html;
mod json;
mod page;
mod pdf;

use thiserror::Error;

pub use charset::{Decoded, Source, decode};
pub use content_type::{ContentType, Kind};
pub use html::{Markdown, Picked, to_markdown};
pub use page::{Cut, Page, PastEnd, page};
pub use pdf::PdfError;

/// A body as the text the model reads.
#[derive(Debug)]
pub struct Reading {
    pub text: String,
    /// What the text is, for the model: "the main article as Markdown".
    pub what: String,
    /// Where pages of it may end.
    pub cut: Cut,
}

/// Why a body gave no text.
#[derive(Debug, Error)]
pub enum ReadError {
    #[error("the content type is {0}, which is not read; http_get reads web pages, text, JSON and PDFs")]
    NotRead(String),
    #[error("the answer has no content type and its body is not text")]
    NotText,
    #[error(transparent)]
    Pdf(#[from] PdfError),
}

/// Reads `body`, served as `content` from `url`; a PDF's first
/// `max_pdf_pages` pages at most.
pub fn read(body: &[u8], content: &ContentType, url: &str, max_pdf_pages: usize) -> Result<Reading, ReadError> {
    let declared = content.charset.as_deref();
    let with_note = |what: String, decoded: &Decoded| match decoded.note() {
        Some(note) => format!("{what}; {note}"),
        None => what,
    };
    match content.kind(body) {
        Kind::Html => {
            let decoded = decode(body, declared, true);
            let Markdown { text, picked } = to_markdown(&decoded.text, url);
            let what = match picked {
                Picked::Article => "the main article as Markdown",
                Picked::WholePage => "the page as Markdown (no main article found)",
            };
            Ok(Reading {
                text,
                what: with_note(what.to_owned(), &decoded),
                cut: Cut::Prose,
            })
        }
        Kind::Json => {
            let decoded = decode(body, declared, false);
            let (text, what, cut) = match json::pretty(&decoded.text) {
                Ok(pretty) => (pretty, "JSON, pretty-printed".to_owned(), Cut::Lines),
                Err(error) => (
                    decoded.text.clone(),
                    format!("not valid JSON ({error}), as sent"),
                    Cut::Prose,
                ),
            };
            Ok(Reading {
                text,
                what: with_note(what, &decoded),
                cut,
            })
        }
        Kind::Pdf => {
            let pdf = pdf::text(body, max_pdf_pages)?;
            let what = if pdf.read < pdf.pages {
                format!("the PDF's text, its first {} of {} pages", pdf.read, pdf.pages)
            } else {
                format!(
                    "the PDF's text, {} page{}",
                    pdf.pages,
                    if pdf.pages == 1 { "" } else { "s" }
                )
            };
            Ok(Reading {
                text: pdf.text,
                what,
                cut: Cut::Prose,
            })
        }
        Kind::Text => {
            let decoded = decode(body, declared, false);
            // Undeclared bytes that are not text are more likely an image
            // or an archive than a legacy encoding.
            if content.essence.is_none() && decoded.source == Source::Guessed {
                return Err(ReadError::NotText);
            }
            let what = with_note("text".to_owned(), &decoded);
            Ok(Reading {
                text: decoded.text,
                what,
                cut: Cut::Prose,
            })
        }
        Kind::Binary => Err(ReadError::NotRead(content.label().to_owned())),
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A small, valid PDF with a line of text on each page, written here so
    //! the tests need no fixture files.

    /// A PDF whose pages say `pages`, in Helvetica (one of the fonts every
    /// PDF reader has, so none is embedded).
    pub fn pdf(pages: &[&str]) -> Vec<u8> {
        let page_count = pages.len();
        // Objects: 1 catalog, 2 page tree, 3 font, then a page and its
        // content stream for each page.
        let mut objects = vec![
            "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
            format!(
                "<< /Type /Pages /Kids [{}] /Count {page_count} >>",
                (0..page_count)
                    .map(|index| format!("{} 0 R", 4 + 2 * index))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".to_owned(),
        ];
        for (index, words) in pages.iter().enumerate() {
            let content = format!("BT /F1 12 Tf 72 720 Td ({words}) Tj ET");
            objects.push(format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> \
                 /Contents {} 0 R >>",
                5 + 2 * index
            ));
            objects.push(format!("<< /Length {} >>\nstream\n{content}\nendstream", content.len()));
        }
        let mut out = b"%PDF-1.4\n".to_vec();
        let mut offsets = Vec::new();
        for (index, object) in objects.iter().enumerate() {
            offsets.push(out.len());
            out.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", index + 1).as_bytes());
        }
        let xref = out.len();
        out.extend_from_slice(format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes());
        for offset in offsets {
            out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
        }
        out.extend_from_slice(
            format!(
                "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
                objects.len() + 1
            )
            .as_bytes(),
        );
        out
    }
}
