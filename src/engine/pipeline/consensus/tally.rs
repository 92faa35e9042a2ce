//! Counting the votes. With `quorum` agreeing votes needed:
//! - **agreed**: at least `quorum` voters agree;
//! - **rejected**: fewer agree, and at least one disagrees;
//! - **inconclusive**: fewer agree, and none disagrees — too many voters
//!   failed, timed out or answered out of form to tell.
//!
//! Abstentions never count for a call, and a single abstention never counts
//! against it: only a disagreeing vote rejects.

use super::ballot::{Abstention, Vote};
use crate::store::{ByProvider, Tokens, VoteOutcome};

/// One voter's vote, and what asking it cost.
#[derive(Clone, Debug, PartialEq)]
pub struct Ballot {
    /// The voter's provider name.
    pub voter: String,
    pub vote: Vote,
    /// The tokens its answer used (none when it did not answer).
    pub used: Tokens,
}

/// Every voter's ballot, in the configured order.
#[derive(Clone, Debug, PartialEq)]
pub struct Tally {
    pub ballots: Vec<Ballot>,
    /// Agreeing votes needed.
    pub quorum: usize,
}

impl Tally {
    pub fn agree(&self) -> usize {
        self.count(|vote| matches!(vote, Vote::Agree(_)))
    }

    pub fn disagree(&self) -> usize {
        self.count(|vote| matches!(vote, Vote::Disagree(_)))
    }

    pub fn abstain(&self) -> usize {
        self.count(|vote| matches!(vote, Vote::Abstain(_)))
    }

    fn count(&self, which: impl Fn(&Vote) -> bool) -> usize {
        self.ballots.iter().filter(|ballot| which(&ballot.vote)).count()
    }

    /// What the votes come to.
    pub fn outcome(&self) -> VoteOutcome {
        if self.agree() >= self.quorum {
            VoteOutcome::Agreed
        } else if self.disagree() > 0 {
            VoteOutcome::Rejected
        } else {
            VoteOutcome::Inconclusive
        }
    }

    /// One line for a person: how many agree of how many, then each
    /// dissent with its reason and each voter that did not vote with why:
    /// `2 of 3 models agree (2 needed); gpt-x disagrees: "deletes files outside the repo"`.
    pub fn summary(&self) -> String {
        let mut parts = vec![format!(
            "{} of {} models agree ({} needed)",
            self.agree(),
            self.ballots.len(),
            self.quorum
        )];
        for ballot in &self.ballots {
            match &ballot.vote {
                Vote::Agree(_) => {}
                Vote::Disagree(reason) if reason.is_empty() => parts.push(format!("{} disagrees", ballot.voter)),
                Vote::Disagree(reason) => parts.push(format!("{} disagrees: \"{reason}\"", ballot.voter)),
                Vote::Abstain(why) => parts.push(format!("{} did not vote ({})", ballot.voter, short(why))),
            }
        }
        parts.join("; ")
    }

    /// The tokens the voters used, by provider.
    pub fn used(&self) -> ByProvider {
        let mut used = ByProvider::new();
        for ballot in &self.ballots {
            crate::store::add_usage(&mut used, &ByProvider::from([(ballot.voter.clone(), ballot.used)]));
        }
        used
    }
}

/// Why a voter did not vote, short enough for a prompt.
fn short(why: &Abstention) -> String {
    match why {
        Abstention::Failed(_) => "it failed".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn ballot(voter: &str, vote: Vote) -> Ballot {
        Ballot {
            voter: voter.into(),
            vote,
            used: Tokens {
                tokens_in: 10,
                tokens_out: 2,
            },
        }
    }

    fn agree(voter: &str) -> Ballot {
        ballot(voter, Vote::Agree("fine".into()))
    }

    fn disagree(voter: &str) -> Ballot {
        ballot(voter, Vote::Disagree("deletes files outside the repo".into()))
    }

    fn abstain(voter: &str) -> Ballot {
        ballot(voter, Vote::Abstain(Abstention::TimedOut(Duration::from_secs(20))))
    }

    fn tally(quorum: usize, ballots: Vec<Ballot>) -> Tally {
        Tally { ballots, quorum }
    }

    #[test]
    fn the_quorum_of_agreeing_votes_carries_it_whatever_the_others_say() {
        assert_eq!(
            tally(2, vec![agree("a"), agree("b"), disagree("c")]).outcome(),
            VoteOutcome::Agreed
        );
        assert_eq!(
            tally(1, vec![abstain("a"), agree("b"), disagree("c")]).outcome(),
            VoteOutcome::Agreed
        );
    }

    #[test]
    fn short_of_the_quorum_one_dissent_rejects() {
        assert_eq!(
            tally(2, vec![agree("a"), disagree("b"), abstain("c")]).outcome(),
            VoteOutcome::Rejected
        );
        assert_eq!(
            tally(3, vec![agree("a"), agree("b"), disagree("c")]).outcome(),
            VoteOutcome::Rejected
        );
    }

    #[test]
    fn short_of_the_quorum_without_dissent_is_inconclusive() {
        assert_eq!(
            tally(2, vec![agree("a"), abstain("b"), abstain("c")]).outcome(),
            VoteOutcome::Inconclusive
        );
        assert_eq!(
            tally(1, vec![abstain("a"), abstain("b")]).outcome(),
            VoteOutcome::Inconclusive,
            "voters that all fail never let a call through, nor refuse it"
        );
    }

    #[test]
    fn the_summary_names_dissent_and_silence() {
        let votes = tally(2, vec![agree("a"), disagree("gpt-x"), abstain("slow")]);
        assert_eq!((votes.agree(), votes.disagree(), votes.abstain()), (1, 1, 1));
        assert_eq!(
            votes.summary(),
            "1 of 3 models agree (2 needed); gpt-x disagrees: \"deletes files outside the repo\"; \
             slow did not vote (no answer within 20 s)"
        );
        let failed = tally(
            1,
            vec![ballot(
                "down",
                Vote::Abstain(Abstention::Failed("unreachable at http://x".into())),
            )],
        );
        assert_eq!(
            failed.summary(),
            "0 of 1 models agree (1 needed); down did not vote (it failed)"
        );
    }

    #[test]
    fn what_the_voters_used_is_counted_by_provider() {
        let used = tally(2, vec![agree("a"), disagree("b")]).used();
        assert_eq!(used.len(), 2);
        assert_eq!(used["a"].tokens_in, 10);
        assert_eq!(used["b"].tokens_out, 2);
    }
}
