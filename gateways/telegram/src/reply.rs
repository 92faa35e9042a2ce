//! What the gateway sends for a reply: [`Part`]s, each a message's plain
//! text and its entities.
//!
//! The assistant's answers are the model's Markdown, rendered
//! ([`markup::render`]) with links and quotes as entities (links spelled out
//! when there are more than Telegram takes, see [`LINK_URL_BUDGET`]). Everything else
//! the core sends — command output, failure notices, approval prompts — goes
//! out exactly as written: a prompt names the action to approve (a shell
//! command with `*` or `_` in it must read as it will run), and notices are
//! written by the daemon as plain text.

use passepartout_gateway::ReplyKind;
use passepartout_gateway::markup::{self, Flavor, Styled};
use teloxide::types::{MessageEntity, MessageEntityKind};

use crate::entities::entities;
use crate::split::{TELEGRAM_TEXT_LIMIT, split};

/// One message of a reply.
#[derive(Clone, Debug, PartialEq)]
pub struct Part {
    pub text: String,
    /// Empty for plain text; offsets in UTF-16 code units of `text`.
    pub entities: Vec<MessageEntity>,
}

/// The most bytes of link URLs one message carries as entities. Telegram
/// refuses a message whose entities hold too much data ("ENTITIES_TOO_LONG",
/// a limit it does not document, reported near 9,500 characters of marked-up
/// text); a reply past this budget has its links spelled out instead.
pub const LINK_URL_BUDGET: usize = 2000;

/// The messages of a text of `kind`, in order; none for a blank text.
pub fn parts(text: &str, kind: ReplyKind) -> Vec<Part> {
    match kind {
        ReplyKind::Answer => answer_parts(text),
        ReplyKind::Notice | ReplyKind::Failure => plain_parts(text),
    }
}

/// An answer's messages: links as entities, unless a message would carry
/// more URL bytes than [`LINK_URL_BUDGET`]; then every link is spelled out.
fn answer_parts(text: &str) -> Vec<Part> {
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

/// The messages of `text` sent as written, in order.
pub fn plain_parts(text: &str) -> Vec<Part> {
    styled_parts(&Styled::plain(text))
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
    fn an_answer_is_rendered_and_a_notice_is_not() {
        let answer = parts("**Done**: `ls`", ReplyKind::Answer);
        assert_eq!(answer.len(), 1);
        assert_eq!(answer[0].text, "Done: ls");
        let kinds: Vec<_> = answer[0].entities.iter().map(|e| e.kind.clone()).collect();
        assert_eq!(kinds, [MessageEntityKind::Bold, MessageEntityKind::Code]);
        for kind in [ReplyKind::Notice, ReplyKind::Failure] {
            let notice = parts("**Done**: `ls`", kind);
            assert_eq!(
                notice,
                [Part {
                    text: "**Done**: `ls`".into(),
                    entities: vec![]
                }]
            );
        }
    }

    #[test]
    fn links_past_the_budget_are_spelled_out_instead() {
        let url = format!("https://example.com/{}", "p".repeat(100));
        let few: String = (0..5).map(|i| format!("[link {i}]({url}) ")).collect();
        let answer = parts(&few, ReplyKind::Answer);
        assert!(!answer[0].text.contains("https://"), "links stay entities");
        let many: String = (0..40).map(|i| format!("[link {i}]({url}) ")).collect();
        let answer = parts(&many, ReplyKind::Answer);
        assert!(answer.iter().all(|part| part.entities.is_empty()), "no link entities");
        assert!(answer[0].text.starts_with(&format!("link 0 ({url}) link 1 ({url})")));
    }

    #[test]
    fn a_prompt_reads_as_the_action_will_run() {
        let prompt = plain_parts("Run `rm -rf *_old`? Approve or deny.");
        assert_eq!(prompt[0].text, "Run `rm -rf *_old`? Approve or deny.");
        assert!(prompt[0].entities.is_empty());
    }
}
