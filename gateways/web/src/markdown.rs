//! The assistant's Markdown as HTML for the chat page: rendered once by the
//! contract's renderer (the same one every messenger uses) into plain text
//! and styled ranges, then written out with every character of the text
//! escaped. The only markup is the tags this file writes — bold, italic,
//! code, code blocks as `<pre><code>`, quotes, links to the schemes the
//! renderer allows — so nothing a model writes becomes markup or script.

use passepartout_gateway::markup::{Flavor, Style, render};

use crate::escape::html;

/// `markdown` as HTML safe to put inside an element.
pub fn to_html(markdown: &str) -> String {
    let styled = render(markdown, Flavor::RICH).trim_end();
    let text = styled.text.as_str();
    let mut out = String::with_capacity(text.len() * 2);
    // The spans are nested and ordered by start, outer first: a stack of
    // the open ones' ends and closing tags is enough.
    let mut open: Vec<(usize, &'static str)> = Vec::new();
    let mut at = 0;
    for span in &styled.spans {
        while let Some(&(end, close)) = open.last()
            && end <= span.range.start
        {
            out += &html(&text[at..end]);
            out += close;
            at = end;
            open.pop();
        }
        out += &html(&text[at..span.range.start]);
        at = span.range.start;
        if matches!(span.style, Style::Pre { .. }) {
            // A block of its own: the blank lines around it would only
            // widen the gap its margins make.
            trim_newlines(&mut out);
        }
        let (tag, close) = tags(&span.style);
        out += &tag;
        open.push((span.range.end, close));
    }
    while let Some((end, close)) = open.pop() {
        out += &html(&text[at..end]);
        out += close;
        at = end;
    }
    out += &html(&text[at..]);
    out.replace("</pre>\n\n", "</pre>").replace("</pre>\n", "</pre>")
}

/// Drops the newlines `out` ends with.
fn trim_newlines(out: &mut String) {
    while out.ends_with('\n') {
        out.pop();
    }
}

/// The opening and closing tags of `style`.
fn tags(style: &Style) -> (String, &'static str) {
    match style {
        Style::Bold => ("<strong>".into(), "</strong>"),
        Style::Italic => ("<em>".into(), "</em>"),
        Style::Strikethrough => ("<s>".into(), "</s>"),
        Style::Code => ("<code>".into(), "</code>"),
        Style::Pre {
            language: Some(language),
        } => (
            format!(r#"<pre><code class="language-{}">"#, html(language)),
            "</code></pre>",
        ),
        Style::Pre { language: None } => ("<pre><code>".into(), "</code></pre>"),
        Style::Link { url } => (format!(r#"<a href="{}" rel="noopener noreferrer">"#, html(url)), "</a>"),
        Style::Blockquote => ("<blockquote>".into(), "</blockquote>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn styling_becomes_tags_and_code_blocks_pre_code() {
        let html = to_html("Say **hi** in `sh`:\n\n```sh\necho hi\n```\n");
        assert!(html.contains("<strong>hi</strong>"), "{html}");
        assert!(html.contains("<code>sh</code>"), "{html}");
        assert!(
            html.contains(r#"in <code>sh</code>:<pre><code class="language-sh">echo hi</code></pre>"#),
            "{html}"
        );
    }

    #[test]
    fn markup_and_script_in_a_reply_stay_text() {
        let html =
            to_html("<script>alert(1)</script> and <b onclick=\"x\">bold</b>\n\n```\n</code></pre><img src=x>\n```");
        assert!(
            !html.contains("<script") && !html.contains("<b ") && !html.contains("<img"),
            "{html}"
        );
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(
            html.contains("<pre><code>&lt;/code&gt;&lt;/pre&gt;&lt;img src=x&gt;</code></pre>"),
            "{html}"
        );
    }

    #[test]
    fn only_safe_links_are_links() {
        let html = to_html("[docs](https://example.org/?a=1&b=\"2\") and [bad](javascript:alert(1))");
        assert!(
            html.contains(r#"<a href="https://example.org/?a=1&amp;b=%222%22" rel="noopener noreferrer">docs</a>"#)
                || html.contains(
                    r#"<a href="https://example.org/?a=1&amp;b=&quot;2&quot;" rel="noopener noreferrer">docs</a>"#
                ),
            "{html}"
        );
        assert!(!html.contains("href=\"javascript"), "{html}");
    }
}
