//! The approval prompt, worded for the surface it goes to.
//!
//! A prompt says, in at most about 250 characters before the action
//! itself: that approval is needed (and its token), why, how to
//! answer *there* — buttons on Telegram, a reply or a reaction on Signal, a
//! word typed in a terminal — and when it expires. Then the action, as it
//! will run (a shell command in a code block, another tool's call with its
//! arguments), how the models voted on it when they did, and last the
//! one-line offer of a standing rule. Every part of it that the model, a
//! tool or a person wrote is shown with its control, bidirectional and
//! invisible characters as escapes ([`visible`]), so a terminal or a page
//! shows exactly what runs. It is
//! Markdown, rendered by every surface as notices are (see
//! [`crate::foundation::notices`]).

use std::time::Duration;

use passepartout_gateway::markup::{code, code_block, escape};
use passepartout_gateway::{Surface, visible};

use super::record::Approval;
use super::{Approvals, minutes};

/// The most characters of the reason shown in a prompt, so the words
/// before the action stay short.
const REASON_CHARS: usize = 90;

impl Approvals {
    /// What the person is shown: the action, why, how the models voted on
    /// it (when they did), and how to answer where it was asked.
    pub fn prompt_text(&self, approval: &Approval) -> String {
        let until = format!("Expires in {}", minutes(self.expire_after));
        self.prompt(approval, "Approval needed", &until)
    }

    /// The prompt sent once more shortly before the approval times out.
    pub fn reminder_text(&self, approval: &Approval) -> String {
        let left = approval.expires_ms.saturating_sub(self.clock.now_ms());
        let left = Duration::from_secs(left.div_ceil(1000));
        let until = format!("Expires in {}", minutes(left));
        self.prompt(approval, "Still waiting for approval", &until)
    }

    /// A prompt for `approval` under `headline`; `until` says when
    /// answering ends.
    fn prompt(&self, approval: &Approval, headline: &str, until: &str) -> String {
        let surface = self.surfaces.of(&approval.conversation);
        let token = approval.token.as_str();
        let mut text = format!(
            "**{headline}** ({}): {}\nWhy: {}.\n",
            code(token),
            what_runs(approval),
            escape(&shortened(&visible::line(approval.reason.trim_end_matches('.')))),
        );
        text += &*format!(
            "{} {until}; unanswered, it does not run.\n\n",
            how_to_answer(surface, token)
        );
        text += &*action_block(approval);
        text += "\n\n";
        if let Some(line) = self.unconfined.line(&approval.call.tool) {
            text += line;
            text += "\n";
        }
        // After the action, whole: what each model said is worth reading,
        // but not before what runs.
        if let Some(votes) = &approval.votes {
            text += &*format!("Models: {}.\n", escape(&visible::line(votes)));
        }
        text += &*self.standing.offer(approval, surface);
        text
    }
}

/// What the approval would run, in words.
fn what_runs(approval: &Approval) -> String {
    match approval.call.tool.as_str() {
        "shell" => "run this shell command".to_owned(),
        tool => format!("call {} with these arguments", code(&visible::line(tool))),
    }
}

/// The action itself, as it will run: the command of a shell call, else
/// the tool's arguments; its lines kept, everything else that could hide
/// what it says shown as an escape.
fn action_block(approval: &Approval) -> String {
    match (approval.call.tool.as_str(), approval.call.string_argument("command")) {
        ("shell", Some(command)) => code_block(&visible::text(command)),
        _ => code_block(&visible::line(&approval.call.arguments.to_string())),
    }
}

/// How to answer on `surface`.
fn how_to_answer(surface: Surface, token: &str) -> String {
    let typed = format!(
        "{} or {}",
        code(&format!("approve {token}")),
        code(&format!("deny {token}"))
    );
    if surface.buttons {
        "Tap Approve or Deny.".to_owned()
    } else if surface.terminal {
        format!("Type yes or no, or {typed}.")
    } else if surface.reply_to && surface.reactions {
        "Reply approve or deny to this message, or react 👍 or 👎.".to_owned()
    } else if surface.reply_to {
        "Reply approve or deny to this message.".to_owned()
    } else {
        format!("Send {typed}.")
    }
}

/// `text` cut to [`REASON_CHARS`] characters, marked where it was cut.
fn shortened(text: &str) -> String {
    match text.char_indices().nth(REASON_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
#[path = "prompt_tests.rs"]
mod tests;
