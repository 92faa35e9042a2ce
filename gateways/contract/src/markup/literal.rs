//! Values put into Markdown that is rendered later: a command, a file name,
//! a person's words inside a sentence the daemon writes. Each helper makes
//! Markdown that [`render`](super::render) turns back into exactly the
//! value, whatever it holds — a backtick in a command cannot close its code
//! span, a `*` in a file name starts no emphasis, a `<b>` stays text.
//!
//! - [`escape`]: the value as ordinary text (a backslash before each mark
//!   that could start markup, which CommonMark then shows as written);
//! - [`code`]: the value as an inline code span, fenced by more backticks
//!   than any run inside it;
//! - [`code_block`]: the value as a fenced code block, for what may span
//!   lines (a shell command) and should read as it will run.

/// Marks that start markup wherever they stand.
const ALWAYS: &str = "\\`*_[]<>#|~&";

/// `text` as Markdown that renders as `text` itself. Only what could start
/// markup is escaped, so the Markdown stays readable where it is read raw:
/// [`ALWAYS`] anywhere, any punctuation where a line starts, and the `.` or
/// `)` after a line's first digits (an ordered list's marker).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 4);
    let (mut line_start, mut digits) = (true, true);
    for c in text.chars() {
        let marker = line_start || (digits && matches!(c, '.' | ')'));
        if c.is_ascii_punctuation() && (marker || ALWAYS.contains(c)) {
            out.push('\\');
        }
        out.push(c);
        if c == '\n' {
            (line_start, digits) = (true, true);
        } else if c != ' ' && c != '\t' {
            digits = digits && c.is_ascii_digit();
            line_start = false;
        }
    }
    out
}

/// `text` as an inline code span. Line breaks in it are shown as spaces
/// (code spans have no lines); an empty `text` is an empty string, since
/// CommonMark has no empty code span.
pub fn code(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    // A blank line would end the paragraph, and the span with it, before
    // the span is read, letting the rest render as Markdown.
    let flat;
    let text = if text.contains(['\n', '\r']) {
        flat = text.replace("\r\n", " ").replace(['\n', '\r'], " ");
        flat.as_str()
    } else {
        text
    };
    let fence = "`".repeat(longest_run(text, '`') + 1);
    // CommonMark strips one space from each end of a code span that has one
    // at both: padding keeps a backtick at an end off the fence, and keeps
    // spaces at both ends the value's own.
    let all_spaces = text.chars().all(|c| c == ' ');
    let pad =
        text.starts_with('`') || text.ends_with('`') || (text.starts_with(' ') && text.ends_with(' ') && !all_spaces);
    let pad = if pad { " " } else { "" };
    format!("{fence}{pad}{text}{pad}{fence}")
}

/// `text` as a fenced code block of its own, starting on a new line. A
/// trailing line break of `text` is not kept (a block ends its last line).
pub fn code_block(text: &str) -> String {
    let fence = "`".repeat(longest_run(text, '`').max(2) + 1);
    let body = text.strip_suffix('\n').unwrap_or(text);
    format!("{fence}\n{body}\n{fence}")
}

/// The length of the longest run of `c` in `text`.
fn longest_run(text: &str, c: char) -> usize {
    let (mut longest, mut run) = (0, 0);
    for each in text.chars() {
        run = if each == c { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::super::{Flavor, Style, render};
    use super::*;

    fn shown(markdown: &str) -> (String, Vec<Style>) {
        let styled = render(markdown, Flavor::RICH);
        (styled.text, styled.spans.into_iter().map(|span| span.style).collect())
    }

    #[test]
    fn a_backtick_cannot_break_out_of_a_code_span() {
        let command = "echo `date` ``x`` **bold**";
        assert_eq!(
            shown(&format!("Run {} now", code(command))),
            (format!("Run {command} now"), vec![Style::Code])
        );
        assert_eq!(shown(&code("`")).0, "`");
        assert_eq!(shown(&format!("[{}]", code(" a "))).0, "[ a ]");
    }

    #[test]
    fn escaped_text_starts_nothing() {
        let words = "*not* _this_ <b>x</b> [a](b) # 1. - > `c` \\ &amp;";
        assert_eq!(shown(&escape(words)), (words.to_owned(), vec![]));
        for lines in ["a\n- b", "a\n===", "a\n2. b", "a\n+ b", "> a", "1) a"] {
            assert_eq!(shown(&escape(lines)).0, lines);
        }
        assert_eq!(escape("it's well-known: 3.5 (or so)."), "it's well-known: 3.5 (or so).");
    }

    #[test]
    fn a_code_block_keeps_lines_and_fences() {
        let script = "```\necho one\n  echo two\n```";
        let styled = render(&format!("Run:\n\n{}", code_block(script)), Flavor::RICH);
        assert_eq!(styled.text, format!("Run:\n\n{script}"));
        assert_eq!(styled.spans[0].style, Style::Pre { language: None });
    }

    /// One line of any characters but line breaks, not starting or ending
    /// with a space (where Markdown trims a paragraph).
    fn line() -> impl Strategy<Value = String> {
        prop_oneof!["[^\r\n]{0,40}", "[-+=.)0-9 *_`#>|~&<!\\[\\]a]{0,12}"]
            .prop_filter("trimmed", |s| !s.is_empty() && s.trim() == s)
    }

    /// Several lines, blank ones and Markdown's block starters among them.
    fn lines() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop_oneof![
                line(),
                Just(String::new()),
                Just("# head".to_owned()),
                Just("[l](u)".to_owned())
            ],
            1..5,
        )
        .prop_map(|lines| lines.join("\n"))
    }

    proptest! {
        #[test]
        fn a_coded_value_of_several_lines_stays_one_code_span(value in lines()) {
            for flavor in [Flavor::RICH, Flavor::SPELLED] {
                let coded = render(&format!("x {} y", code(&value)), flavor);
                prop_assert!(!coded.text.contains('\n'), "{:?}", coded.text);
                prop_assert!(coded.text.starts_with("x ") && coded.text.ends_with(" y"), "{:?}", coded.text);
                prop_assert!(coded.spans.len() <= 1, "{:?}", coded.spans);
                prop_assert!(coded.spans.iter().all(|span| matches!(span.style, Style::Code)), "{:?}", coded.spans);
            }
        }

        #[test]
        fn escaped_and_coded_values_render_as_themselves(value in line()) {
            for flavor in [Flavor::RICH, Flavor::SPELLED] {
                prop_assert_eq!(render(&escape(&value), flavor).text, value.clone());
                let coded = render(&format!("x {} y", code(&value)), flavor);
                prop_assert_eq!(coded.text, format!("x {value} y"));
                let block = render(&format!("x\n\n{}", code_block(&value)), flavor);
                prop_assert_eq!(block.text, format!("x\n\n{value}"));
            }
        }
    }
}
