//! A reply printed as it is written: `chat`, and `send --stream`, show each
//! `draft` frame's text as it comes, rendered as Markdown while it streams
//! ([`MarkdownStream`]), and then print the finished reply only if it is
//! not what the draft already showed (the model started over, or the reply
//! is a notice rather than the text streamed). A reply stopped while it was
//! written (a `stopped` frame) ends its draft marked `[stopped]`, on one
//! line when nothing of it was shown yet.

use std::io::{IsTerminal, Write};

use super::markdown_stream::{DEFAULT_WIDTH, MarkdownStream, Surface};

/// What has been shown of the reply being written.
#[derive(Debug)]
pub(super) struct Streamed {
    surface: Surface,
    text: String,
    stream: MarkdownStream,
}

impl Streamed {
    /// Shown on `surface`.
    pub(super) fn new(surface: Surface) -> Streamed {
        Streamed {
            surface,
            text: String::new(),
            stream: MarkdownStream::new(surface),
        }
    }

    /// Shown on standard output: a terminal as wide as it says, or plain.
    pub(super) fn for_stdout() -> Streamed {
        Streamed::new(stdout_surface())
    }

    /// Whether some of a reply is on screen, not yet ended.
    pub(super) fn is_showing(&self) -> bool {
        !self.text.is_empty()
    }

    /// Shows a draft frame's `text`: more of the reply, or, with
    /// `restart`, a reply begun again (the earlier text stays on screen,
    /// marked as abandoned; with no text, the draft was withdrawn).
    pub(super) fn draft(&mut self, out: &mut impl Write, text: &str, restart: bool) {
        if restart && self.is_showing() {
            let why = if text.is_empty() {
                " [withdrawn]"
            } else {
                " [started over]"
            };
            self.end(out, Some(why));
        }
        if !text.is_empty() {
            self.stream.push(out, &super::terminal::inert(text));
            self.text.push_str(text);
        }
    }

    /// Ends what was shown with `remark` (` [stopped]`), if anything was.
    pub(super) fn end(&mut self, out: &mut impl Write, remark: Option<&str>) -> bool {
        if !self.is_showing() {
            return false;
        }
        self.stream.end(out, remark);
        self.text.clear();
        self.stream = MarkdownStream::new(self.surface);
        true
    }

    /// Ends a draft whose turn was stopped: what was shown of it is marked
    /// stopped; when nothing was (this terminal came in late), the
    /// `partial` text the draft showed is printed on one line, marked so.
    pub(super) fn stopped(&mut self, out: &mut impl Write, partial: &str) {
        if !self.end(out, Some(" [stopped]")) {
            let rendered = super::terminal::show(partial, false);
            let line = rendered.split_whitespace().collect::<Vec<_>>().join(" ");
            let sep = if line.is_empty() { "" } else { " " };
            let _ = writeln!(out, "{line}{sep}[stopped]");
        }
        let _ = out.flush();
    }

    /// Ends what was streamed, before the finished reply or any other
    /// message is printed; `true` when `reply` (if any, `drafted` when it
    /// is what the draft became) still needs printing.
    pub(super) fn finish(&mut self, out: &mut impl Write, reply: Option<(&str, bool)>) -> bool {
        let printed = std::mem::take(&mut self.text);
        if !printed.is_empty() {
            self.stream.end(out, None);
            self.stream = MarkdownStream::new(self.surface);
        }
        match reply {
            Some((reply, true)) => printed.is_empty() || printed != reply,
            Some((_, false)) => true,
            None => false,
        }
    }
}

/// How standard output shows a stream: a terminal of its width, or plain.
pub(super) fn stdout_surface() -> Surface {
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return Surface::Plain;
    }
    let width = rustix::termios::tcgetwinsize(&stdout)
        .map(|size| usize::from(size.ws_col))
        .unwrap_or(0);
    Surface::Terminal {
        width: if width == 0 { DEFAULT_WIDTH } else { width },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn printed(out: &[u8]) -> &str {
        std::str::from_utf8(out).unwrap()
    }

    #[test]
    fn a_streamed_reply_is_printed_once() {
        let mut out = Vec::new();
        let mut streamed = Streamed::new(Surface::Plain);
        streamed.draft(&mut out, "Hello, ", false);
        streamed.draft(&mut out, "**world**.", false);
        assert!(!streamed.finish(&mut out, Some(("Hello, **world**.", true))));
        assert_eq!(printed(&out), "Hello, world.\n");
    }

    #[test]
    fn a_reply_that_differs_from_its_draft_is_printed_whole() {
        let mut out = Vec::new();
        let mut streamed = Streamed::new(Surface::Plain);
        streamed.draft(&mut out, "Let me check", false);
        streamed.draft(&mut out, "It is 4 pm.", true);
        assert_eq!(printed(&out), "Let me check [started over]\n");
        assert!(streamed.finish(&mut out, Some(("It is 4 pm, Tuesday.", true))));
        assert!(!streamed.finish(&mut out, None), "nothing streamed, nothing to end");
        assert_eq!(printed(&out), "Let me check [started over]\nIt is 4 pm.\n");
    }

    #[test]
    fn a_stopped_draft_is_marked_and_one_never_printed_is_one_line() {
        let mut out = Vec::new();
        let mut streamed = Streamed::new(Surface::Plain);
        streamed.draft(&mut out, "Half an", false);
        streamed.stopped(&mut out, "Half an");
        assert!(!streamed.finish(&mut out, None), "the draft is ended");
        streamed.stopped(&mut out, "Once **upon**\n\na  time");
        streamed.stopped(&mut out, "");
        assert_eq!(
            printed(&out),
            "Half an [stopped]\nOnce upon a time [stopped]\n[stopped]\n"
        );
    }

    #[test]
    fn a_reply_without_a_draft_is_printed() {
        let mut out = Vec::new();
        let mut streamed = Streamed::new(Surface::Plain);
        assert!(streamed.finish(&mut out, Some(("Stopped.", false))));
        streamed.draft(&mut out, "half", false);
        assert!(
            streamed.finish(&mut out, Some(("half", false))),
            "a reply that is not the draft's is printed even when it reads the same"
        );
        assert_eq!(printed(&out), "half\n");
    }

    #[test]
    fn a_stopped_reply_ends_in_one_marked_line() {
        let mut out = Vec::new();
        let mut streamed = Streamed::new(Surface::Plain);
        assert!(
            !streamed.end(&mut out, Some(" [stopped]")),
            "nothing shown, nothing to mark"
        );
        streamed.draft(&mut out, "Counting: one, two", false);
        assert!(streamed.end(&mut out, Some(" [stopped]")));
        streamed.draft(&mut out, "", true);
        assert_eq!(printed(&out), "Counting: one, two [stopped]\n");
    }
}
