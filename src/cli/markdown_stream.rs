//! Markdown rendered while it streams in, line by line.
//!
//! A line the model has finished is rendered once (with the contract's
//! `markup::render`, as a finished reply is) and printed for good. The
//! unfinished last line is, at a terminal, drawn provisionally and redrawn
//! as more of it arrives: a bold or code marker still open is closed for
//! the drawing (or hidden while nothing follows it), so the person never
//! sees a raw `**`. Fenced code blocks are tracked across lines, so a code
//! line shows as code while the block is still open; the fences themselves
//! are not shown, as in a finished reply. Where output is not a terminal,
//! nothing is drawn provisionally: each line is printed, plain, once it is
//! complete.

use std::borrow::Cow;
use std::io::Write;

use passepartout_gateway::markup::{Flavor, render};
use unicode_width::UnicodeWidthStr;

use super::terminal;

/// The columns assumed when the terminal does not say.
pub(super) const DEFAULT_WIDTH: usize = 80;

/// How the stream is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Surface {
    /// A terminal `width` columns wide: escape codes, and the unfinished
    /// line drawn as it grows.
    Terminal { width: usize },
    /// A pipe or a file: plain text, a line at a time.
    Plain,
}

/// The rendering of one streamed reply.
#[derive(Debug)]
pub(super) struct MarkdownStream {
    surface: Surface,
    /// The unfinished last line, as received.
    tail: String,
    /// The plain width of the tail as drawn, when it is on screen.
    drawn: Option<usize>,
    /// Inside a fenced code block.
    in_fence: bool,
}

impl MarkdownStream {
    pub(super) fn new(surface: Surface) -> MarkdownStream {
        MarkdownStream {
            surface,
            tail: String::new(),
            drawn: None,
            in_fence: false,
        }
    }

    /// Shows `text`, more of the reply.
    pub(super) fn push(&mut self, out: &mut impl Write, text: &str) {
        self.tail.push_str(text);
        let mut lines = String::new();
        while let Some(end) = self.tail.find('\n') {
            let line: String = self.tail.drain(..=end).collect();
            if let Some(shown) = self.line(line.trim_end_matches(['\n', '\r'])) {
                lines.push_str(&shown);
                lines.push('\n');
            }
        }
        let mut frame = String::new();
        if !lines.is_empty() {
            self.erase(&mut frame);
            frame.push_str(&lines);
        }
        if let Surface::Terminal { .. } = self.surface {
            let (shown, width) = self.provisional();
            self.erase(&mut frame);
            frame.push_str(&shown);
            self.drawn = Some(width);
        }
        let _ = out.write_all(frame.as_bytes());
        let _ = out.flush();
    }

    /// Ends the reply: its last line shown for good, then `remark` (such as
    /// ` [stopped]`) if any, and the end of the line.
    pub(super) fn end(&mut self, out: &mut impl Write, remark: Option<&str>) {
        let mut frame = String::new();
        self.erase(&mut frame);
        let tail = std::mem::take(&mut self.tail);
        if let Some(shown) = self.line(&tail) {
            frame.push_str(&shown);
        }
        if let Some(remark) = remark {
            frame.push_str(&terminal::remark(remark, self.highlight()));
        }
        frame.push('\n');
        self.in_fence = false;
        let _ = out.write_all(frame.as_bytes());
        let _ = out.flush();
    }

    fn highlight(&self) -> bool {
        matches!(self.surface, Surface::Terminal { .. })
    }

    /// Adds to `frame` what clears the provisional tail from the screen,
    /// leaving the cursor where it began.
    fn erase(&mut self, frame: &mut String) {
        let (Some(width), Surface::Terminal { width: columns }) = (self.drawn.take(), self.surface) else {
            return;
        };
        // A line exactly as wide as the terminal leaves the cursor on its
        // last row, so it is the rows after the first that the tail wrapped to.
        let rows_up = width.saturating_sub(1) / columns.max(1);
        if rows_up > 0 {
            frame.push_str(&format!("\u{1b}[{rows_up}A"));
        }
        frame.push_str("\r\u{1b}[J");
    }

    /// A finished line as shown (`None`: not shown, as a fence is not),
    /// noting where fenced code begins and ends.
    fn line(&mut self, line: &str) -> Option<String> {
        if is_fence(line) {
            self.in_fence = !self.in_fence;
            return None;
        }
        if self.in_fence {
            return Some(terminal::code(line, self.highlight()));
        }
        Some(self.rendered(line))
    }

    /// The unfinished tail as drawn for now, and its plain width.
    fn provisional(&self) -> (String, usize) {
        let tail = self.tail.as_str();
        if tail.is_empty() || is_fence(tail) || (!self.in_fence && "```".starts_with(tail.trim_start())) {
            return (String::new(), 0);
        }
        if self.in_fence {
            return (terminal::code(tail, true), tail.width());
        }
        let closed = close_open_markers(tail);
        let shown = self.rendered(&closed);
        let width = render(closed.trim_start(), Flavor::SPELLED).text.width() + indent(&closed).len();
        (shown, width)
    }

    /// One line of Markdown rendered, its indent kept (a nested list item
    /// rendered alone would lose it).
    fn rendered(&self, line: &str) -> String {
        let indent = indent(line);
        let styled = render(&line[indent.len()..], Flavor::SPELLED);
        let text = if self.highlight() {
            terminal::highlighted(&styled)
        } else {
            styled.text
        };
        format!("{indent}{text}")
    }
}

fn indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start().len()]
}

/// A code fence: three backticks or tildes, indented less than four spaces.
fn is_fence(line: &str) -> bool {
    let trimmed = line.trim_start();
    indent(line).len() < 4 && (trimmed.starts_with("```") || trimmed.starts_with("~~~"))
}

/// `line` with its open inline markers settled for drawing: an open code
/// span, `**` or `~~` closed after what follows it, or cut off when nothing
/// does yet; an unfinished link is held back until it is whole.
fn close_open_markers(line: &str) -> Cow<'_, str> {
    // Each open marker: its text and where it starts.
    let mut open: Vec<(&str, usize)> = Vec::new();
    let mut link: Option<usize> = None;
    let bytes = line.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let rest = &bytes[at..];
        if open.last().is_some_and(|(marker, _)| *marker == "`") {
            if rest[0] == b'`' {
                open.pop();
            }
            at += 1;
            continue;
        }
        match ["**", "~~", "`"].into_iter().find(|m| rest.starts_with(m.as_bytes())) {
            Some(marker) => {
                match open.iter().rposition(|(m, _)| *m == marker) {
                    Some(index) => open.truncate(index),
                    None => open.push((marker, at)),
                }
                at += marker.len();
            }
            None => {
                match rest[0] {
                    b'[' => link = Some(at),
                    b')' if link.is_some_and(|start| line[start..at].contains("](")) => link = None,
                    _ => {}
                }
                at += 1;
            }
        }
    }
    // A bracket that turned out not to start a link (`[x] done`) stays.
    let link = link.filter(|&start| {
        let after = &line[start..];
        !after.contains(']') || after.contains("](")
    });
    if open.is_empty() && link.is_none() {
        return Cow::Borrowed(line);
    }
    let mut end = line.len();
    if let Some(start) = link {
        end = start;
        open.retain(|&(_, at)| at < start);
    }
    let mut text = line[..end].to_owned();
    while let Some((marker, start)) = open.pop() {
        if text[start + marker.len()..].trim().is_empty() {
            text.truncate(start);
        } else {
            text.truncate(text.trim_end().len());
            text.push_str(marker);
        }
    }
    Cow::Owned(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(surface: Surface, pieces: &[&str]) -> String {
        let mut out = Vec::new();
        let mut stream = MarkdownStream::new(surface);
        for piece in pieces {
            stream.push(&mut out, piece);
        }
        stream.end(&mut out, None);
        String::from_utf8(out).unwrap()
    }

    /// What a terminal would show after `raw`: the erased tails gone.
    fn screen(raw: &str) -> String {
        let mut lines: Vec<String> = vec![String::new()];
        let mut rest = raw;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("\r\u{1b}[J") {
                lines.last_mut().unwrap().clear();
                rest = after;
            } else if let Some(after) = rest.strip_prefix('\n') {
                lines.push(String::new());
                rest = after;
            } else {
                let c = rest.chars().next().unwrap();
                lines.last_mut().unwrap().push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        lines.join("\n")
    }

    #[test]
    fn open_markers_are_closed_or_hidden_while_a_line_is_written() {
        assert_eq!(close_open_markers("Run **this"), "Run **this**");
        assert_eq!(close_open_markers("Run **"), "Run ");
        assert_eq!(close_open_markers("Run **this "), "Run **this**");
        assert_eq!(close_open_markers("Run `ls -"), "Run `ls -`");
        assert_eq!(close_open_markers("a `**` b"), "a `**` b", "a marker in code is code");
        assert_eq!(close_open_markers("**done** and ~~x"), "**done** and ~~x~~");
        assert_eq!(close_open_markers("see [docs](https://e"), "see ");
        assert_eq!(
            close_open_markers("see [docs](https://e.com) now"),
            "see [docs](https://e.com) now"
        );
        assert_eq!(close_open_markers("[x] done"), "[x] done");
        assert_eq!(close_open_markers("plain"), "plain");
    }

    #[test]
    fn a_terminal_never_shows_a_raw_marker_while_bold_streams() {
        let raw = shown(Surface::Terminal { width: 80 }, &["Use **bo", "ld** now"]);
        assert!(!raw.contains("**"), "{raw:?}");
        let bold = anstyle::Style::new().bold().render().to_string();
        assert!(raw.contains(&format!("{bold}bo")), "drawn bold while open: {raw:?}");
        assert_eq!(screen(&raw), format!("Use {bold}bold\u{1b}[0m now\n"));
    }

    #[test]
    fn code_blocks_show_as_code_while_open_and_fences_are_not_shown() {
        let piped = shown(
            Surface::Plain,
            &["Try:\n```", "sh\nls **x**\n", "echo\n```\n", "- one\n- two"],
        );
        assert_eq!(piped, "Try:\nls **x**\necho\n• one\n• two\n");
        let raw = shown(Surface::Terminal { width: 80 }, &["```rust\nfn main() {}"]);
        let cyan = anstyle::Style::new().fg_color(Some(anstyle::AnsiColor::Cyan.into()));
        assert!(
            raw.contains(&format!("{}fn main() {{}}", cyan.render())),
            "code while the block is open: {raw:?}"
        );
        assert!(!raw.contains("```"), "{raw:?}");
    }

    #[test]
    fn piped_output_is_plain_and_whole_lines_only() {
        let mut out = Vec::new();
        let mut stream = MarkdownStream::new(Surface::Plain);
        stream.push(&mut out, "**Hi** [docs](https://e.com)");
        assert!(out.is_empty(), "nothing before the line is whole");
        stream.push(&mut out, "\nnext");
        assert_eq!(String::from_utf8_lossy(&out), "Hi docs (https://e.com)\n");
        stream.end(&mut out, Some(" [stopped]"));
        assert_eq!(
            String::from_utf8_lossy(&out),
            "Hi docs (https://e.com)\nnext [stopped]\n"
        );
    }

    #[test]
    fn a_wrapped_tail_is_erased_from_its_first_row() {
        let mut out = Vec::new();
        let mut stream = MarkdownStream::new(Surface::Terminal { width: 10 });
        stream.push(&mut out, "abcdefghijklmnopqrstuvwxy");
        out.clear();
        stream.push(&mut out, "z");
        let raw = String::from_utf8(out).unwrap();
        assert!(raw.starts_with("\u{1b}[2A\r\u{1b}[J"), "three rows, two up: {raw:?}");
        // Exactly two rows wide: the cursor is still on the second.
        let mut out = Vec::new();
        let mut stream = MarkdownStream::new(Surface::Terminal { width: 10 });
        stream.push(&mut out, "abcdefghijklmnopqrst");
        out.clear();
        stream.push(&mut out, "\n");
        assert!(String::from_utf8(out).unwrap().starts_with("\u{1b}[1A\r"));
    }
}
