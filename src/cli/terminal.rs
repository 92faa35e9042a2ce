//! Replies as a terminal shows them.
//!
//! The socket carries Markdown unchanged — the model's answers and the
//! daemon's own notices, failures and approval prompts alike — and each
//! client renders it for itself; here it is rendered like Signal's — links
//! spelled `text (url)`, quotes marked `> `, lists, tables and headings as
//! readable text — and, when stdout is a terminal, bold, italic,
//! strikethrough and code are highlighted with ANSI escape codes. Piped or
//! redirected output gets the plain text, so scripts never see escape codes
//! (nor a literal backtick or `**`).

use anstyle::{AnsiColor, Effects, Style as Ansi};
use passepartout_gateway::markup::{Flavor, Style, Styled, render};

/// Markdown `text` as printed, of any kind; `highlight` when the output
/// is a terminal.
pub(super) fn show(text: &str, highlight: bool) -> String {
    let styled = render(&inert(text), Flavor::SPELLED);
    if highlight { highlighted(&styled) } else { styled.text }
}

/// The text with escape codes at every span boundary: at each, everything
/// is reset and the styles of the spans covering what follows are set, so
/// nested and adjacent spans need no bookkeeping.
pub(super) fn highlighted(styled: &Styled) -> String {
    let mut bounds: Vec<usize> = styled
        .spans
        .iter()
        .flat_map(|span| [span.range.start, span.range.end])
        .collect();
    bounds.sort_unstable();
    bounds.dedup();
    let mut out = String::with_capacity(styled.text.len() + bounds.len() * 8);
    let mut at = 0;
    let mut current = Ansi::new();
    for bound in bounds.into_iter().chain([styled.text.len()]) {
        out.push_str(&styled.text[at..bound]);
        at = bound;
        let next = styled
            .spans
            .iter()
            .filter(|span| span.range.start <= at && at < span.range.end)
            .fold(Ansi::new(), |ansi, span| ansi_of(ansi, &span.style));
        if next != current {
            out.push_str(&current.render_reset().to_string());
            out.push_str(&next.render().to_string());
            current = next;
        }
    }
    out
}

/// `text` in the style code has, for a line inside a fenced code block.
pub(super) fn code(text: &str, highlight: bool) -> String {
    if highlight {
        let code = Ansi::new().fg_color(Some(AnsiColor::Cyan.into()));
        format!("{}{text}{}", code.render(), code.render_reset())
    } else {
        text.to_owned()
    }
}

/// `text` without the control characters a terminal would act on (an
/// escape sequence, a carriage return that overwrites the line): what the
/// model or a command wrote must not redraw what a person is approving.
/// Line breaks and tabs stay.
pub(super) fn inert(text: &str) -> std::borrow::Cow<'_, str> {
    let acts = |c: char| c.is_control() && c != '\n' && c != '\t';
    if text.chars().any(acts) {
        std::borrow::Cow::Owned(text.chars().filter(|&c| !acts(c)).collect())
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// A remark about a reply rather than part of it (` [stopped]`), dimmed.
pub(super) fn remark(text: &str, highlight: bool) -> String {
    if highlight {
        let dim = Ansi::new().dimmed();
        format!("{}{text}{}", dim.render(), dim.render_reset())
    } else {
        text.to_owned()
    }
}

fn ansi_of(ansi: Ansi, style: &Style) -> Ansi {
    match style {
        Style::Bold => ansi.effects(ansi.get_effects() | Effects::BOLD),
        Style::Italic => ansi.effects(ansi.get_effects() | Effects::ITALIC),
        Style::Strikethrough => ansi.effects(ansi.get_effects() | Effects::STRIKETHROUGH),
        Style::Code | Style::Pre { .. } => ansi.fg_color(Some(AnsiColor::Cyan.into())),
        Style::Link { .. } => ansi.effects(ansi.get_effects() | Effects::UNDERLINE),
        Style::Blockquote => ansi,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARKDOWN: &str = "# Plan\n\n**Run** `ls` and see [docs](https://e.com).";

    #[test]
    fn control_characters_never_reach_the_terminal() {
        let shown = show("ok\u{1b}[2K\rapproved\u{9b}31m\n\tnext", false);
        assert_eq!(shown, "ok[2Kapproved31m\nnext");
        assert_eq!(inert("plain\ttext\n"), "plain\ttext\n");
    }

    #[test]
    fn piped_output_is_plain_readable_text() {
        let shown = show(MARKDOWN, false);
        assert_eq!(shown, "Plan\n\nRun ls and see docs (https://e.com).");
    }

    #[test]
    fn a_terminal_gets_bold_and_code_highlighted() {
        let shown = show(MARKDOWN, true);
        let bold = Ansi::new().bold();
        let code = Ansi::new().fg_color(Some(AnsiColor::Cyan.into()));
        let reset = "\u{1b}[0m";
        assert_eq!(
            shown,
            format!(
                "{bold}Plan{reset}\n\n{bold}Run{reset} {code}ls{reset} and see docs (https://e.com).",
                bold = bold.render(),
                code = code.render(),
            )
        );
    }

    #[test]
    fn nested_styles_combine_and_end_together() {
        let shown = show("***both*** x", true);
        let both = Ansi::new().bold().italic();
        assert_eq!(shown, format!("{}both\u{1b}[0m x", both.render()));
    }

    #[test]
    fn a_notice_shows_no_markup() {
        let notice = "**Approved** `ab12cd34`: running `ls`.";
        assert_eq!(show(notice, false), "Approved ab12cd34: running ls.");
    }
}
