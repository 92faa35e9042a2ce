//! The gate with scripted voters, under paused time: who is asked what, in
//! parallel, within the timeout, and what the decision becomes.

use async_trait::async_trait;
use tokio::time::Instant;

use super::*;
use crate::model::llm::testing::{Scripted, answer};
use crate::model::llm::{ChatMessage, ChatModel, ChatRequest, ChatResponse, LlmError};

/// A voter that never answers.
struct Silent(&'static str);

#[async_trait]
impl ChatModel for Silent {
    fn name(&self) -> &str {
        self.0
    }
    fn endpoint(&self) -> &str {
        "http://silent.test/v1"
    }
    async fn complete(&self, _: &ChatRequest) -> Result<ChatResponse, LlmError> {
        std::future::pending().await
    }
    async fn probe(&self) -> Result<(), LlmError> {
        Ok(())
    }
}

fn says(text: &str) -> Result<ChatResponse, LlmError> {
    Ok(answer("m", Some(text), Vec::new()))
}

const AGREE: &str = r#"{"vote":"agree","reason":"it lists files"}"#;
const DISAGREE: &str = r#"{"vote":"disagree","reason":"deletes files outside the repo"}"#;

fn gate(models: Vec<Arc<dyn ChatModel>>, adjust: impl FnOnce(&mut ConsensusConfig)) -> Consensus {
    let mut config = ConsensusConfig {
        voters: models.iter().map(|m| m.name().to_owned()).collect(),
        applies_to: AppliesTo::Tools(vec!["shell".into(), "files__*".into()]),
        ..ConsensusConfig::default()
    };
    adjust(&mut config);
    let cascade = Arc::new(Cascade::new(models, Duration::from_secs(30)));
    Consensus::new(&config, cascade).expect("voters configured")
}

/// An agreeing, a disagreeing and a silent voter.
fn three(on_disagreement: OnDisagreement) -> (Consensus, Arc<Scripted>, Arc<Scripted>) {
    let agree = Scripted::new("agree", vec![says(AGREE)]);
    let disagree = Scripted::new("disagree", vec![says(DISAGREE)]);
    let gate = gate(
        vec![agree.clone(), disagree.clone(), Arc::new(Silent("silent"))],
        |config| config.on_disagreement = on_disagreement,
    );
    (gate, agree, disagree)
}

fn shell(command: &str) -> ProposedCall {
    ProposedCall {
        tool: "shell".into(),
        arguments: serde_json::json!({ "command": command }),
    }
}

fn seen() -> Context {
    Context {
        system: "You help.".into(),
        earlier: Vec::new(),
        turn: vec![ChatMessage::user("tidy up")],
    }
}

fn held(skill: &str, call: ProposedCall) -> Decision {
    Decision::NeedsApproval {
        skill: skill.into(),
        reason: "shell asks".into(),
        call,
    }
}

const SUMMARY: &str = "1 of 3 models agree (2 needed); disagree disagrees: \"deletes files outside the repo\"; \
                       silent did not vote (no answer within 20 s)";

#[tokio::test(start_paused = true)]
async fn voters_are_asked_at_once_and_a_silent_one_abstains_at_the_timeout() {
    let agree = Scripted::new("agree", vec![says(AGREE)]);
    let gate = gate(
        vec![
            agree.clone(),
            Arc::new(Silent("silent-1")),
            Arc::new(Silent("silent-2")),
        ],
        |config| config.timeout_s = 20,
    );
    let started = Instant::now();
    let tally = gate.poll(&seen(), &shell("ls")).await;
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(20),
        "both silent voters waited at once"
    );
    assert_eq!(tally.ballots[0].vote, Vote::Agree("it lists files".into()));
    for ballot in &tally.ballots[1..] {
        assert_eq!(
            ballot.vote,
            Vote::Abstain(Abstention::TimedOut(Duration::from_secs(20)))
        );
        assert_eq!(ballot.used, Tokens::default());
    }
    assert_eq!(tally.outcome(), VoteOutcome::Inconclusive);
    let asked = agree.seen();
    assert_eq!(asked.len(), 1);
    assert!(asked[0].tools.is_empty(), "voters are offered no tools");
    assert_eq!(asked[0].messages[0].content, VOTER_SYSTEM);
    assert!(asked[0].messages[1].content.contains("[person] tidy up"));
    assert!(asked[0].messages[1].content.contains(r#"arguments: {"command":"ls"}"#));
}

#[tokio::test(start_paused = true)]
async fn with_deny_a_rejected_call_is_refused_even_one_that_needed_approval() {
    let (gate, _, _) = three(OnDisagreement::Deny);
    let reviewed = gate.review(Decision::Run(shell("rm -rf ../x")), &seen()).await;
    assert_eq!(
        reviewed.decision,
        Decision::Reject {
            skill: SKILL.into(),
            reason: format!("the models voted against it: {SUMMARY}"),
            call: shell("rm -rf ../x"),
        }
    );
    assert_eq!(reviewed.votes, None, "nobody is asked");
    assert_eq!(reviewed.tally.used()["agree"].tokens_in, 30);
    assert_eq!(reviewed.tally.used()["silent"], Tokens::default());

    let (gate, _, _) = three(OnDisagreement::Deny);
    let reviewed = gate
        .review(held("approval_policy", shell("rm -rf ../x")), &seen())
        .await;
    assert!(matches!(reviewed.decision, Decision::Reject { ref skill, .. } if skill == SKILL));
}

#[tokio::test(start_paused = true)]
async fn with_ask_a_rejected_call_goes_to_a_person_with_the_votes() {
    let (gate, _, _) = three(OnDisagreement::Ask);
    let reviewed = gate.review(Decision::Run(shell("rm -rf ../x")), &seen()).await;
    assert_eq!(
        reviewed.decision,
        Decision::NeedsApproval {
            skill: SKILL.into(),
            reason: "the models voted against running it".into(),
            call: shell("rm -rf ../x"),
        }
    );
    assert_eq!(reviewed.votes.as_deref(), Some(SUMMARY));

    let (gate, _, _) = three(OnDisagreement::Ask);
    let reviewed = gate.review(held("approval_policy", shell("ls")), &seen()).await;
    assert_eq!(reviewed.decision, held("approval_policy", shell("ls")));
    assert_eq!(reviewed.votes.as_deref(), Some(SUMMARY));
}

#[tokio::test(start_paused = true)]
async fn agreement_never_approves_a_call_that_needs_a_person() {
    let (gate, _, _) = three(OnDisagreement::Deny);
    let gate = Consensus { quorum: 1, ..gate };
    let reviewed = gate.review(held("approval_policy", shell("ls")), &seen()).await;
    assert_eq!(reviewed.tally.outcome(), VoteOutcome::Agreed);
    assert_eq!(reviewed.decision, held("approval_policy", shell("ls")));
    assert!(reviewed.votes.unwrap().starts_with("1 of 3 models agree (1 needed)"));

    let (gate, _, _) = three(OnDisagreement::Deny);
    let gate = Consensus { quorum: 1, ..gate };
    let reviewed = gate.review(Decision::Run(shell("ls")), &seen()).await;
    assert_eq!(reviewed.decision, Decision::Run(shell("ls")));
    assert_eq!(reviewed.votes, None);
}

#[tokio::test(start_paused = true)]
async fn voters_that_fail_or_answer_out_of_form_never_let_a_call_run_unasked() {
    let rambling = Scripted::new("rambling", vec![says("Sure, looks fine to me!")]);
    let failing = Scripted::new("failing", vec![Err(LlmError::Timeout)]);
    let gate = gate(vec![rambling, failing], |config| {
        config.on_disagreement = OnDisagreement::Deny;
    });
    let reviewed = gate.review(Decision::Run(shell("ls")), &seen()).await;
    assert_eq!(reviewed.tally.ballots[0].vote, Vote::Abstain(Abstention::Malformed));
    assert_eq!(
        reviewed.tally.ballots[0].used.tokens_in, 30,
        "an answer out of form still cost its tokens"
    );
    assert!(matches!(
        reviewed.tally.ballots[1].vote,
        Vote::Abstain(Abstention::Failed(_))
    ));
    assert_eq!(reviewed.tally.outcome(), VoteOutcome::Inconclusive);
    assert!(
        matches!(&reviewed.decision, Decision::NeedsApproval { skill, .. } if skill == SKILL),
        "{reviewed:?}"
    );
    assert_eq!(
        reviewed.votes.as_deref(),
        Some(
            "0 of 2 models agree (2 needed); rambling did not vote (answered out of form); \
             failing did not vote (it failed)"
        )
    );
}

#[tokio::test]
async fn the_scope_is_the_tools_named_or_the_calls_held_for_approval() {
    let (tools, _, _) = three(OnDisagreement::Ask);
    assert!(tools.applies(&Decision::Run(shell("ls"))));
    assert!(tools.applies(&held("approval_policy", shell("ls"))));
    let file = ProposedCall {
        tool: "files__read".into(),
        arguments: serde_json::json!({}),
    };
    assert!(tools.applies(&Decision::Run(file)), "SERVER__* names a server's tools");
    let time = ProposedCall {
        tool: "current_time".into(),
        arguments: serde_json::json!({}),
    };
    assert!(!tools.applies(&Decision::Run(time.clone())));
    let refused = Decision::Reject {
        skill: "shell_safety".into(),
        reason: "no".into(),
        call: shell("rm -rf /"),
    };
    assert!(!tools.applies(&refused), "a refused call is not voted on");

    let approval = Consensus {
        applies_to: AppliesTo::Approval,
        ..tools
    };
    assert!(!approval.applies(&Decision::Run(shell("ls"))));
    assert!(approval.applies(&held("rules", time)));
}
