//! The output side of rendering: a [`Writer`] builds the plain text and its
//! spans, and owns the layout a reader needs without markup — blank lines
//! between blocks, line prefixes (a quote's `> `, a list item's indent)
//! written lazily at the start of each line, and spans opened and closed
//! around what is written.
//!
//! Breaks are written lazily too: a block asks for one when it ends, a line
//! break inside a paragraph asks for one where it stands, and the next text
//! pays for it. So nothing trails at the end, and no span starts or ends on
//! a separator: a span closing right after a line break (a link whose text
//! ends in one) ends on its text, not on a newline that the end of the
//! paragraph would take away from under it.

use super::styled::{Span, Style, Styled};

/// How many levels of nesting a line's prefixes show. Deeper quotes and
/// lists are shown at this depth: a deep quote's lazy continuation lines
/// would otherwise each repeat every level, and the text could grow far
/// beyond the Markdown it came from.
const MAX_SHOWN_DEPTH: usize = 8;

/// The separation a block asks for before whatever comes next.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum Break {
    None,
    Line,
    Paragraph,
}

#[derive(Debug)]
pub(super) struct Writer {
    out: Styled,
    pending: Break,
    /// Written at the start of every line: one entry per enclosing block
    /// that indents or marks its lines.
    prefixes: Vec<&'static str>,
    at_line_start: bool,
    /// A list item's marker was just written: its first block goes on the
    /// marker's line.
    after_marker: bool,
    /// Spans opened and not yet closed: their style and where they start.
    open: Vec<(Style, usize)>,
}

impl Writer {
    pub(super) fn new(capacity: usize) -> Self {
        Self {
            out: Styled {
                text: String::with_capacity(capacity),
                spans: Vec::new(),
            },
            pending: Break::None,
            prefixes: Vec::new(),
            at_line_start: true,
            after_marker: false,
            open: Vec::new(),
        }
    }

    /// The text written so far, in bytes.
    pub(super) fn len(&self) -> usize {
        self.out.text.len()
    }

    /// The text written since byte `start`.
    pub(super) fn text_from(&self, start: usize) -> &str {
        &self.out.text[start..]
    }

    /// Asks for at least `wanted` before the next text.
    pub(super) fn request(&mut self, wanted: Break) {
        self.pending = self.pending.max(wanted);
    }

    /// A hard line break inside a paragraph. A second one in a row leaves a
    /// blank line, as two `<br>` would; soft breaks merge instead (they are
    /// whitespace) and are asked for with [`request`](Self::request).
    pub(super) fn hard_break(&mut self) {
        self.pending = match self.pending {
            Break::None => Break::Line,
            Break::Line | Break::Paragraph => Break::Paragraph,
        };
    }

    /// Writes the pending break now (nothing at the very start).
    pub(super) fn flush_break(&mut self) {
        let pending = std::mem::replace(&mut self.pending, Break::None);
        if self.out.text.is_empty() || pending == Break::None || self.after_marker {
            return;
        }
        if !self.at_line_start {
            self.newline();
        }
        if pending == Break::Paragraph {
            let blank = self.prefixes[..self.prefixes.len().min(MAX_SHOWN_DEPTH)].concat();
            self.out.text.push_str(blank.trim_end());
            self.newline();
        }
    }

    /// Writes `text`, with the line prefixes at the start of each line.
    pub(super) fn write(&mut self, text: &str) {
        self.flush_break();
        for line in text.split_inclusive('\n') {
            if self.at_line_start {
                self.write_prefixes();
            }
            self.out.text.push_str(line);
            self.at_line_start = line.ends_with('\n');
            self.after_marker = false;
        }
    }

    /// Writes `text` right after what is written, before any pending line
    /// break: what belongs to the text just written (a link's URL spelled
    /// after it) stays on that text's line.
    pub(super) fn append(&mut self, text: &str) {
        let pending = std::mem::replace(&mut self.pending, Break::None);
        self.write(text);
        self.pending = pending;
    }

    /// Starts a new line (prefixes follow lazily with the next text).
    pub(super) fn newline(&mut self) {
        self.out.text.push('\n');
        self.at_line_start = true;
        self.after_marker = false;
    }

    /// Writes a list item's marker (`• `, `1. `) at the start of a line.
    pub(super) fn marker(&mut self, marker: &str) {
        self.flush_break();
        if !self.at_line_start && !self.out.text.is_empty() {
            self.newline();
        }
        self.write_prefixes();
        self.out.text.push_str(marker);
        self.at_line_start = false;
        self.after_marker = true;
    }

    pub(super) fn push_prefix(&mut self, prefix: &'static str) {
        self.prefixes.push(prefix);
    }

    /// Ends the block that pushed the innermost prefix: what follows starts
    /// a line of its own, even after an empty list item.
    pub(super) fn pop_prefix(&mut self) {
        self.prefixes.pop();
        self.after_marker = false;
    }

    /// Removes line breaks at the end (a code block's last newline). Spans
    /// already closed over them are cut to fit, and those left empty
    /// dropped: text written later must not fall inside a span that ended
    /// before it, or it would overlap spans that did not.
    pub(super) fn trim_newlines(&mut self) {
        let kept = self.out.text.trim_end_matches('\n').len();
        if kept < self.out.text.len() {
            self.out.text.truncate(kept);
            self.at_line_start = kept == 0;
            self.out.spans.retain_mut(|span| {
                span.range.end = span.range.end.min(kept);
                span.range.start < span.range.end
            });
            for (_, start) in &mut self.open {
                *start = (*start).min(kept);
            }
        }
    }

    /// Opens a span of `style` where the next text goes.
    pub(super) fn open(&mut self, style: Style) {
        self.flush_break();
        self.open.push((style, self.len()));
    }

    /// Closes the innermost open span; an empty one is dropped.
    pub(super) fn close(&mut self) {
        if let Some((style, start)) = self.open.pop() {
            self.span(start, style);
        }
    }

    /// Records a span from `start` to the end of the text, unless empty.
    pub(super) fn span(&mut self, start: usize, style: Style) {
        let end = self.len();
        if start < end {
            self.out.spans.push(Span {
                range: start..end,
                style,
            });
        }
    }

    /// The text and spans: trailing whitespace trimmed, spans in order.
    pub(super) fn finish(mut self) -> Styled {
        while !self.open.is_empty() {
            self.close();
        }
        let mut out = self.out.trim_end();
        out.sort_spans();
        out
    }

    fn write_prefixes(&mut self) {
        for prefix in self.prefixes.iter().take(MAX_SHOWN_DEPTH) {
            self.out.text.push_str(prefix);
        }
        self.at_line_start = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_newlines_cuts_the_spans_over_them() {
        let mut writer = Writer::new(8);
        writer.open(Style::Blockquote);
        writer.write("q ");
        writer.open(Style::Bold);
        writer.write("a\n");
        writer.close();
        writer.open(Style::Italic);
        writer.write("\n");
        writer.close();
        writer.trim_newlines();
        writer.close();
        writer.newline();
        writer.write("b");
        let out = writer.finish();
        assert_eq!(out.text, "q a\nb");
        let spans: Vec<_> = out
            .spans
            .iter()
            .map(|span| (span.style.clone(), span.range.clone()))
            .collect();
        assert_eq!(spans, [(Style::Blockquote, 0..3), (Style::Bold, 2..3)]);
    }
}
