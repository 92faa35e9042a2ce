//! CommonMark into [`Styled`] text, through `pulldown-cmark`'s event stream.
//!
//! Inline styling becomes spans: strong → bold, emphasis → italic,
//! `~~strike~~`, inline code, fenced and indented code blocks (with the
//! fence's language), links and block quotes where the surface shows them
//! ([`Flavor`]). Everything else is laid out as readable text: headings as
//! bold lines, list items as `• ` or `1. ` with nested items indented,
//! tables as rows of cells joined by ` | ` (the header bold), images as
//! their alt text and URL, footnotes as `[label]`, HTML as written, a rule
//! as a line. No input is refused and no text is dropped.
//!
//! `||spoiler||` is not Markdown and is left as written: `||` is common in
//! prose and code (`a || b`), and reading it as markup would hide text.

use pulldown_cmark::{BlockQuoteKind, CodeBlockKind, Event, LinkType, Options, Parser, Tag, TagEnd};

use super::styled::{Style, Styled};
use super::writer::{Break, Writer};

/// What a surface can show as styling; the rest is spelled out as text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flavor {
    /// Links as [`Style::Link`] spans, or spelled `text (url)`.
    pub link_spans: bool,
    /// Block quotes as [`Style::Blockquote`] spans, or lines starting `> `.
    pub quote_spans: bool,
}

impl Flavor {
    /// Telegram: links and quotes are entities.
    pub const RICH: Flavor = Flavor {
        link_spans: true,
        quote_spans: true,
    };
    /// Signal and terminals: links spelled out, quotes marked with `> `.
    pub const SPELLED: Flavor = Flavor {
        link_spans: false,
        quote_spans: false,
    };
}

/// The URL schemes a link span may carry: the ones every surface opens.
const LINK_SCHEMES: &[&str] = &["http://", "https://", "mailto:", "tg://"];
/// Between blocks of a quote shown with [`Flavor::SPELLED`].
const QUOTE_PREFIX: &str = "> ";
/// The line a thematic break becomes.
const RULE: &str = "———";

/// Renders CommonMark `markdown` for a surface of `flavor`.
pub fn render(markdown: &str, flavor: Flavor) -> Styled {
    let options = Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TABLES
        | Options::ENABLE_TASKLISTS
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_GFM;
    let mut renderer = Renderer {
        flavor,
        writer: Writer::new(markdown.len()),
        lists: Vec::new(),
        quote_depth: 0,
        links: Vec::new(),
        cell: 0,
    };
    for event in Parser::new_ext(markdown, options) {
        renderer.event(event);
    }
    renderer.writer.finish()
}

struct Renderer {
    flavor: Flavor,
    writer: Writer,
    /// The next number of each enclosing list (`None`: bulleted).
    lists: Vec<Option<u64>>,
    quote_depth: usize,
    /// Open links and images: where their text starts and where they point.
    links: Vec<OpenLink>,
    /// The index of the current table cell in its row.
    cell: usize,
}

struct OpenLink {
    start: usize,
    url: String,
    /// Whether it is shown as a span (else spelled out after its text).
    span: bool,
}

impl Renderer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => self.writer.write(&text),
            Event::Code(code) => {
                self.writer.open(Style::Code);
                self.writer.write(&code);
                self.writer.close();
            }
            Event::InlineMath(math) | Event::DisplayMath(math) => self.writer.write(&math),
            Event::FootnoteReference(label) => self.writer.write(&format!("[{label}]")),
            // Lazily, so that a span closing right after one ends on its text.
            Event::SoftBreak => self.writer.request(Break::Line),
            Event::HardBreak => self.writer.hard_break(),
            Event::Rule => {
                self.block();
                self.writer.write(RULE);
                self.end_block();
            }
            Event::TaskListMarker(done) => self.writer.write(if done { "☑ " } else { "☐ " }),
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::HtmlBlock | Tag::MetadataBlock(_) => self.block(),
            Tag::Heading { .. } => {
                self.block();
                self.writer.open(Style::Bold);
            }
            Tag::BlockQuote(kind) => {
                self.block();
                self.quote_depth += 1;
                if self.flavor.quote_spans {
                    if self.quote_depth == 1 {
                        self.writer.open(Style::Blockquote);
                    }
                } else {
                    self.writer.push_prefix(QUOTE_PREFIX);
                }
                if let Some(kind) = kind {
                    self.writer.write(alert_title(kind));
                    self.writer.newline();
                }
            }
            Tag::CodeBlock(kind) => {
                self.block();
                let language = match kind {
                    CodeBlockKind::Fenced(info) => info.split_whitespace().next().map(str::to_owned),
                    CodeBlockKind::Indented => None,
                };
                self.writer.open(Style::Pre { language });
            }
            Tag::List(first) => {
                self.block();
                self.lists.push(first);
            }
            Tag::Item => {
                let marker = match self.lists.last_mut() {
                    Some(Some(number)) => {
                        *number += 1;
                        format!("{}. ", *number - 1)
                    }
                    _ => "• ".to_owned(),
                };
                self.writer.request(Break::Line);
                self.writer.marker(&marker);
                self.writer.push_prefix(indent(&marker));
            }
            Tag::FootnoteDefinition(label) => {
                self.block();
                self.writer.marker(&format!("[{label}]: "));
            }
            Tag::Table(_) => self.block(),
            Tag::TableHead => {
                self.cell = 0;
                self.writer.open(Style::Bold);
            }
            Tag::TableRow => {
                self.cell = 0;
                self.writer.request(Break::Line);
            }
            Tag::TableCell => {
                if self.cell > 0 {
                    self.writer.write(" | ");
                }
                self.cell += 1;
            }
            Tag::Emphasis => self.writer.open(Style::Italic),
            Tag::Strong => self.writer.open(Style::Bold),
            Tag::Strikethrough => self.writer.open(Style::Strikethrough),
            Tag::Link {
                link_type, dest_url, ..
            } => {
                let url = match link_type {
                    LinkType::Email => format!("mailto:{dest_url}"),
                    _ => dest_url.into_string(),
                };
                // Link text may hold an autolink; links must not nest.
                let span = self.flavor.link_spans
                    && self.links.is_empty()
                    && LINK_SCHEMES.iter().any(|scheme| has_scheme(&url, scheme));
                self.open_link(url, span);
            }
            Tag::Image { dest_url, .. } => self.open_link(dest_url.into_string(), false),
            Tag::DefinitionList
            | Tag::DefinitionListTitle
            | Tag::DefinitionListDefinition
            | Tag::Superscript
            | Tag::Subscript => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock | TagEnd::MetadataBlock(_) | TagEnd::FootnoteDefinition => {
                self.writer.trim_newlines();
                self.end_block();
            }
            TagEnd::Heading(_) => {
                self.writer.close();
                self.end_block();
            }
            TagEnd::BlockQuote(_) => {
                if self.flavor.quote_spans {
                    if self.quote_depth == 1 {
                        self.writer.close();
                    }
                } else {
                    self.writer.pop_prefix();
                }
                self.quote_depth -= 1;
                self.end_block();
            }
            TagEnd::CodeBlock => {
                self.writer.trim_newlines();
                self.writer.close();
                self.end_block();
            }
            TagEnd::List(_) => {
                self.lists.pop();
                self.end_block();
            }
            TagEnd::Item => {
                self.writer.pop_prefix();
                self.writer.request(Break::Line);
            }
            TagEnd::Table => self.end_block(),
            TagEnd::TableHead => {
                self.writer.close();
                self.writer.request(Break::Line);
            }
            TagEnd::TableRow => self.writer.request(Break::Line),
            TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => self.writer.close(),
            TagEnd::Link | TagEnd::Image => self.close_link(),
            TagEnd::TableCell
            | TagEnd::DefinitionList
            | TagEnd::DefinitionListTitle
            | TagEnd::DefinitionListDefinition
            | TagEnd::Superscript
            | TagEnd::Subscript => {}
        }
    }

    /// A block starts: it begins on a line of its own.
    fn block(&mut self) {
        self.writer.request(Break::Line);
        self.writer.flush_break();
    }

    /// A block ended: a blank line follows it, or a line break inside a list.
    fn end_block(&mut self) {
        let wanted = if self.lists.is_empty() {
            Break::Paragraph
        } else {
            Break::Line
        };
        self.writer.request(wanted);
    }

    fn open_link(&mut self, url: String, span: bool) {
        self.writer.flush_break();
        self.links.push(OpenLink {
            start: self.writer.len(),
            url,
            span,
        });
    }

    /// Ends a link or image: a span over its text, or its URL spelled out
    /// after it, on its line (alone when there is no text, not at all when
    /// the text is the URL already, as in `<https://…>`).
    fn close_link(&mut self) {
        let Some(link) = self.links.pop() else { return };
        let text = self.writer.text_from(link.start);
        let spelled = link.url.strip_prefix("mailto:").unwrap_or(&link.url);
        let (empty, shown) = (text.is_empty(), text == link.url || text == spelled);
        if empty {
            self.writer.append(&link.url);
        } else if !link.span && !link.url.is_empty() && !shown {
            self.writer.append(&format!(" ({})", link.url));
        }
        if link.span {
            self.writer.span(link.start, Style::Link { url: link.url });
        }
    }
}

/// Whether `url` starts with `scheme`, in any case (`HTTPS://` too).
fn has_scheme(url: &str, scheme: &str) -> bool {
    url.get(..scheme.len())
        .is_some_and(|start| start.eq_ignore_ascii_case(scheme))
}

/// The indent under a list item: as wide as its marker.
fn indent(marker: &str) -> &'static str {
    const SPACES: &str = "                ";
    &SPACES[..marker.chars().count().min(SPACES.len())]
}

/// The first line of a GitHub alert (`> [!NOTE]`).
fn alert_title(kind: BlockQuoteKind) -> &'static str {
    match kind {
        BlockQuoteKind::Note => "Note",
        BlockQuoteKind::Tip => "Tip",
        BlockQuoteKind::Important => "Important",
        BlockQuoteKind::Warning => "Warning",
        BlockQuoteKind::Caution => "Caution",
    }
}
