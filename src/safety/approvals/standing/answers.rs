//! The desk's side of standing rules: an approval answered "always" (the
//! rule made in the decision's own transaction), `/rules` in a chat, and
//! the local user's listing and revoking (`passepartout approvals rules`).
//! Only someone who may decide makes or revokes a rule, and is told, when
//! they may not, what any other answer of theirs would be told.

use passepartout_gateway::markup::code;
use passepartout_gateway::{ConversationKey, Inbound, UserId};
use serde_json::{Value, json};

use super::{date, shown, shown_plain};
use crate::safety::approvals::Approvals;
use crate::safety::approvals::answer::RulesAsk;
use crate::safety::approvals::desk::Handled;
use crate::safety::approvals::policy::may_act;
use crate::safety::approvals::record::{Approval, Decision, Person, Status};
use crate::store::{Decided, StandingRule, StoreError};

impl Approvals {
    /// Records `decision` on `approval`; with `always` (and an approval)
    /// also makes the standing rule, in the same transaction, if this
    /// decision wins. Returns what came of it and the rule made — or, for
    /// an answer redone after a crash, the rule it made before.
    pub(in crate::safety::approvals) fn decide_choosing(
        &self,
        approval: &Approval,
        decision: Decision,
        always: bool,
    ) -> Result<(Decided, Option<StandingRule>), StoreError> {
        // Too late to approve: the desk records the timeout, and no rule.
        let late = approval.is_pending() && decision.at_ms >= approval.expires_ms;
        let by = decision
            .by
            .clone()
            .filter(|_| always && !late && decision.outcome == Status::Approved);
        let Some(by) = by else {
            return Ok((self.decide(approval, decision)?, None));
        };
        let rule = self.standing.for_approval(approval, by, decision.how, decision.at_ms);
        let (decided, made) = self
            .store
            .decide_with_rule(&approval.token, decision, &rule, &shown_plain(&rule))?;
        let made = match (&decided, made) {
            (Decided::Won(_), None) => self.store.standing_rule_of(&approval.token)?,
            (_, made) => made,
        };
        if let (Decided::Won(_), Some(rule)) = (&decided, &made) {
            tracing::info!(rule = rule.id, conversation = %rule.conversation, tool = %rule.tool, "standing rule made");
        }
        Ok((decided, made))
    }

    /// What the person who made `rule` is told.
    pub(in crate::safety::approvals) fn made_text(&self, rule: &StandingRule) -> String {
        format!(
            "Standing rule {} lets {} run without asking in {} until {} ({} lists them).",
            code(&rule.id.to_string()),
            shown(rule),
            code(&rule.conversation.to_string()),
            date(rule.expires_ms),
            code("/rules"),
        )
    }

    /// `/rules` from `person` in `inbound`'s conversation.
    pub(in crate::safety::approvals) fn rules_answer(
        &self,
        inbound: &Inbound,
        person: &Person,
        ask: RulesAsk,
    ) -> Result<Handled, StoreError> {
        let here = &inbound.conversation;
        match ask {
            RulesAsk::List => Ok(Handled::notice(self.rules_in(here)?)),
            RulesAsk::Revoke(id) => {
                if may_act(&self.policy.load().approvers_for(here), here, person, here).is_err() {
                    tracing::info!(%person, rule = id, "a revoke from someone who may not decide here");
                    return Ok(Handled::notice("You are not allowed to revoke standing rules here."));
                }
                let ours = |rule: &StandingRule| {
                    may_act(
                        &self.policy.load().approvers_for(&rule.conversation),
                        &rule.conversation,
                        person,
                        here,
                    )
                    .is_ok()
                };
                let found = self.store.standing_rules()?.into_iter().find(|r| r.id == id);
                let text = match found.filter(ours) {
                    Some(_) => self.revoke(id, person)?,
                    None => None,
                }
                .unwrap_or_else(|| format!("There is no standing rule {id} here."));
                Ok(Handled::notice(text))
            }
        }
    }

    /// The live standing rules of `conversation`, as `/rules` shows them.
    fn rules_in(&self, conversation: &ConversationKey) -> Result<String, StoreError> {
        let now = self.clock.now_ms();
        let lines: Vec<String> = self
            .store
            .standing_rules()?
            .iter()
            .filter(|rule| rule.conversation == *conversation && rule.expires_ms > now)
            .map(|rule| {
                format!(
                    "• {}: {}; until {}, made {}",
                    code(&rule.id.to_string()),
                    shown(rule),
                    date(rule.expires_ms),
                    crate::people::made_by(&rule.by, rule.how)
                )
            })
            .collect();
        Ok(if lines.is_empty() {
            "No standing rules here. Answer a prompt with always to let calls like it run without asking.".into()
        } else {
            format!(
                "**Standing rules here** (these calls run without asking):\n{}\n\nAn approver revokes one with {}.",
                lines.join("\n"),
                code("/rules revoke ID")
            )
        })
    }

    /// Revokes rule `id` for `by`; what to tell them, or none if it went meanwhile.
    fn revoke(&self, id: u64, by: &Person) -> Result<Option<String>, StoreError> {
        let revoked = self
            .store
            .revoke_standing_rule(id, by, self.clock.now_ms(), shown_plain)?;
        Ok(revoked.map(|rule| {
            tracing::info!(rule = id, %by, "standing rule revoked");
            format!(
                "Revoked standing rule {id}: {} asks for approval again in {}.",
                shown(&rule),
                code(&rule.conversation.to_string())
            )
        }))
    }

    /// Every live standing rule, for `passepartout approvals rules`.
    pub fn rules_listing(&self) -> Result<Value, StoreError> {
        let now = self.clock.now_ms();
        let rules: Vec<Value> = self
            .store
            .standing_rules()?
            .iter()
            .filter(|rule| rule.expires_ms > now)
            .map(|rule| {
                json!({
                    "id": rule.id,
                    "conversation": rule.conversation.to_string(),
                    "tool": rule.tool,
                    "covers": shown_plain(rule),
                    "created_ms": rule.created_ms,
                    "expires_ms": rule.expires_ms,
                    "by": rule.by.to_string(),
                    "by_shown": crate::people::shown(&rule.by),
                    "made_by": crate::people::made_by(&rule.by, rule.how),
                    "approval": rule.approval.as_str(),
                })
            })
            .collect();
        Ok(json!({ "rules": rules }))
    }

    /// Revokes rule `id` as the local user `by`: whether it was, and what
    /// came of it for people.
    pub fn revoke_local(&self, id: u64, by: UserId) -> Result<(bool, String), StoreError> {
        let Some(gateway) = self.policy.load().local_gateway().cloned() else {
            return Ok((false, "no gateway has a local user to decide".into()));
        };
        Ok(match self.revoke(id, &Person::known_as(gateway, by))? {
            Some(text) => (true, text),
            None => (false, format!("there is no standing rule {id}")),
        })
    }
}
