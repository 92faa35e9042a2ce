//! Property tests: for any Markdown, the rendered text and spans are sound,
//! and splitting keeps them so.

use std::ops::Range;

use passepartout_gateway_testing::json::config;
use passepartout_gateway_testing::markdown::{long_markdown, markdown};
use proptest::prelude::*;

use super::*;

/// Every promise of [`Styled`]: spans in bounds, on `char` boundaries, not
/// empty, in order, nested; UTF-16 conversion agrees with counting.
fn assert_sound(styled: &Styled) {
    let text = &styled.text;
    for span in &styled.spans {
        let Range { start, end } = span.range;
        assert!(start < end && end <= text.len(), "{span:?} in {text:?}");
        assert!(
            text.is_char_boundary(start) && text.is_char_boundary(end),
            "{span:?} in {text:?}"
        );
    }
    for pair in styled.spans.windows(2) {
        let (a, b) = (&pair[0].range, &pair[1].range);
        assert!(
            (a.start, std::cmp::Reverse(a.end)) <= (b.start, std::cmp::Reverse(b.end)),
            "order: {pair:?}"
        );
    }
    for (i, a) in styled.spans.iter().enumerate() {
        for b in &styled.spans[i + 1..] {
            let same_kind = matches!(
                (&a.style, &b.style),
                (Style::Link { .. }, Style::Link { .. }) | (Style::Blockquote, Style::Blockquote)
            );
            let (a, b) = (&a.range, &b.range);
            let overlap = a.start < b.end && b.start < a.end;
            assert!(!(same_kind && overlap), "links or quotes nest: {a:?} {b:?} in {text:?}");
            let disjoint = a.end <= b.start || b.end <= a.start;
            let nested = (a.start <= b.start && b.end <= a.end) || (b.start <= a.start && a.end <= b.end);
            assert!(disjoint || nested, "partial overlap {a:?} {b:?} in {text:?}");
        }
    }
    let ranges: Vec<Range<usize>> = styled.spans.iter().map(|span| span.range.clone()).collect();
    let units = utf16_ranges(text, &ranges);
    for (range, units) in ranges.iter().zip(units) {
        assert_eq!(units.start, utf16_offset(text, range.start));
        assert_eq!(units.len(), utf16_len(&text[range.clone()]));
    }
}

fn assert_split_sound(styled: &Styled, limit: usize, unit: Unit) {
    let parts = split(styled, limit, unit);
    assert_eq!(parts.iter().map(|p| p.text.as_str()).collect::<String>(), styled.text);
    let mut at = 0;
    for part in &parts {
        assert!(!part.text.is_empty());
        assert!(
            unit.len(&part.text) <= limit.max(unit.min_limit()),
            "{part:?} over {limit}"
        );
        assert_sound(part);
        // Each piece is exactly what the original spans cover in this part.
        let range = at..at + part.text.len();
        let expected: Vec<Span> = styled
            .spans
            .iter()
            .filter(|span| span.range.start < range.end && range.start < span.range.end)
            .map(|span| Span {
                range: span.range.start.max(range.start) - at..span.range.end.min(range.end) - at,
                style: span.style.clone(),
            })
            .collect();
        assert_eq!(part.spans, expected);
        at = range.end;
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn rendering_any_markdown_is_sound(markdown in markdown()) {
        for flavor in [Flavor::RICH, Flavor::SPELLED] {
            let styled = render(&markdown, flavor);
            assert_sound(&styled);
            assert_eq!(styled.text.trim_end(), styled.text);
            let surface_only = |style: &Style| matches!(style, Style::Link { .. } | Style::Blockquote);
            if flavor == Flavor::SPELLED {
                assert!(!styled.spans.iter().any(|span| surface_only(&span.style)), "{styled:?}");
            }
        }
    }

    #[test]
    fn splitting_keeps_text_and_spans(markdown in long_markdown(), limit in 2usize..600) {
        let styled = render(&markdown, Flavor::RICH);
        assert_split_sound(&styled, limit, Unit::Utf16);
        assert_split_sound(&styled, limit, Unit::Utf8);
    }
}
