//! The local user's side: `passepartout approvals` lists approvals (and the
//! audit trail), `passepartout approvals approve|deny TOKEN` decides one
//! (`--always`: and makes a standing rule). The
//! local user (of the gateway whose every user approves, in the policy) is
//! an approver of every approval, from anywhere.

use passepartout_admin::Via;
use passepartout_gateway::markup::code;
use passepartout_gateway::{ApprovalToken, ConversationKey, UserId};
use serde_json::{Value, json};

use super::desk::owed_by;
use super::record::{Approval, Decision, How, Person, Status};
use super::{Approvals, Owed};
use crate::store::{Decided, StoreError};

/// How many audit events `approvals --all` shows.
const AUDIT_SHOWN: usize = 200;

impl Approvals {
    /// The pending approvals, or with `all` every approval and the newest audit events.
    pub fn listing(&self, all: bool) -> Result<Value, StoreError> {
        let approvals: Vec<Value> = self
            .store
            .approvals()?
            .iter()
            .filter(|a| all || a.is_pending())
            .map(|a| self.describe(a))
            .collect();
        let mut listing = json!({ "approvals": approvals });
        if all {
            let audit: Vec<Value> = self
                .store
                .audit_events(AUDIT_SHOWN)?
                .iter()
                .map(|event| {
                    json!({
                        "at_ms": event.at_ms,
                        "conversation": event.conversation.to_string(),
                        "event": event.describe(),
                    })
                })
                .collect();
            listing["audit"] = Value::Array(audit);
        }
        Ok(listing)
    }

    /// `/approvals` in a chat: what waits for approval in `conversation`.
    pub fn waiting_in(&self, conversation: &ConversationKey) -> Result<String, StoreError> {
        let now = self.clock.now_ms();
        let lines: Vec<String> = self
            .store
            .approvals()?
            .iter()
            .filter(|a| a.is_pending() && a.conversation == *conversation)
            .map(|a| {
                format!(
                    "• {}: {} (asked by {} {} ago; {} left)",
                    code(a.token.as_str()),
                    code(&a.action()),
                    requester_shown(a),
                    short_span(now.saturating_sub(a.created_ms)),
                    short_span(a.expires_ms.saturating_sub(now)),
                )
            })
            .collect();
        Ok(if lines.is_empty() {
            "Nothing waits for approval here.".into()
        } else {
            format!(
                "**Waiting for approval**:\n{}\n\nAnswer with `approve TOKEN` or `deny TOKEN`.",
                lines.join("\n")
            )
        })
    }

    pub(super) fn describe(&self, approval: &Approval) -> Value {
        let decision = approval.decision.as_ref().map(|d| {
            json!({
                "by": d.by.as_ref().map(ToString::to_string),
                "by_shown": crate::people::decided_by(d),
                "how": d.how.as_str(),
                "at_ms": d.at_ms,
            })
        });
        json!({
            "token": approval.token.as_str(),
            "status": approval.status.as_str(),
            "action": approval.action(),
            // What exactly runs, for a page that shows the call whole.
            "tool": approval.call.tool,
            "arguments": approval.call.arguments,
            "reason": approval.reason,
            "votes": approval.votes,
            "conversation": approval.conversation.to_string(),
            "requester": approval.requester.as_str(),
            "requester_shown": requester_shown(approval),
            "created_ms": approval.created_ms,
            "expires_ms": approval.expires_ms,
            "expires_in_s": approval.expires_ms.saturating_sub(self.clock.now_ms()) / 1000,
            // What "always" would let run, in the offer's own words.
            "always_lets": self.standing().lets(approval),
            "decision": decision,
        })
    }

    /// Decides the approval `token` names as the local user `by`, answering
    /// `via` the terminal or the web dashboard (with `always`, an approval
    /// also makes a standing rule). Returns what came of it and the
    /// conversation owed the outcome.
    pub fn decide_local(
        &self,
        token: &str,
        approve: bool,
        always: bool,
        by: UserId,
        via: Via,
    ) -> Result<(passepartout_admin::Decision, Option<Owed>), StoreError> {
        let answer = |decided: bool, message: String| passepartout_admin::Decision { decided, message };
        let Ok(token) = ApprovalToken::parse_typed(token) else {
            let shown: String = token.chars().take(16).collect();
            return Ok((answer(false, format!("`{shown}` is not an approval token")), None));
        };
        let Some(approval) = self.store.approval(&token)? else {
            return Ok((
                answer(false, format!("no approval has the token {}", token.as_str())),
                None,
            ));
        };
        let Some(gateway) = self.policy.load().local_gateway().cloned() else {
            return Ok((answer(false, "no gateway has a local user to decide".into()), None));
        };
        let decision = Decision {
            outcome: if approve { Status::Approved } else { Status::Denied },
            by: Some(Person::known_as(gateway, by)),
            how: match via {
                Via::Terminal => How::Cli,
                Via::Web => How::Web,
            },
            at_ms: self.clock.now_ms(),
            message: None,
        };
        let (decided, rule) = self.decide_counted(&approval, decision, always && approve)?;
        let (won, mut text, owed) = describe_won_or_first(self, decided);
        if let Some(rule) = rule.filter(|_| won) {
            text = format!("{text} {}", self.made_text(&rule));
        }
        Ok((answer(won, text), owed))
    }
}

/// Whether a decision by the local user won, what to tell them, and the
/// conversation owed the outcome (if it still is).
pub(super) fn describe_won_or_first(desk: &Approvals, decided: Decided) -> (bool, String, Option<Owed>) {
    match decided {
        Decided::Won(decided) => (true, desk.outcome_text(&decided, None), Some(owed_by(&decided))),
        Decided::Already(first) => {
            let owed = (!first.settled).then(|| owed_by(&first));
            (false, super::desk::already(&first), owed)
        }
    }
}

/// A span of milliseconds as "12 min" or "40 s".
fn short_span(ms: u64) -> String {
    let seconds = ms / 1000;
    if seconds >= 60 {
        format!("{} min", seconds / 60)
    } else {
        format!("{seconds} s")
    }
}

/// Who asked for `approval`, as people read them: their name and username
/// when their platform gave them, then the id.
fn requester_shown(approval: &Approval) -> String {
    crate::people::named(
        &approval.conversation.gateway,
        &approval.requester,
        &approval.requester_names,
    )
}
