//! The consensus gate (`[skills.consensus]`): before a call in scope is run
//! or put to a person, other models vote on it.
//!
//! After the skills decide, a call they would run or hold for approval is
//! in scope when `applies_to` says so (`"approval"`: every call held for
//! approval; a list: every call of those tools). Each voter — a provider of
//! the cascade, by name — is asked at once, in parallel, each within the
//! voters' timeout, with the same question: the conversation as the
//! proposing model saw it and the call (`question.rs`), no tools offered.
//! Each answers one JSON object or abstains (`ballot.rs`); the votes are
//! counted against the quorum (`tally.rs`). Then ([`judge`]):
//! - agreed: the skills' decision stands;
//! - rejected (short of the quorum, with a dissent): with
//!   `on_disagreement = "deny"` the call is refused — the model and the
//!   person are told why, and nobody is asked; with `"ask"` a call that
//!   would have run goes to a person instead;
//! - inconclusive (short of the quorum, no dissent: voters failed): a call
//!   that would have run goes to a person, whatever `on_disagreement` says —
//!   voters that cannot be reached neither let a call through unseen nor
//!   refuse it.
//!
//! Consensus never approves: a call that needs a person's approval still
//! does, and every prompt for a call in scope shows how the models voted.
//! The outcome goes into the audit trail and the voters' tokens into the
//! turn's usage.

mod ballot;
mod question;
mod tally;

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;

pub use ballot::{Abstention, Vote, parse};
pub use question::{VOTER_SYSTEM, question};
pub use tally::{Ballot, Tally};

use super::cascade::{Cascade, Context};
use crate::config::{AppliesTo, ConsensusConfig, OnDisagreement};
use crate::foundation::clock::Clock;
use crate::model::signal::Origin;
use crate::people::audit::{AuditEvent, Audited, VoteOutcome};
use crate::safety::skills::{Decision, ProposedCall, names_tool};
use crate::store::Tokens;

/// The name the gate goes by, as the skill that refuses or asks.
pub const SKILL: &str = "consensus";

/// The gate, with the cascade its voters are entries of.
pub struct Consensus {
    voters: Vec<String>,
    quorum: usize,
    applies_to: AppliesTo,
    on_disagreement: OnDisagreement,
    timeout: Duration,
    cascade: Arc<Cascade>,
}

/// A decision after the vote.
#[derive(Clone, Debug, PartialEq)]
pub struct Reviewed {
    pub decision: Decision,
    /// How the models voted, for the prompt of a call held for approval.
    pub votes: Option<String>,
    pub tally: Tally,
}

impl Consensus {
    /// The gate `config` describes, asking `cascade`'s entries; `None`
    /// when nobody votes.
    pub fn new(config: &ConsensusConfig, cascade: Arc<Cascade>) -> Option<Self> {
        config.enabled().then(|| Self {
            voters: config.voters.clone(),
            quorum: config.quorum(),
            applies_to: config.applies_to.clone(),
            on_disagreement: config.on_disagreement,
            timeout: Duration::from_secs(config.timeout_s),
            cascade,
        })
    }

    /// Whether the call `decision` is about goes to the vote.
    pub fn applies(&self, decision: &Decision) -> bool {
        match (&self.applies_to, decision) {
            (_, Decision::Reject { .. }) => false,
            (AppliesTo::Approval, decision) => matches!(decision, Decision::NeedsApproval { .. }),
            (AppliesTo::Tools(tools), Decision::Run(call) | Decision::NeedsApproval { call, .. }) => {
                tools.iter().any(|tool| names_tool(tool, &call.tool))
            }
        }
    }

    /// Puts `decision` to the vote (whether or not it [applies](Self::applies)),
    /// the call having been proposed after `seen`.
    pub async fn review(&self, decision: Decision, seen: &Context) -> Reviewed {
        let call = match &decision {
            Decision::Run(call) | Decision::NeedsApproval { call, .. } | Decision::Reject { call, .. } => call,
        };
        let tally = self.poll(seen, call).await;
        let (decision, votes) = judge(decision, &tally, self.on_disagreement);
        Reviewed { decision, votes, tally }
    }

    /// Every voter's ballot on `call`, asked at once.
    pub async fn poll(&self, seen: &Context, call: &ProposedCall) -> Tally {
        let asked = question(seen, call);
        let ballots = join_all(self.voters.iter().map(|voter| self.ballot(voter, &asked))).await;
        Tally {
            ballots,
            quorum: self.quorum,
        }
    }

    /// `voter`'s ballot on `asked`, within the timeout.
    async fn ballot(&self, voter: &str, asked: &Context) -> Ballot {
        let answer = tokio::time::timeout(self.timeout, self.cascade.consult(voter, asked)).await;
        let (vote, used) = match answer {
            Err(_) => (Vote::Abstain(Abstention::TimedOut(self.timeout)), Tokens::default()),
            Ok(None) => (
                Vote::Abstain(Abstention::Failed("no provider has this name".into())),
                Tokens::default(),
            ),
            Ok(Some(Err(skip))) => (Vote::Abstain(Abstention::Failed(skip.to_string())), Tokens::default()),
            Ok(Some(Ok(response))) => {
                let used = Tokens {
                    tokens_in: response.usage.input_tokens,
                    tokens_out: response.usage.output_tokens,
                };
                let vote = if response.tool_calls.is_empty() {
                    parse(response.content.as_deref().unwrap_or_default())
                } else {
                    Vote::Abstain(Abstention::Malformed)
                };
                (vote, used)
            }
        };
        match &vote {
            Vote::Abstain(why) => tracing::warn!(voter, %why, "a voter did not vote"),
            Vote::Agree(_) => tracing::debug!(voter, "a voter agrees"),
            Vote::Disagree(reason) => tracing::info!(voter, %reason, "a voter disagrees"),
        }
        Ballot {
            voter: voter.to_owned(),
            vote,
            used,
        }
    }
}

/// What `decision` becomes after the vote `tally`, and how the models
/// voted when a person is to be shown it. Never more permissive than
/// `decision`: a held call stays held, a refused one is never voted on.
pub fn judge(decision: Decision, tally: &Tally, on_disagreement: OnDisagreement) -> (Decision, Option<String>) {
    let summary = tally.summary();
    let held = |call, reason: &str| Decision::NeedsApproval {
        skill: SKILL.to_owned(),
        reason: reason.to_owned(),
        call,
    };
    match (tally.outcome(), on_disagreement, decision) {
        (_, _, refused @ Decision::Reject { .. }) => (refused, None),
        (VoteOutcome::Rejected, OnDisagreement::Deny, Decision::Run(call) | Decision::NeedsApproval { call, .. }) => (
            Decision::Reject {
                skill: SKILL.to_owned(),
                reason: format!("the models voted against it: {summary}"),
                call,
            },
            None,
        ),
        (VoteOutcome::Agreed, _, run @ Decision::Run(_)) => (run, None),
        (VoteOutcome::Rejected, OnDisagreement::Ask, Decision::Run(call)) => {
            (held(call, "the models voted against running it"), Some(summary))
        }
        (VoteOutcome::Inconclusive, _, Decision::Run(call)) => (
            held(call, "too few models voted on it to let it run unasked"),
            Some(summary),
        ),
        (_, _, needs @ Decision::NeedsApproval { .. }) => (needs, Some(summary)),
    }
}

/// The audit event for the vote `tally` on `call`, proposed in the turn
/// `origin` started; `refused` when the vote refused it.
pub fn voted(origin: &Origin, clock: &Clock, call: &ProposedCall, tally: &Tally, refused: bool) -> AuditEvent {
    let count = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    AuditEvent {
        at_ms: clock.now_ms(),
        conversation: origin.conversation.clone(),
        what: Audited::Voted {
            tool: call.tool.clone(),
            action: call.summary(),
            requester: origin.sender.clone(),
            outcome: tally.outcome(),
            agree: count(tally.agree()),
            disagree: count(tally.disagree()),
            abstain: count(tally.abstain()),
            summary: tally.summary(),
            refused,
        },
    }
}

#[cfg(test)]
mod tests;
