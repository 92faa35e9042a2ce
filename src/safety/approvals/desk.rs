//! Taking answers: find the approval an answer names, check that the person
//! may decide it here, and record the decision — or say why not. Nothing of
//! this reaches the model.

use passepartout_gateway::markup::code;
use passepartout_gateway::{ApprovalToken, ConversationKey, Inbound, ReplyKind};

use super::answer::{Choice, Parsed, Target};
use super::policy::Refused;
use super::record::{Approval, Decision, How, Person, Status};
use super::{Approvals, Owed, minutes};
use crate::store::{Decided, StoreError};

/// What came of an inbound message perceive took for an approval answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Handled {
    /// It was about approvals: tell the person this; the conversations in
    /// `settle` are owed an outcome now.
    Answered {
        replies: Vec<(ReplyKind, String)>,
        settle: Vec<Owed>,
    },
    /// A bare "yes" replying to a message that is not a prompt: ordinary text.
    NotAnAnswer,
}

impl Handled {
    pub(super) fn notice(text: impl Into<String>) -> Self {
        Handled::Answered {
            replies: vec![(ReplyKind::Notice, text.into())],
            settle: Vec::new(),
        }
    }
}

impl Approvals {
    /// Handles `parsed`, read from `inbound`.
    pub fn answer(&self, inbound: &Inbound, parsed: Parsed) -> Result<Handled, StoreError> {
        let person = Person::of(inbound);
        let now = self.clock.now_ms();
        // Judged by when it arrived, not when its turn came: an answer that
        // waited behind a long turn is not late for that.
        let arrived = match inbound.received_at_ms {
            0 => now,
            at => at.min(now),
        };
        match parsed {
            Parsed::Malformed { problem, token_like } => {
                if token_like {
                    if self.wrong.is_limited(&person, now) {
                        return Ok(Handled::notice(TOO_MANY));
                    }
                    self.wrong.record(&person, now);
                }
                Ok(Handled::notice(problem))
            }
            Parsed::Cancel { token } => self.cancel(inbound, &person, token, now),
            Parsed::Rules(ask) => self.rules_answer(inbound, &person, ask),
            Parsed::Answer { choice, target, how } => {
                let approval = match &target {
                    Target::Token(token) => {
                        if self.wrong.is_limited(&person, now) {
                            return Ok(Handled::notice(TOO_MANY));
                        }
                        let found = self.store.approval(token)?;
                        if found.is_none() && how == How::Token && !self.any_pending_in(&inbound.conversation)? {
                            // "approve payment" with nothing waiting here:
                            // ordinary text, but counted like any guess, or
                            // guessing from a quiet chat would be free.
                            self.wrong.record(&person, now);
                            return Ok(Handled::NotAnAnswer);
                        }
                        if found.is_none() {
                            self.wrong.record(&person, now);
                            return Ok(no_such_token(token));
                        }
                        found
                    }
                    Target::Prompt(message) => self.store.approval_by_prompt(&inbound.conversation, message)?,
                };
                let Some(approval) = approval else {
                    return Ok(match how {
                        How::Reply => Handled::NotAnAnswer,
                        How::Reaction => Handled::Answered {
                            replies: Vec::new(),
                            settle: Vec::new(),
                        },
                        _ => Handled::notice("That message is not an approval prompt; answer with its token."),
                    });
                };
                let decision = Decision {
                    outcome: match choice {
                        Choice::Approve | Choice::Always => Status::Approved,
                        Choice::Deny => Status::Denied,
                    },
                    by: Some(person.clone()),
                    how,
                    at_ms: arrived,
                    message: Some((inbound.conversation.clone(), inbound.message_id.clone())),
                };
                // A button is pressed on the prompt itself: nothing to learn.
                let by_token = matches!(target, Target::Token(_)) && how != How::Button;
                // Where each conversation is one person's own (a surface that
                // says who approves), the one answering in the approval's own
                // conversation was shown its prompt: they learn nothing, and
                // are told below who may.
                let shown_them = approval.conversation == inbound.conversation
                    && self.surface_of(&inbound.conversation).who_approves.is_some();
                if by_token && !shown_them && self.may_decide(&approval, &person, &inbound.conversation).is_err() {
                    // Told exactly what a token that does not exist is told,
                    // and counted the same: nobody learns from a token answer
                    // that an approval they may not decide exists.
                    tracing::info!(%person, token = approval.token.as_str(), "token answer from someone who may not decide it");
                    self.wrong.record(&person, now);
                    return Ok(no_such_token(&approval.token));
                }
                let always = choice == Choice::Always;
                self.decide_as(&approval, &person, &inbound.conversation, decision, always)
            }
        }
    }

    /// False for a button press on an approval its presser may not decide,
    /// or on none at all (a forged button), so the gateway says the same on
    /// the button either way and nobody learns from a press whether a token
    /// exists; both count as a wrong guess, as typed answers do. True for
    /// anything else, which takes the usual way: an approver pressing in
    /// another chat than the approval's is told so there. Reads one record.
    pub fn may_press(&self, inbound: &Inbound) -> bool {
        let Some(Parsed::Answer {
            target: Target::Token(token),
            how: How::Button,
            ..
        }) = super::answer::parse(inbound)
        else {
            return true;
        };
        let person = Person::of(inbound);
        let refused = match self.store.approval(&token) {
            Ok(Some(approval)) => {
                self.may_decide(&approval, &person, &inbound.conversation) == Err(Refused::NotApprover)
            }
            Ok(None) => true,
            // The usual way reads it again, and says what failed.
            Err(_) => false,
        };
        if refused {
            self.wrong.record(&person, self.clock.now_ms());
        }
        !refused
    }

    /// Records `decision` by `person`, answering in `conversation`, if they
    /// may; with `always`, the standing rule too.
    fn decide_as(
        &self,
        approval: &Approval,
        person: &Person,
        conversation: &ConversationKey,
        decision: Decision,
        always: bool,
    ) -> Result<Handled, StoreError> {
        let token = approval.token.as_str();
        match self.may_decide(approval, person, conversation) {
            Ok(()) => {}
            Err(Refused::NotApprover) => {
                tracing::info!(%person, token, "answer from someone who may not approve");
                let mut text = format!(
                    "You are not allowed to approve this ({}). It still waits for an approver.",
                    code(token)
                );
                if let Some(who) = self.surface_of(conversation).who_approves {
                    text = format!("{text} {who}");
                }
                return Ok(Handled::notice(text));
            }
            Err(Refused::WrongConversation) => {
                return Ok(Handled::notice(format!(
                    "Approval {} was asked for in another conversation; answer it there.",
                    code(token)
                )));
            }
        }
        Ok(match self.decide_counted(approval, decision, always)? {
            (Decided::Won(decided), rule) => {
                let mut text = self.outcome_text(&decided, Some(conversation));
                if let Some(rule) = rule {
                    text = format!("{text} {}", self.made_text(&rule));
                }
                Handled::Answered {
                    replies: vec![(ReplyKind::Notice, text)],
                    settle: vec![owed_by(&decided)],
                }
            }
            (Decided::Already(first), _) => Handled::Answered {
                replies: vec![(ReplyKind::Notice, already(&first))],
                settle: owed(&first),
            },
        })
    }

    /// Records `decision` — unless the approval expired meanwhile, in which
    /// case the timer's decision is recorded instead (nobody may approve late).
    pub(super) fn decide(&self, approval: &Approval, decision: Decision) -> Result<Decided, StoreError> {
        if approval.is_pending() && decision.at_ms >= approval.expires_ms && decision.how != How::Timer {
            return Ok(match self.record(&approval.token, timed_out(decision.at_ms))? {
                Decided::Won(expired) | Decided::Already(expired) => Decided::Already(expired),
            });
        }
        self.record(&approval.token, decision)
    }

    fn cancel(
        &self,
        inbound: &Inbound,
        person: &Person,
        token: Option<ApprovalToken>,
        now: u64,
    ) -> Result<Handled, StoreError> {
        let mine = |a: &Approval| a.requester == inbound.sender.id && a.conversation == inbound.conversation;
        let targets: Vec<Approval> = match token {
            Some(token) => {
                if self.wrong.is_limited(person, now) {
                    return Ok(Handled::notice(TOO_MANY));
                }
                match self.store.approval(&token)? {
                    Some(approval) if mine(&approval) => vec![approval],
                    // Someone else's and no such token read the same, and
                    // both count as a wrong guess.
                    _ => {
                        self.wrong.record(person, now);
                        return Ok(Handled::notice(format!(
                            "You have no approval with the token {} here.",
                            code(token.as_str())
                        )));
                    }
                }
            }
            None => self
                .store
                .approvals()?
                .into_iter()
                .filter(|a| a.is_pending() && mine(a))
                .collect(),
        };
        if targets.is_empty() {
            return Ok(Handled::notice("Nothing you asked for is waiting for approval here."));
        }
        let mut replies = Vec::new();
        let mut settle = Vec::new();
        for approval in targets {
            let decision = Decision {
                outcome: Status::Cancelled,
                by: Some(person.clone()),
                how: How::Cancel,
                at_ms: self.clock.now_ms(),
                message: Some((inbound.conversation.clone(), inbound.message_id.clone())),
            };
            match self.decide(&approval, decision)? {
                Decided::Won(cancelled) => {
                    replies.push((ReplyKind::Notice, self.outcome_text(&cancelled, None)));
                    settle.push(owed_by(&cancelled));
                }
                Decided::Already(first) => {
                    settle.extend(owed(&first));
                    replies.push((ReplyKind::Notice, already(&first)));
                }
            }
        }
        Ok(Handled::Answered { replies, settle })
    }

    /// Whether anything waits for approval in `conversation`.
    fn any_pending_in(&self, conversation: &ConversationKey) -> Result<bool, StoreError> {
        Ok(self
            .store
            .approvals()?
            .iter()
            .any(|a| a.is_pending() && a.conversation == *conversation))
    }

    /// The sentence for a decision just made; `answered_in` names where the
    /// answer came from, to say where an approved action runs.
    pub fn outcome_text(&self, approval: &Approval, answered_in: Option<&ConversationKey>) -> String {
        let token = code(approval.token.as_str());
        let action = code(&approval.action());
        match approval.status {
            Status::Approved if answered_in.is_some_and(|c| *c != approval.conversation) => {
                let there = code(&approval.conversation.to_string());
                format!("**Approved** {token}: {action} runs now, in {there}.")
            }
            Status::Approved => format!("**Approved** {token}: running {action}."),
            Status::Denied => format!("**Denied** {token}: {action} will not run."),
            Status::Cancelled => format!("**Cancelled** {token}: {action} will not run."),
            Status::Expired => format!(
                "**Timed out** {token} after {}: {action} did not run.",
                minutes(std::time::Duration::from_millis(
                    approval.expires_ms.saturating_sub(approval.created_ms)
                ))
            ),
            Status::Pending => format!("Approval {token} still waits for an answer."),
        }
    }
}

const TOO_MANY: &str = "Too many answers named tokens that do not exist; token answers from you are refused for a while. \
                        Reply to the prompt instead.";

/// The decision the timer makes.
pub(super) fn timed_out(at_ms: u64) -> Decision {
    Decision {
        outcome: Status::Expired,
        by: None,
        how: How::Timer,
        at_ms,
        message: None,
    }
}

/// The conversation still owed `approval`'s outcome (one that timed out
/// just now, as a late answer found), if any.
fn owed(approval: &Approval) -> Vec<Owed> {
    if approval.is_pending() || approval.settled {
        Vec::new()
    } else {
        vec![owed_by(approval)]
    }
}

/// What `approval`'s conversation is owed now that it is decided.
pub(super) fn owed_by(approval: &Approval) -> Owed {
    Owed {
        conversation: approval.conversation.clone(),
        token: approval.token.clone(),
    }
}

/// The answer to a second answer: what the first one decided.
pub(super) fn already(first: &Approval) -> String {
    let token = code(first.token.as_str());
    match first.decision.as_ref().and_then(crate::people::decided_by) {
        Some(by) => format!("Approval {token} was already {} {by}.", first.status.as_str()),
        None => format!("Approval {token} was already {}.", first.status.as_str()),
    }
}

/// The answer to a token answer that names no approval the person may
/// decide, whether or not one exists.
fn no_such_token(token: &ApprovalToken) -> Handled {
    Handled::notice(format!(
        "No approval has the token {}. Check the prompt's token.",
        code(token.as_str())
    ))
}

#[cfg(test)]
#[path = "desk_tests.rs"]
mod tests;
