//! What each piece of Markdown becomes, per flavor.

use super::*;

/// The text, and each span as its style and the text it covers.
fn shown(markdown: &str, flavor: Flavor) -> (String, Vec<(Style, String)>) {
    let styled = render(markdown, flavor);
    let spans = styled
        .spans
        .iter()
        .map(|span| (span.style.clone(), styled.text[span.range.clone()].to_owned()))
        .collect();
    (styled.text, spans)
}

fn rich(markdown: &str) -> (String, Vec<(Style, String)>) {
    shown(markdown, Flavor::RICH)
}

fn s(style: Style, text: &str) -> (Style, String) {
    (style, text.to_owned())
}

#[test]
fn inline_styles_become_spans_over_plain_text() {
    let (text, spans) = rich("Some **bold**, *italic*, ~~gone~~ and `code`.");
    assert_eq!(text, "Some bold, italic, gone and code.");
    assert_eq!(
        spans,
        [
            s(Style::Bold, "bold"),
            s(Style::Italic, "italic"),
            s(Style::Strikethrough, "gone"),
            s(Style::Code, "code")
        ]
    );
}

#[test]
fn nested_styles_nest() {
    let (text, spans) = rich("**bold *both* `x`**");
    assert_eq!(text, "bold both x");
    assert_eq!(
        spans,
        [
            s(Style::Bold, "bold both x"),
            s(Style::Italic, "both"),
            s(Style::Code, "x")
        ]
    );
}

#[test]
fn a_fenced_code_block_keeps_its_language_and_its_lines() {
    let (text, spans) = rich("Run:\n\n```rust ignore\nfn main() {\n    **not bold**\n}\n```\n\nDone.");
    assert_eq!(text, "Run:\n\nfn main() {\n    **not bold**\n}\n\nDone.");
    let pre = Style::Pre {
        language: Some("rust".into()),
    };
    assert_eq!(spans, [s(pre, "fn main() {\n    **not bold**\n}")]);
    let (_, spans) = rich("    indented\n");
    assert_eq!(spans, [s(Style::Pre { language: None }, "indented")]);
}

#[test]
fn links_are_spans_on_a_rich_surface_and_spelled_elsewhere() {
    let markdown = "See [the docs](https://example.com/d) or <https://example.com>.";
    let (text, spans) = rich(markdown);
    assert_eq!(text, "See the docs or https://example.com.");
    assert_eq!(
        spans,
        [
            s(
                Style::Link {
                    url: "https://example.com/d".into()
                },
                "the docs"
            ),
            s(
                Style::Link {
                    url: "https://example.com".into()
                },
                "https://example.com"
            ),
        ]
    );
    let (text, spans) = shown(markdown, Flavor::SPELLED);
    assert_eq!(text, "See the docs (https://example.com/d) or https://example.com.");
    assert!(spans.is_empty());
}

#[test]
fn a_link_no_surface_can_open_is_spelled_out_and_an_empty_one_shows_its_url() {
    let (text, spans) = rich("[notes](notes.md), [](https://a.example) and [x](javascript:alert(1))");
    assert_eq!(text, "notes (notes.md), https://a.example and x (javascript:alert(1))");
    assert_eq!(
        spans,
        [s(
            Style::Link {
                url: "https://a.example".into()
            },
            "https://a.example"
        )]
    );
    let (text, spans) = rich("<ada@example.com>");
    assert_eq!(text, "ada@example.com");
    assert_eq!(
        spans,
        [s(
            Style::Link {
                url: "mailto:ada@example.com".into()
            },
            "ada@example.com"
        )]
    );
}

#[test]
fn an_autolink_in_a_link_text_is_not_a_second_link() {
    let (text, spans) = rich("[<https://a.example>](https://b.example)");
    assert_eq!(text, "https://a.example");
    assert_eq!(
        spans,
        [s(
            Style::Link {
                url: "https://b.example".into()
            },
            "https://a.example"
        )]
    );
}

#[test]
fn headings_are_bold_lines_and_blocks_are_paragraphs() {
    let (text, spans) = rich("# Title\nIntro line\nsecond line\n\n## Part `two`\n\nBody");
    assert_eq!(text, "Title\n\nIntro line\nsecond line\n\nPart two\n\nBody");
    assert_eq!(
        spans,
        [
            s(Style::Bold, "Title"),
            s(Style::Bold, "Part two"),
            s(Style::Code, "two")
        ]
    );
}

#[test]
fn lists_get_bullets_numbers_and_indents() {
    let markdown =
        "Steps:\n\n1. first\n2. second\n   - inner *a*\n   - inner b\n3. third\n\n- [x] done\n- [ ] todo\n\nAfter.";
    let (text, spans) = rich(markdown);
    assert_eq!(
        text,
        "Steps:\n\n1. first\n2. second\n   • inner a\n   • inner b\n3. third\n\n• ☑ done\n• ☐ todo\n\nAfter."
    );
    assert_eq!(spans, [s(Style::Italic, "a")]);
    let (text, _) = rich("7. seven\n8. eight");
    assert_eq!(text, "7. seven\n8. eight");
}

#[test]
fn an_empty_item_leaves_what_follows_on_lines_of_its_own() {
    let (text, _) = rich("- \n\nAfter the list.");
    assert_eq!(text, "• \n\nAfter the list.");
}

#[test]
fn a_loose_list_keeps_each_item_on_its_marker_line() {
    let (text, _) = rich("- one\n\n  more of one\n\n- two\n");
    assert_eq!(text, "• one\n  more of one\n• two");
}

#[test]
fn a_table_becomes_rows_with_a_bold_header() {
    let (text, spans) = rich("| Name | Qty |\n|---|--:|\n| apple | 3 |\n| `pear` | 10 |\n\nEnd");
    assert_eq!(text, "Name | Qty\napple | 3\npear | 10\n\nEnd");
    assert_eq!(spans, [s(Style::Bold, "Name | Qty"), s(Style::Code, "pear")]);
}

#[test]
fn quotes_are_a_span_or_marked_lines() {
    let markdown = "> quoted **text**\n> > deeper\n\nafter";
    let (text, spans) = rich(markdown);
    assert_eq!(text, "quoted text\n\ndeeper\n\nafter");
    assert_eq!(
        spans,
        [s(Style::Blockquote, "quoted text\n\ndeeper"), s(Style::Bold, "text")],
        "only the outer quote is a span: quotes do not nest on Telegram"
    );
    let (text, _) = shown("> one\n>\n> two\n\nafter", Flavor::SPELLED);
    assert_eq!(text, "> one\n>\n> two\n\nafter");
}

#[test]
fn images_html_footnotes_and_rules_stay_readable() {
    let (text, spans) = rich("![a cat](https://example.com/cat.png)\n\n![](https://e.com/x.png)");
    assert_eq!(text, "a cat (https://example.com/cat.png)\n\nhttps://e.com/x.png");
    assert!(spans.is_empty());
    let (text, _) = rich("<div>\nraw <b>html</b>\n</div>\n\nan <i>inline</i> tag");
    assert_eq!(text, "<div>\nraw <b>html</b>\n</div>\n\nan <i>inline</i> tag");
    let (text, _) = rich("Claim[^1].\n\n[^1]: Source.\n\n---\n\nEnd");
    assert_eq!(text, "Claim[1].\n\n[1]: Source.\n\n———\n\nEnd");
}

#[test]
fn spoiler_bars_are_left_as_written() {
    let (text, spans) = rich("a || b and ||secret||");
    assert_eq!(text, "a || b and ||secret||");
    assert!(spans.is_empty());
}

#[test]
fn nothing_is_refused() {
    for markdown in [
        "",
        "   \n\n  ",
        "**",
        "[",
        "```",
        "<",
        "- ",
        "|a|\n|-|",
        "\0",
        "> ",
        "*a **b* c**",
    ] {
        let styled = render(markdown, Flavor::RICH);
        assert_eq!(styled.text, styled.text.trim_end(), "{markdown:?}");
    }
}

#[test]
fn deep_nesting_cannot_make_the_text_grow_past_its_markdown() {
    // Lazy lines continue the innermost quote: each would repeat all 2000
    // levels (8 MB of text); at most eight are shown.
    let markdown = format!("{}x\n{}", "> ".repeat(2000), "y\n".repeat(2000));
    let text = shown(&markdown, Flavor::SPELLED).0;
    assert!(
        text.len() < 20 * markdown.len(),
        "{} bytes from {}",
        text.len(),
        markdown.len()
    );
    assert!(text.starts_with(&format!("{}x\n", "> ".repeat(8))));
    let markdown = format!("{}x\n{}", "- ".repeat(2000), "y\n".repeat(2000));
    let text = rich(&markdown).0;
    assert!(
        text.len() < 20 * markdown.len(),
        "{} bytes from {}",
        text.len(),
        markdown.len()
    );
}

#[test]
fn a_link_text_ending_in_a_line_break_keeps_its_span_inside_the_quote() {
    // The link's text ends in a soft break, and its paragraph ends right
    // after it: the link's span must end on its text, inside the quote.
    let markdown = "> **\r\n[```rust\n](https://example.com/p?q=1)\n\n- ";
    let (text, spans) = rich(markdown);
    assert_eq!(text, "**\n```rust\n\n•");
    let link = Style::Link {
        url: "https://example.com/p?q=1".into(),
    };
    assert_eq!(spans, [s(Style::Blockquote, "**\n```rust"), s(link, "```rust")]);
    let (text, spans) = shown(markdown, Flavor::SPELLED);
    assert_eq!(text, "> **\n> ```rust (https://example.com/p?q=1)\n\n•");
    assert!(spans.is_empty());
}

#[test]
fn line_breaks_in_a_paragraph_stay_between_its_lines() {
    let (text, spans) = rich("one\n*two*\\\n\\\nthree");
    assert_eq!(text, "one\ntwo\n\nthree", "two hard breaks leave a blank line");
    assert_eq!(spans, [s(Style::Italic, "two")]);
    let (text, _) = shown("> [a\n](https://e.com)\n> c", Flavor::SPELLED);
    assert_eq!(text, "> a (https://e.com)\n> c", "a URL stays beside its text");
}
