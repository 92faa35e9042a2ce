//! What the gateway sends for a reply: [`Part`]s, each a message's plain
//! text and its entities.
//!
//! Every text the core sends is Markdown — the model's answers and the
//! daemon's own messages alike (command output, failure notices, approval
//! prompts and their outcomes) — rendered ([`markup::render`]) with links
//! and quotes as entities (links spelled out when there are more than
//! Telegram takes, see [`LINK_URL_BUDGET`]). The daemon puts values into its
//! Markdown with [`markup::literal`], so a shell command with `*` or `_` in
//! it reads as it will run. The reply's kind tells a client how to show it
//! or exit, never how to read its text.

use passepartout_gateway::markup::{self, Flavor, Styled};
use teloxide::types::{MessageEntity, MessageEntityKind};

use crate::entities::entities;
use crate::split::{TELEGRAM_TEXT_LIMIT, split};

/// One message of a reply.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    /// The message's text, the Markdown taken out.
    pub text: String,
    /// Empty for plain text; offsets in UTF-16 code units of `text`.
    pub entities: Vec<MessageEntity>,
}

/// The most bytes of link URLs one message carries as entities. Telegram
/// refuses a message whose entities hold too much data ("ENTITIES_TOO_LONG",
/// a limit it does not document, reported near 9,500 characters of marked-up
/// text); a reply past this budget has its links spelled out instead.
pub const LINK_URL_BUDGET: usize = 2000;

/// The messages of Markdown `text`, in order (none for a blank text):
/// links as entities, unless a message would carry more URL bytes than
/// [`LINK_URL_BUDGET`]; then every link is spelled out.
pub fn parts(text: &str) -> Vec<Part> {
    let parts = styled_parts(&markup::render(text, Flavor::RICH));
    let over_budget = parts.iter().any(|part| {
        let urls: usize = part
            .entities
            .iter()
            .map(|entity| match &entity.kind {
                MessageEntityKind::TextLink { url } => url.as_str().len(),
                _ => 0,
            })
            .sum();
        urls > LINK_URL_BUDGET
    });
    if !over_budget {
        return parts;
    }
    let spelled = Flavor {
        link_spans: false,
        ..Flavor::RICH
    };
    styled_parts(&markup::render(text, spelled))
}

fn styled_parts(styled: &Styled) -> Vec<Part> {
    split(styled, TELEGRAM_TEXT_LIMIT)
        .into_iter()
        .map(|part| Part {
            entities: entities(&part),
            text: part.text,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_is_rendered_as_markdown() {
        let sent = parts("**Done**: `ls`");
        assert_eq!(sent.len(), 1);
        assert_eq!(sent[0].text, "Done: ls");
        let kinds: Vec<_> = sent[0].entities.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(kinds, [MessageEntityKind::Bold, MessageEntityKind::Code]);
    }

    #[test]
    fn links_past_the_budget_are_spelled_out_instead() {
        let url = format!("https://example.com/{}", "p".repeat(100));
        let few: String = (0..5).map(|i| format!("[link {i}]({url}) ")).collect();
        let answer = parts(&few);
        assert!(!answer[0].text.contains("https://"), "links stay entities");
        let many: String = (0..40).map(|i| format!("[link {i}]({url}) ")).collect();
        let answer = parts(&many);
        assert!(answer.iter().all(|part| part.entities.is_empty()), "no link entities");
        assert!(answer[0].text.starts_with(&format!("link 0 ({url}) link 1 ({url})")));
    }

    #[test]
    fn a_prompt_reads_as_the_action_will_run() {
        let command = "rm -rf *_old `x`";
        let prompt = parts(&format!("Run {}? Approve or deny.", markup::code(command)));
        assert_eq!(prompt[0].text, format!("Run {command}? Approve or deny."));
        let kinds: Vec<_> = prompt[0].entities.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(kinds, [MessageEntityKind::Code]);
    }
}
