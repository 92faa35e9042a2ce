//! [`Styled`] text: what a Markdown reply becomes before any platform sees
//! it — plain text plus the [`Span`]s that style parts of it.
//!
//! Spans are byte ranges into the text, always on `char` boundaries, never
//! empty, and properly nested (two spans either do not overlap or one holds
//! the other), because they come from a parse tree. Platforms count in other
//! units; [`utf16`](super::utf16) converts.

use std::ops::Range;

/// How a span of text is styled.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Style {
    /// Strong emphasis (`**bold**`).
    Bold,
    /// Emphasis (`*italic*`).
    Italic,
    /// Struck through (`~~gone~~`).
    Strikethrough,
    /// Inline code.
    Code,
    /// A code block, with the language its fence named, if any.
    Pre {
        /// The language after the opening fence (`rust`), if any.
        language: Option<String>,
    },
    /// A link to `url` (an absolute URL: `http`, `https`, `mailto` or `tg`).
    Link {
        /// Where the link goes.
        url: String,
    },
    /// A quoted block.
    Blockquote,
}

impl Style {
    /// Code or a code block: monospaced text whose content is literal.
    pub fn is_code(&self) -> bool {
        matches!(self, Style::Code | Style::Pre { .. })
    }
}

/// A styled byte range of a [`Styled`] text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Span {
    /// The bytes of the text it styles.
    pub range: Range<usize>,
    /// How they are styled.
    pub style: Style,
}

/// Plain text and the spans that style it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Styled {
    /// The text with the Markdown taken out.
    pub text: String,
    /// Ordered by start, then outer before inner (longer first).
    pub spans: Vec<Span>,
}

impl Styled {
    /// `text` with no styling at all.
    pub fn plain(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            spans: Vec::new(),
        }
    }

    /// This text without its trailing whitespace; spans are cut to fit and
    /// those left empty are dropped. Platforms trim a message's end anyway,
    /// and a span reaching past the trimmed text would be refused.
    pub fn trim_end(mut self) -> Self {
        let end = self.text.trim_end().len();
        self.text.truncate(end);
        self.spans.retain_mut(|span| {
            span.range.end = span.range.end.min(end);
            span.range.start < span.range.end
        });
        self
    }

    /// The part of this text in `range` (on `char` boundaries), with the
    /// spans cut to it and rebased to its start: a span the range cuts goes
    /// on in the part, so styling survives splitting.
    pub fn slice(&self, range: Range<usize>) -> Styled {
        let spans = self
            .spans
            .iter()
            .filter(|span| span.range.start < range.end && range.start < span.range.end)
            .map(|span| Span {
                range: span.range.start.max(range.start) - range.start..span.range.end.min(range.end) - range.start,
                style: span.style.clone(),
            })
            .collect();
        Styled {
            text: self.text[range].to_owned(),
            spans,
        }
    }

    /// Puts the spans in their documented order.
    pub(crate) fn sort_spans(&mut self) {
        self.spans
            .sort_by(|a, b| a.range.start.cmp(&b.range.start).then(b.range.end.cmp(&a.range.end)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(range: Range<usize>, style: Style) -> Span {
        Span { range, style }
    }

    #[test]
    fn trimming_cuts_spans_and_drops_emptied_ones() {
        let styled = Styled {
            text: "ab  \n".into(),
            spans: vec![span(0..5, Style::Bold), span(3..5, Style::Italic)],
        };
        let trimmed = styled.trim_end();
        assert_eq!(trimmed.text, "ab");
        assert_eq!(trimmed.spans, vec![span(0..2, Style::Bold)]);
    }

    #[test]
    fn a_slice_carries_the_spans_it_cuts_rebased() {
        let styled = Styled {
            text: "one two three".into(),
            spans: vec![
                span(0..3, Style::Bold),
                span(2..9, Style::Code),
                span(10..13, Style::Italic),
            ],
        };
        let part = styled.slice(4..10);
        assert_eq!(part.text, "two th");
        assert_eq!(part.spans, vec![span(0..5, Style::Code)]);
    }
}
