//! Standing rules: a person who answers an approval with "always" approves
//! it and lets calls like it run in that conversation without asking, for
//! `approvals.rule_days`. The prompt says which calls before anyone answers
//! ([`StandingRules::offer`]); the rule is made in the same transaction as
//! the decision, only by a decision that wins and only by someone who may
//! decide ([`answers`]); act asks [`StandingRules::covering`] about a call
//! the skills hold for approval, and a rule turns only that "needs approval"
//! into "run" — a refusal (shell safety, a deny rule, an allowlist) is
//! never reached. What a rule covers is [`scope`]'s, shell commands
//! [`shell`]'s. Listed and revoked with `/rules` and `passepartout
//! approvals rules`; the store keeps them by conversation and tool
//! (`store/standing_rules.rs`).

mod answers;
pub mod scope;
mod shell;

use passepartout_gateway::markup::{Flavor, code, render};
use passepartout_gateway::{ConversationKey, Surface};

use super::record::{Approval, Person};
use crate::foundation::clock::Clock;
use crate::safety::skills::ProposedCall;
use crate::store::{How, StandingRule, Store};

const DAY_MS: u64 = 24 * 3600 * 1000;

/// The standing rules as the pipeline asks about them. Cheap to clone.
#[derive(Clone, Debug)]
pub struct StandingRules {
    store: Store,
    clock: Clock,
    days: u64,
}

impl StandingRules {
    /// Rules kept in `store`, lasting `days` by `clock`.
    pub fn new(store: Store, clock: Clock, days: u64) -> Self {
        Self { store, clock, days }
    }

    /// The live rule that lets `call` run in `conversation` without asking,
    /// if there is one. Rules that cannot be read cover nothing: a person
    /// is asked.
    pub fn covering(&self, conversation: &ConversationKey, call: &ProposedCall) -> Option<StandingRule> {
        self.covering_where(conversation, call, |_| true)
    }

    /// Like [`StandingRules::covering`], among the rules `keep` keeps.
    pub fn covering_where(
        &self,
        conversation: &ConversationKey,
        call: &ProposedCall,
        keep: impl Fn(&StandingRule) -> bool,
    ) -> Option<StandingRule> {
        let now = self.clock.now_ms();
        match self.store.standing_rules_for(conversation, &call.tool) {
            Ok(rules) => rules.into_iter().find(|rule| {
                rule.expires_ms > now && rule.tool == call.tool && scope::covers(&rule.scope, call) && keep(rule)
            }),
            Err(error) => {
                tracing::error!(%error, %conversation, "cannot read the standing rules; a person is asked");
                None
            }
        }
    }

    /// The rule an "always" to `approval` by `by`, answered `how` at
    /// `at_ms`, makes (the store gives it its id).
    pub fn for_approval(&self, approval: &Approval, by: Person, how: How, at_ms: u64) -> StandingRule {
        StandingRule {
            id: 0,
            conversation: approval.conversation.clone(),
            tool: approval.call.tool.clone(),
            scope: scope::derive(&approval.call),
            created_ms: at_ms,
            expires_ms: at_ms.saturating_add(self.days.saturating_mul(DAY_MS)),
            by,
            how: Some(how),
            approval: approval.token.clone(),
        }
    }

    /// The last line of `approval`'s prompt, worded for `surface`: how to
    /// answer "always", and exactly which calls the rule it makes covers
    /// ([`scope::shown`], from the same scope its matcher reads).
    pub fn offer(&self, approval: &Approval, surface: Surface) -> String {
        let how = if surface.buttons {
            "**Always** also lets".to_owned()
        } else if surface.terminal {
            "Type always to also let".to_owned()
        } else if surface.reply_to {
            "Reply always to also let".to_owned()
        } else {
            format!(
                "Send {} to also let",
                code(&format!("always {}", approval.token.as_str()))
            )
        };
        format!("{how} {}", self.lets(approval))
    }

    /// What an "always" to `approval` lets run, as every offer of it words
    /// it after its "how" (the terminal's "Type always to also let", the
    /// dashboard's "Always allow also lets"): `df -h` and the same command
    /// with more options run here without asking, for 30 days. Markdown.
    pub fn lets(&self, approval: &Approval) -> String {
        let covered = scope::shown(&approval.call.tool, &scope::derive(&approval.call));
        let days = format!("{} day{}", self.days, if self.days == 1 { "" } else { "s" });
        format!("{covered} run here without asking, for {days}.")
    }
}

/// What `rule` covers, for people, as Markdown.
pub fn shown(rule: &StandingRule) -> String {
    scope::shown(&rule.tool, &rule.scope)
}

/// What `rule` covers as plain text: where no renderer reads it (the audit
/// trail, the listing's JSON).
pub fn shown_plain(rule: &StandingRule) -> String {
    render(&shown(rule), Flavor::SPELLED).text
}

/// A moment as people read it: `2026-05-01 14:00 UTC`.
fn date(ms: u64) -> String {
    jiff::Timestamp::from_millisecond(ms as i64)
        .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|_| ms.to_string())
}

#[cfg(test)]
mod tests;
