//! Property tests: for any Markdown, every part of the reply fits Telegram's
//! limit and its entities follow the Bot API's rules, whatever the limit.

use passepartout_gateway::markup::{Flavor, render, utf16_len};
use passepartout_gateway_testing::json::config;
use passepartout_gateway_testing::markdown::long_markdown;
use proptest::prelude::*;
use teloxide::types::{MessageEntity, MessageEntityKind as Kind};

use crate::entities::entities;
use crate::split::split;

fn is_code(kind: &Kind) -> bool {
    matches!(kind, Kind::Code | Kind::Pre { .. })
}

fn is_quote(kind: &Kind) -> bool {
    matches!(kind, Kind::Blockquote | Kind::ExpandableBlockquote)
}

fn nests_freely(kind: &Kind) -> bool {
    matches!(
        kind,
        Kind::Bold | Kind::Italic | Kind::Underline | Kind::Strikethrough | Kind::Spoiler
    ) || is_quote(kind)
}

/// The Bot API's rules for the entities of one message `text`.
fn assert_telegram_accepts(text: &str, entities: &[MessageEntity]) {
    let units: Vec<u16> = text.encode_utf16().collect();
    let inside_pair = |at: usize| at > 0 && at < units.len() && (0xDC00..0xE000).contains(&units[at]);
    for entity in entities {
        let end = entity.offset + entity.length;
        assert!(entity.length > 0 && end <= units.len(), "{entity:?} in {text:?}");
        assert!(
            !inside_pair(entity.offset) && !inside_pair(end),
            "{entity:?} cuts a pair"
        );
    }
    for (i, a) in entities.iter().enumerate() {
        for b in &entities[i + 1..] {
            let (a_end, b_end) = (a.offset + a.length, b.offset + b.length);
            if a_end <= b.offset || b_end <= a.offset {
                continue;
            }
            let nested = (a.offset <= b.offset && b_end <= a_end) || (b.offset <= a.offset && a_end <= b_end);
            assert!(nested, "partial overlap {a:?} {b:?}");
            assert!(!(is_quote(&a.kind) && is_quote(&b.kind)), "nested quotes {a:?} {b:?}");
            let quoted = is_quote(&a.kind) || is_quote(&b.kind);
            assert!(
                quoted || !(is_code(&a.kind) || is_code(&b.kind)),
                "code shares text: {a:?} {b:?}"
            );
            assert!(nests_freely(&a.kind) || nests_freely(&b.kind), "{a:?} holds {b:?}");
        }
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn every_part_fits_and_its_entities_are_accepted(markdown in long_markdown(), limit in 2usize..5000) {
        let styled = render(&markdown, Flavor::RICH);
        for part in split(&styled, limit) {
            assert!(utf16_len(&part.text) <= limit.max(2));
            assert!(!part.text.trim().is_empty(), "no blank part");
            assert_telegram_accepts(&part.text, &entities(&part));
        }
    }
}
