//! Reading approval answers out of inbound messages, before anything else
//! sees them. Pure: whether a token or a prompt exists is the store's
//! question, asked later.
//!
//! The forms: a reply to the prompt saying approve / yes / ok, always, or
//! deny / no; `approve TOKEN` / `always TOKEN` / `deny TOKEN` anywhere in the
//! conversation; `/approve TOKEN` / `/always TOKEN` / `/deny TOKEN`; a
//! button whose data is `approve:TOKEN`, `always:TOKEN` or `deny:TOKEN`; a
//! 👍 / 🔁 / 👎 reaction on the prompt; `/cancel [TOKEN]`; and `/rules`,
//! `/rules revoke ID` for the standing rules "always" makes.

use passepartout_gateway::markup::code;
use passepartout_gateway::{ApprovalToken, Inbound, InboundBody, MessageId};

use super::record::How;

/// Approve, approve and make a standing rule, or deny.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice {
    Approve,
    /// Approve, and let calls like this one run here without asking.
    Always,
    Deny,
}

/// Which approval an answer is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Token(ApprovalToken),
    /// The approval whose prompt is this message (a reply or a reaction to it).
    Prompt(MessageId),
}

/// What an inbound message says about approvals.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Parsed {
    Answer {
        choice: Choice,
        target: Target,
        how: How,
    },
    /// Withdraw one approval, or all of the sender's pending ones in the conversation.
    Cancel {
        token: Option<ApprovalToken>,
    },
    /// `/rules`: list this conversation's standing rules, or revoke one.
    Rules(RulesAsk),
    /// Meant as an answer but unusable; the sentence says why. `token_like`
    /// when it named something as a token (counted against the sender).
    Malformed {
        problem: String,
        token_like: bool,
    },
}

/// What `/rules` asks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RulesAsk {
    List,
    Revoke(u64),
}

/// Longest piece of a bad token repeated back to the person.
const SHOWN_CHARS: usize = 16;

/// The approval answer in `inbound`, if it is one. A bare "yes" that replies
/// to some message is an answer only if that message turns out to be a
/// prompt; the caller checks, and otherwise treats it as ordinary text.
pub fn parse(inbound: &Inbound) -> Option<Parsed> {
    match &inbound.body {
        InboundBody::Text { text } => parse_text(text.trim(), inbound.reply_to.as_ref()),
        InboundBody::Button { data } => parse_button(data),
        InboundBody::Reaction { emoji, target, removed } => {
            if *removed {
                return None;
            }
            let choice = reaction_choice(emoji)?;
            Some(Parsed::Answer {
                choice,
                target: Target::Prompt(target.clone()),
                how: How::Reaction,
            })
        }
        InboundBody::Unsupported { .. }
        | InboundBody::Media { .. }
        | InboundBody::Edited { .. }
        | InboundBody::Deleted { .. } => None,
    }
}

fn parse_text(text: &str, reply_to: Option<&MessageId>) -> Option<Parsed> {
    let mut words = text.split_whitespace();
    let first = words.next()?;
    let second = words.next();
    let more = words.next().is_some();
    if let Some(command) = first.strip_prefix('/') {
        let name = command.split('@').next().unwrap_or(command).to_ascii_lowercase();
        let choice = match name.as_str() {
            "approve" => Choice::Approve,
            "always" => Choice::Always,
            "deny" => Choice::Deny,
            "rules" => return Some(rules(second, words_after(text, 2))),
            "cancel" => {
                return Some(match second.map(token) {
                    None => Parsed::Cancel { token: None },
                    Some(Ok(token)) => Parsed::Cancel { token: Some(token) },
                    Some(Err(problem)) => Parsed::Malformed {
                        problem,
                        token_like: true,
                    },
                });
            }
            _ => return None,
        };
        return Some(answer(choice, second, reply_to, How::Command));
    }
    let word = first.trim_end_matches(['.', '!', ',']).to_lowercase();
    if let Some(choice) = verb(&word) {
        // `approve K7PX2Q`, `approve`, `approve !!`: meant as an answer.
        // "approve this plan for me" is ordinary text.
        return (!more).then(|| answer(choice, second, reply_to, How::Token));
    }
    let bare = second.is_none() && reply_to.is_some();
    bare.then(|| bare_word(&word))
        .flatten()
        .map(|choice| answer(choice, None, reply_to, How::Reply))
}

/// An answer naming `token`, or else the prompt it replies to.
fn answer(choice: Choice, token_word: Option<&str>, reply_to: Option<&MessageId>, how: How) -> Parsed {
    match (token_word.map(token), reply_to) {
        (Some(Ok(token)), _) => Parsed::Answer {
            choice,
            target: Target::Token(token),
            how,
        },
        (Some(Err(problem)), _) => Parsed::Malformed {
            problem,
            // "approve it" is a slip, not a guess; commands and buttons count.
            token_like: how != How::Token,
        },
        (None, Some(prompt)) => Parsed::Answer {
            choice,
            target: Target::Prompt(prompt.clone()),
            how: if how == How::Token { How::Reply } else { how },
        },
        (None, None) => Parsed::Malformed {
            problem: format!(
                "Which approval? Reply to its prompt, or answer `{} TOKEN` with the token the prompt shows.",
                verb_name(choice)
            ),
            token_like: false,
        },
    }
}

/// The words of `text` after the first `skip`.
fn words_after(text: &str, skip: usize) -> Vec<&str> {
    text.split_whitespace().skip(skip).collect()
}

/// `/rules`, `/rules revoke ID`.
fn rules(verb: Option<&str>, rest: Vec<&str>) -> Parsed {
    let usage = |problem: String| Parsed::Malformed {
        problem: format!(
            "{problem} Send /rules to list the standing rules here, {} to revoke one.",
            code("/rules revoke ID")
        ),
        token_like: false,
    };
    match (verb.map(str::to_lowercase).as_deref(), rest.as_slice()) {
        (None, _) => Parsed::Rules(RulesAsk::List),
        (Some("revoke"), [id]) => match id.trim_start_matches('#').parse::<u64>() {
            Ok(id) => Parsed::Rules(RulesAsk::Revoke(id)),
            Err(_) => {
                let shown: String = id.chars().take(SHOWN_CHARS).collect();
                usage(format!("{} is not a rule's number.", code(&shown)))
            }
        },
        (Some("revoke"), _) => usage("Which rule? Name one by its number.".into()),
        (Some(other), _) => {
            let shown: String = other.chars().take(SHOWN_CHARS).collect();
            usage(format!("{} is not something I know.", code(&format!("/rules {shown}"))))
        }
    }
}

fn parse_button(data: &str) -> Option<Parsed> {
    let (verb, rest) = data.split_once(':')?;
    let choice = match verb {
        "approve" => Choice::Approve,
        "always" => Choice::Always,
        "deny" => Choice::Deny,
        _ => return None,
    };
    Some(match token(rest) {
        Ok(token) => Parsed::Answer {
            choice,
            target: Target::Token(token),
            how: How::Button,
        },
        Err(problem) => Parsed::Malformed {
            problem,
            token_like: true,
        },
    })
}

/// A token as typed: any case, surrounding punctuation ignored.
fn token(word: &str) -> Result<ApprovalToken, String> {
    let trimmed = word.trim_matches(|c: char| !c.is_alphanumeric());
    ApprovalToken::parse_typed(trimmed).map_err(|_| {
        let shown: String = word.chars().take(SHOWN_CHARS).collect();
        let cut = if word.chars().count() > SHOWN_CHARS { "…" } else { "" };
        format!(
            "{} is not an approval token (tokens are 6 to 8 letters and digits, as the prompt shows).",
            code(&format!("{shown}{cut}"))
        )
    })
}

fn verb(word: &str) -> Option<Choice> {
    match word {
        "approve" => Some(Choice::Approve),
        "always" => Some(Choice::Always),
        "deny" => Some(Choice::Deny),
        _ => None,
    }
}

fn verb_name(choice: Choice) -> &'static str {
    match choice {
        Choice::Approve => "approve",
        Choice::Always => "always",
        Choice::Deny => "deny",
    }
}

/// The one-word answers accepted when replying to a prompt.
fn bare_word(word: &str) -> Option<Choice> {
    match word {
        "approve" | "approved" | "yes" | "y" | "ok" | "okay" | "👍" | "✅" => Some(Choice::Approve),
        "always" | "🔁" => Some(Choice::Always),
        "deny" | "denied" | "no" | "n" | "reject" | "👎" | "❌" => Some(Choice::Deny),
        _ => None,
    }
}

fn reaction_choice(emoji: &str) -> Option<Choice> {
    // Skin-tone modifiers follow the base emoji.
    if emoji.starts_with('👍') || emoji.starts_with('✅') {
        Some(Choice::Approve)
    } else if emoji.starts_with('🔁') {
        Some(Choice::Always)
    } else if emoji.starts_with('👎') || emoji.starts_with('❌') {
        Some(Choice::Deny)
    } else {
        None
    }
}

#[cfg(test)]
#[path = "answer_tests.rs"]
mod tests;
