//! What the gateway sends for a reply: [`Part`]s, each a message's body
//! and its text styles.
//!
//! Every text the core sends is Markdown — the model's answers and the
//! daemon's own messages alike (command output, failure notices, approval
//! prompts and their outcomes) — rendered with links spelled out
//! (`text (url)`) and quotes marked `> `, since Signal has no style for
//! either. The daemon puts values into its Markdown with
//! [`markup::literal`], so a command in a prompt reads as it will run. Only
//! the texts of the gateway's own settings (its refusals) go out as written
//! ([`plain_parts`]).

use passepartout_gateway::markup::{self, Flavor, Styled};

use crate::split::split;
use crate::styles::text_styles;

/// One message of a reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The message's text, the Markdown taken out.
    pub text: String,
    /// `textStyle` entries, `start:length:STYLE` in UTF-16 code units.
    pub styles: Vec<String>,
}

/// The messages of Markdown `text` at most `limit` bytes each, in order;
/// none for a blank text.
pub fn parts(text: &str, limit: usize) -> Vec<Part> {
    styled_parts(&markup::render(text, Flavor::SPELLED), limit)
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
    fn a_text_is_rendered_and_a_setting_is_not() {
        let sent = parts("**Done**: `ls`", 2000);
        assert_eq!(
            sent,
            [Part {
                text: "Done: ls".into(),
                styles: vec!["0:4:BOLD".into(), "6:2:MONOSPACE".into()]
            }]
        );
        let refusal = plain_parts("**as** `set`", 2000);
        assert_eq!(refusal[0].text, "**as** `set`");
        assert!(refusal[0].styles.is_empty());
    }

    #[test]
    fn a_monospace_block_split_in_two_is_monospace_in_both() {
        let code: String = (0..30).map(|i| format!("line {i}\n")).collect();
        let sent = parts(&format!("```\n{code}```"), 120);
        assert!(sent.len() >= 2);
        for part in &sent {
            let units = part.text.encode_utf16().count();
            assert_eq!(part.styles, [format!("0:{units}:MONOSPACE")], "{part:?}");
        }
    }
}
