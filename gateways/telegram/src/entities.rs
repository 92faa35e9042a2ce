//! Styled text as Telegram message entities.
//!
//! A reply goes out as plain text with an `entities` list, never with a
//! `parse_mode`: Telegram then has no markup to parse, so it cannot answer
//! "can't parse entities" for anything the model wrote. The entities must
//! still follow the Bot API's nesting rules, which the neutral spans (from a
//! Markdown parse tree, so properly nested) meet after two fixes made here:
//!
//! - `code` and `pre` may not contain or be part of any other entity: bold,
//!   italic and strikethrough around code are split around it (the code
//!   keeps its monospace, loses the bold), and code inside a link is left
//!   plain (the link wins);
//! - offsets and lengths count UTF-16 code units.
//!
//! Quotes never nest (the renderer marks only the outermost one), and a link
//! is a `text_link` only for a URL Telegram can parse.

use std::ops::Range;

use passepartout_gateway::markup::{Span, Style, Styled, utf16_ranges};
use teloxide::types::{MessageEntity, MessageEntityKind};

/// The entities of `styled`, ordered by offset (outer first).
pub fn entities(styled: &Styled) -> Vec<MessageEntity> {
    let links: Vec<&Range<usize>> = styled
        .spans
        .iter()
        .filter(|span| matches!(span.style, Style::Link { .. }))
        .map(|span| &span.range)
        .collect();
    let inside_link = |range: &Range<usize>| {
        links
            .iter()
            .any(|link| link.start <= range.start && range.end <= link.end)
    };
    let code: Vec<Range<usize>> = styled
        .spans
        .iter()
        .filter(|span| span.style.is_code() && !inside_link(&span.range))
        .map(|span| span.range.clone())
        .collect();
    let mut kept: Vec<Span> = Vec::with_capacity(styled.spans.len());
    for span in &styled.spans {
        match &span.style {
            Style::Code | Style::Pre { .. } if inside_link(&span.range) => {}
            Style::Bold | Style::Italic | Style::Strikethrough => {
                kept.extend(outside(&span.range, &code).into_iter().map(|range| Span {
                    range,
                    style: span.style.clone(),
                }));
            }
            _ => kept.push(span.clone()),
        }
    }
    let ranges: Vec<Range<usize>> = kept.iter().map(|span| span.range.clone()).collect();
    let mut entities: Vec<MessageEntity> = kept
        .iter()
        .zip(utf16_ranges(&styled.text, &ranges))
        .filter_map(|(span, units)| {
            Some(MessageEntity {
                kind: kind(&span.style)?,
                offset: units.start,
                length: units.len(),
            })
        })
        .collect();
    entities.sort_by(|a, b| a.offset.cmp(&b.offset).then(b.length.cmp(&a.length)));
    entities
}

/// The entity kind of `style`; `None` for a link whose URL Telegram's
/// client library cannot parse (its text stays, unlinked).
fn kind(style: &Style) -> Option<MessageEntityKind> {
    Some(match style {
        Style::Bold => MessageEntityKind::Bold,
        Style::Italic => MessageEntityKind::Italic,
        Style::Strikethrough => MessageEntityKind::Strikethrough,
        Style::Code => MessageEntityKind::Code,
        Style::Pre { language } => MessageEntityKind::Pre {
            language: language.clone(),
        },
        Style::Link { url } => MessageEntityKind::TextLink {
            url: reqwest::Url::parse(url).ok()?,
        },
        Style::Blockquote => MessageEntityKind::Blockquote,
    })
}

/// The pieces of `range` outside every range of `holes` (sorted, disjoint).
fn outside(range: &Range<usize>, holes: &[Range<usize>]) -> Vec<Range<usize>> {
    let mut pieces = Vec::new();
    let mut start = range.start;
    for hole in holes {
        if hole.end <= start || range.end <= hole.start {
            continue;
        }
        if start < hole.start {
            pieces.push(start..hole.start);
        }
        start = start.max(hole.end);
    }
    if start < range.end {
        pieces.push(start..range.end);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use passepartout_gateway::markup::{Flavor, render};

    fn entity(kind: MessageEntityKind, offset: usize, length: usize) -> MessageEntity {
        MessageEntity { kind, offset, length }
    }

    #[test]
    fn offsets_count_utf16_units() {
        let styled = render("😀 中文 **bold** `c`", Flavor::RICH);
        assert_eq!(styled.text, "😀 中文 bold c");
        assert_eq!(
            entities(&styled),
            [
                entity(MessageEntityKind::Bold, 6, 4),
                entity(MessageEntityKind::Code, 11, 1)
            ]
        );
    }

    #[test]
    fn bold_around_code_is_split_around_it() {
        let styled = render("**a `b` c**", Flavor::RICH);
        assert_eq!(styled.text, "a b c");
        assert_eq!(
            entities(&styled),
            [
                entity(MessageEntityKind::Bold, 0, 2),
                entity(MessageEntityKind::Code, 2, 1),
                entity(MessageEntityKind::Bold, 3, 2)
            ]
        );
    }

    #[test]
    fn code_inside_a_link_is_left_plain() {
        let styled = render("[`cargo`](https://doc.rust-lang.org/cargo)", Flavor::RICH);
        let url = reqwest::Url::parse("https://doc.rust-lang.org/cargo").unwrap();
        assert_eq!(entities(&styled), [entity(MessageEntityKind::TextLink { url }, 0, 5)]);
    }

    #[test]
    fn a_code_block_is_pre_with_its_language_inside_a_quote() {
        let styled = render("> ```py\n> print(1)\n> ```", Flavor::RICH);
        let found = entities(&styled);
        let pre = MessageEntityKind::Pre {
            language: Some("py".into()),
        };
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found.contains(&entity(MessageEntityKind::Blockquote, 0, 8)));
        assert!(found.contains(&entity(pre, 0, 8)));
    }

    #[test]
    fn pieces_outside_holes() {
        assert_eq!(outside(&(0..10), &[2..4, 6..7]), [0..2, 4..6, 7..10]);
        assert_eq!(outside(&(3..5), &[0..4, 4..9]), Vec::<Range<usize>>::new());
        assert_eq!(outside(&(3..8), &[]), [Range { start: 3, end: 8 }]);
    }
}
