//! A reply's Markdown as Matrix shows it: the plain `body` every client
//! can read, and the `formatted_body` in the HTML subset the specification
//! names, both from the renderer every surface uses.

use passepartout_gateway::markup::{Flavor, Style, Styled, render};

/// `markdown` as Matrix's plain body and its HTML.
pub fn formatted(markdown: &str) -> (String, String) {
    let styled = render(markdown, Flavor::RICH).trim_end();
    let html = to_html(&styled);
    (styled.text, html)
}

/// The HTML of `styled`: its spans as tags, its text escaped, its line
/// breaks as `<br>` outside code blocks.
pub fn to_html(styled: &Styled) -> String {
    let text = &styled.text;
    let mut html = String::with_capacity(text.len() + styled.spans.len() * 16);
    // Spans are properly nested and ordered by start, outer first.
    let mut open: Vec<(usize, &Style)> = Vec::new();
    let mut spans = styled.spans.iter().peekable();
    let mut at = 0;
    while at < text.len() || !open.is_empty() {
        if let Some(&(end, style)) = open.last()
            && end == at
        {
            html.push_str(closing(style));
            open.pop();
            continue;
        }
        if let Some(span) = spans.next_if(|span| span.range.start == at) {
            html.push_str(&opening(&span.style));
            open.push((span.range.end, &span.style));
            continue;
        }
        let next = [
            open.last().map(|(end, _)| *end),
            spans.peek().map(|span| span.range.start),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(text.len());
        let in_code = open.iter().any(|(_, style)| matches!(style, Style::Pre { .. }));
        push_text(&mut html, &text[at..next], in_code);
        at = next;
    }
    html
}

fn opening(style: &Style) -> String {
    match style {
        Style::Bold => "<strong>".into(),
        Style::Italic => "<em>".into(),
        Style::Strikethrough => "<del>".into(),
        Style::Code => "<code>".into(),
        Style::Pre {
            language: Some(language),
        } => {
            format!("<pre><code class=\"language-{}\">", escape(language))
        }
        Style::Pre { language: None } => "<pre><code>".into(),
        Style::Link { url } => format!("<a href=\"{}\">", escape(url)),
        Style::Blockquote => "<blockquote>".into(),
    }
}

fn closing(style: &Style) -> &'static str {
    match style {
        Style::Bold => "</strong>",
        Style::Italic => "</em>",
        Style::Strikethrough => "</del>",
        Style::Code => "</code>",
        Style::Pre { .. } => "</code></pre>",
        Style::Link { .. } => "</a>",
        Style::Blockquote => "</blockquote>",
    }
}

fn push_text(html: &mut String, text: &str, in_code: bool) {
    for (index, line) in text.split('\n').enumerate() {
        if index > 0 {
            html.push_str(if in_code { "\n" } else { "<br>" });
        }
        html.push_str(&escape(line));
    }
}

/// `text` with HTML's special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_becomes_nested_tags_and_escaped_text() {
        let (body, html) = formatted("**bold _both_** and `a<b` then [link](https://x.org/?a=1&b=2)\nnext");
        assert_eq!(body, "bold both and a<b then link\nnext");
        assert_eq!(
            html,
            "<strong>bold <em>both</em></strong> and <code>a&lt;b</code> then \
             <a href=\"https://x.org/?a=1&amp;b=2\">link</a><br>next"
        );
    }

    #[test]
    fn a_code_block_keeps_its_lines_and_its_language() {
        let (_, html) = formatted("```rust\nfn main() {}\nlet x = 1 < 2;\n```");
        assert_eq!(
            html,
            "<pre><code class=\"language-rust\">fn main() {}\nlet x = 1 &lt; 2;</code></pre>"
        );
    }

    #[test]
    fn plain_text_is_its_own_html_and_nothing_is_lost() {
        let (body, html) = formatted("just words");
        assert_eq!((body.as_str(), html.as_str()), ("just words", "just words"));
        let (body, html) = formatted("<script>alert(1)</script>");
        assert!(!html.contains("<script>"), "{html}");
        assert!(body.contains("<script>"), "the plain body is shown as text: {body}");
    }
}
