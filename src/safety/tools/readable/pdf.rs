//! A PDF's text, page by page, through `pdf-extract` (on `lopdf`): at most
//! a set number of pages, each headed by its number so the model can cite
//! it. Run off the async threads: a large PDF takes a while.

use pdf_extract::{Document, PlainTextOutput, output_doc_page};
use thiserror::Error;

/// Why a PDF gave no text.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum PdfError {
    #[error("the PDF cannot be read: {0}")]
    Unreadable(String),
    #[error("the PDF is encrypted with a password")]
    Encrypted,
    #[error("the PDF has no text to read (its pages may be scanned images)")]
    NoText,
}

/// The text of a PDF's first pages.
#[derive(Debug)]
pub struct PdfText {
    pub text: String,
    /// Pages read.
    pub read: usize,
    /// Pages in the document.
    pub pages: usize,
}

/// The text of the first `max_pages` pages of the PDF in `bytes`.
pub fn text(bytes: &[u8], max_pages: usize) -> Result<PdfText, PdfError> {
    let mut document = Document::load_mem(bytes).map_err(|error| PdfError::Unreadable(error.to_string()))?;
    if document.is_encrypted() {
        // Many PDFs are encrypted with an empty user password (to restrict
        // printing or copying); those open, as they do in any viewer.
        document.decrypt("").map_err(|_| PdfError::Encrypted)?;
    }
    let numbers = document.get_pages();
    let pages = numbers.len();
    let mut text = String::new();
    let mut read = 0;
    for &number in numbers.keys().take(max_pages) {
        let mut page = String::new();
        output_doc_page(&document, &mut PlainTextOutput::new(&mut page), number)
            .map_err(|error| PdfError::Unreadable(format!("page {number}: {error}")))?;
        read += 1;
        let page = page.trim();
        if page.is_empty() {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&format!("[page {number}]\n{page}"));
    }
    if text.is_empty() {
        return Err(PdfError::NoText);
    }
    Ok(PdfText { text, read, pages })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_past_the_cap_are_left_out() {
        let pdf = crate::safety::tools::readable::testing::pdf(&["First page words", "Second page words"]);
        let all = text(&pdf, 10).unwrap();
        assert_eq!((all.read, all.pages), (2, 2));
        assert!(all.text.contains("[page 1]\nFirst page words"), "{}", all.text);
        assert!(all.text.contains("[page 2]\nSecond page words"), "{}", all.text);
        let first = text(&pdf, 1).unwrap();
        assert_eq!((first.read, first.pages), (1, 2));
        assert!(!first.text.contains("Second"), "{}", first.text);
    }

    #[test]
    fn what_is_not_a_pdf_is_unreadable() {
        assert!(matches!(text(b"%PDF-1.4 garbage", 10), Err(PdfError::Unreadable(_))));
        assert!(matches!(text(b"", 10), Err(PdfError::Unreadable(_))));
    }
}
