//! What the gateway sends for a reply: [`Part`]s, each a message's body
//! and its text styles.
//!
//! The assistant's answers are the model's Markdown, rendered with links
//! spelled out (`text (url)`) and quotes marked `> `, since Signal has no
//! style for either. Everything else — command output, failure notices,
//! approval prompts, refusals — goes out exactly as written: a prompt names
//! the action to approve, which must read as it will run.

use passepartout_gateway::ReplyKind;
use passepartout_gateway::markup::{self, Flavor, Styled};

use crate::split::split;
use crate::styles::text_styles;

/// One message of a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    pub text: String,
    /// `textStyle` entries, `start:length:STYLE` in UTF-16 code units.
    pub styles: Vec<String>,
}

/// The messages of a text of `kind` at most `limit` bytes each, in order;
/// none for a blank text.
pub fn parts(text: &str, kind: ReplyKind, limit: usize) -> Vec<Part> {
    match kind {
        ReplyKind::Answer => styled_parts(&markup::render(text, Flavor::SPELLED), limit),
        ReplyKind::Notice | ReplyKind::Failure => plain_parts(text, limit),
    }
}

/// The messages of `text` sent as written, in order.
pub fn plain_parts(text: &str, limit: usize) -> Vec<Part> {
    styled_parts(&Styled::plain(text), limit)
}

fn styled_parts(styled: &Styled, limit: usize) -> Vec<Part> {
    split(styled, limit)
        .into_iter()
        .map(|part| Part {
            styles: text_styles(&part),
            text: part.text,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_rendered_and_a_notice_is_not() {
        let answer = parts("**Done**: `ls`", ReplyKind::Answer, 2000);
        assert_eq!(
            answer,
            [Part {
                text: "Done: ls".into(),
                styles: vec!["0:4:BOLD".into(), "6:2:MONOSPACE".into()]
            }]
        );
        let notice = parts("**Done**: `ls`", ReplyKind::Notice, 2000);
        assert_eq!(notice[0].text, "**Done**: `ls`");
        assert!(notice[0].styles.is_empty());
    }

    #[test]
    fn a_monospace_block_split_in_two_is_monospace_in_both() {
        let code: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let sent = parts(&format!("```\n{code}```"), ReplyKind::Answer, 120);
        assert!(sent.len() >= 2);
        for part in &sent {
            let units = part.text.encode_utf16().count();
            assert_eq!(part.styles, [format!("0:{units}:MONOSPACE")], "{part:?}");
        }
    }
}
