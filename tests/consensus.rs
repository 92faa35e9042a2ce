//! The consensus gate end to end: a real daemon whose main model asks for
//! the counting `record` tool, and three more fake models on loopback that
//! vote on it — one agrees, one disagrees, one holds its answer past the
//! voters' five-second timeout. The vote shows in the approval prompt and in
//! the audit trail; with `on_disagreement = "deny"` a rejected call never
//! reaches a person; a voter that fails or times out is an abstention; what
//! the voters used shows in `/usage`.

use crate::support;

use passepartout::config::{AppliesTo, Config, OnDisagreement, ProviderConfig};
use passepartout_gateway::ReplyKind;
use passepartout_socket::ServerFrame;
use serde_json::Value;
use support::approvals::{Setup, ask_for_approval, model};
use support::fake_llm::{FakeLlm, Script, last_message};
use support::harness::WAIT;

const AGREE: &str = r#"{"vote":"agree","reason":"the person asked for it"}"#;
const DISAGREE: &str = r#"{"vote":"disagree","reason":"records more than was asked"}"#;

/// How the prompt and the refusal describe this vote.
const SUMMARY: &str = "1 of 3 models agree (2 needed); disagree disagrees: \"records more than was asked\"; \
                       slow did not vote (no answer within 5 s)";

/// The three voters, each a fake model of its own.
struct Voters {
    agree: FakeLlm,
    disagree: FakeLlm,
    slow: FakeLlm,
}

impl Voters {
    async fn start() -> Voters {
        let voters = Voters {
            agree: FakeLlm::start().await,
            disagree: FakeLlm::start().await,
            slow: FakeLlm::start().await,
        };
        voters.agree.set_responder(|_| Script::reply_using(AGREE, 100, 7));
        voters.disagree.set_responder(|_| Script::reply_using(DISAGREE, 200, 9));
        voters.slow.set_responder(|_| Script::Hang);
        voters
    }

    /// Adds them to `config` as providers and as the gate's voters.
    fn configure(&self, config: &mut Config, on_disagreement: OnDisagreement) {
        for (name, llm) in [
            ("agree", &self.agree),
            ("disagree", &self.disagree),
            ("slow", &self.slow),
        ] {
            config.llm.providers.push(ProviderConfig {
                name: name.into(),
                base_url: llm.base_url(),
                model: format!("{name}-model"),
                timeout_s: 10,
                ..ProviderConfig::default()
            });
        }
        let consensus = &mut config.skills.consensus;
        consensus.voters = vec!["agree".into(), "disagree".into(), "slow".into()];
        consensus.on_disagreement = on_disagreement;
        // Long enough for the voters that answer (at once) on a loaded
        // machine: only the slow one, which holds its answer, may reach it.
        consensus.timeout_s = 5;
    }
}

/// The approval tests' daemon (`record` needs approval) with the voters,
/// its main model answering a tool's result with a reply quoting it.
async fn start(adjust: impl FnOnce(&mut Config)) -> Setup {
    let setup = Setup::start_with(adjust).await;
    setup.llm.set_responder(|request: &Value| {
        let last = last_message(request);
        if last["role"] == "tool" {
            Script::Reply(format!("noted: {}", last["content"].as_str().unwrap_or_default()))
        } else {
            model(request)
        }
    });
    setup
}

/// The audit trail's lines, newest first.
async fn audit(setup: &Setup) -> Vec<String> {
    let listing = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: true })
        .await
        .expect("approvals");
    listing["audit"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|event| event["event"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[tokio::test]
async fn the_vote_is_shown_in_the_prompt_and_a_person_still_decides() {
    let voters = Voters::start().await;
    let setup = start(|config| voters.configure(config, OnDisagreement::Ask)).await;
    let mut chat = setup.chat("alice").await;
    let (_original, prompt) = ask_for_approval(&mut chat, "the milk").await;
    assert!(
        prompt.text.contains(&format!("\nModels: {SUMMARY}.\n")),
        "{}",
        prompt.text
    );
    assert!(
        prompt.text.contains("Why: record always needs a person's approval.\n"),
        "{}",
        prompt.text
    );

    // Every voter was asked the same question, with the call and no tools.
    let asked = voters.agree.wait_for_requests(1, WAIT).await;
    let question = asked[0]["messages"][1]["content"].as_str().unwrap().to_owned();
    assert!(question.contains("[person] please record the milk"), "{question}");
    assert!(question.contains("tool: record\narguments: {\"what\":\"please record the milk\"}"));
    assert!(
        asked[0]
            .get("tools")
            .is_none_or(|tools| tools.as_array().is_some_and(Vec::is_empty))
    );
    for other in [&voters.disagree, &voters.slow] {
        assert_eq!(
            other.wait_for_requests(1, WAIT).await[0]["messages"],
            asked[0]["messages"]
        );
    }
    assert_eq!(
        setup.record.calls(),
        0,
        "agreement or not, nothing runs before a person approves"
    );
    assert_eq!(setup.listed(&prompt.token).await["votes"], SUMMARY);
    let trail = audit(&setup).await;
    assert!(
        trail
            .iter()
            .any(|line| line.starts_with("models voted on `record ")
                && line.ends_with(&format!(": rejected ({SUMMARY})"))),
        "{trail:#?}"
    );

    let notice = chat.answer("yes", Some(&prompt.id)).await;
    assert!(notice.starts_with(&format!("Approved {}", prompt.token)), "{notice}");
    let _ = chat
        .take("the outcome's answer", |frame| {
            matches!(frame, ServerFrame::Reply { .. })
        })
        .await;
    assert_eq!(setup.record.calls(), 1, "the person's approval runs it");
}

#[tokio::test]
async fn with_deny_a_rejected_call_never_reaches_a_person() {
    let voters = Voters::start().await;
    let setup = start(|config| voters.configure(config, OnDisagreement::Deny)).await;
    let mut chat = setup.chat("bob").await;
    let original = chat.send("please record the milk").await;
    let refusal = chat.notice(&original).await;
    assert_eq!(
        refusal,
        format!(
            "I did not run record {{\"what\":\"please record the milk\"}}: the models voted against it: {SUMMARY}."
        )
    );
    let (kind, answer) = chat.reply(&original).await;
    assert_eq!(kind, ReplyKind::Answer);
    assert_eq!(
        answer,
        format!("noted: error: refused: consensus: the models voted against it: {SUMMARY}"),
        "the model is told why"
    );
    let listing = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: true })
        .await
        .expect("approvals");
    assert_eq!(listing["approvals"], Value::Array(Vec::new()), "nobody was asked");
    assert!(
        !chat.backlog_has(|frame| matches!(frame, ServerFrame::Approval { .. })),
        "{:?}",
        chat.backlog
    );
    assert_eq!(setup.record.calls(), 0);
    let trail = audit(&setup).await;
    assert!(
        trail
            .iter()
            .any(|line| line.ends_with(&format!(": rejected ({SUMMARY}); refused"))),
        "{trail:#?}"
    );
}

#[tokio::test]
async fn with_ask_a_call_that_would_have_run_goes_to_a_person_annotated() {
    let voters = Voters::start().await;
    let setup = start(|config| {
        voters.configure(config, OnDisagreement::Ask);
        config.tools.require_approval.retain(|tool| tool != "record");
        config.skills.consensus.applies_to = AppliesTo::Tools(vec!["record".into()]);
    })
    .await;
    let mut chat = setup.chat("carol").await;
    let (_original, prompt) = ask_for_approval(&mut chat, "the eggs").await;
    assert!(
        prompt.text.contains("Why: the models voted against running it.\n")
            && prompt.text.contains(&format!("\nModels: {SUMMARY}.\n")),
        "{}",
        prompt.text
    );
    assert_eq!(setup.record.calls(), 0);
    let listed = setup.listed(&prompt.token).await;
    assert_eq!(listed["reason"], "the models voted against running it");
}

#[tokio::test]
async fn a_failing_and_a_slow_voter_abstain_and_the_quorum_still_carries_a_call() {
    let voters = Voters::start().await;
    voters.disagree.set_responder(|_| Script::reply_using(AGREE, 200, 9));
    voters.slow.set_responder(|_| Script::status(500));
    let setup = start(|config| {
        voters.configure(config, OnDisagreement::Deny);
        config.tools.require_approval.retain(|tool| tool != "record");
        config.skills.consensus.applies_to = AppliesTo::Tools(vec!["record".into()]);
    })
    .await;
    let mut chat = setup.chat("dave").await;
    let original = chat.send("please record the bread").await;
    let (kind, answer) = chat.reply(&original).await;
    assert_eq!(
        (kind, answer.as_str()),
        (ReplyKind::Answer, "noted: recorded #1: please record the bread")
    );
    assert_eq!(
        setup.record.calls(),
        1,
        "two of three agree: it runs unasked, as the skills decided"
    );
    let trail = audit(&setup).await;
    assert!(
        trail
            .iter()
            .any(|line| line.ends_with(": agreed (2 of 3 models agree (2 needed); slow did not vote (it failed))")),
        "{trail:#?}"
    );

    // Now the slow voter holds its answer and the second one fails: one
    // agreement of two needed, nobody against — a person is asked.
    voters.disagree.set_responder(|_| Script::status(503));
    voters.slow.set_responder(|_| Script::Hang);
    let (_, prompt) = ask_for_approval(&mut chat, "the butter").await;
    assert!(
        prompt.text.contains(
            "\nModels: 1 of 3 models agree (2 needed); \
             disagree did not vote (it failed); slow did not vote (no answer within 5 s).\n"
        ) && prompt
            .text
            .contains("Why: too few models voted on it to let it run unasked.\n"),
        "{}",
        prompt.text
    );
    assert_eq!(setup.record.calls(), 1);
}

#[tokio::test]
async fn what_the_voters_used_shows_in_usage() {
    let voters = Voters::start().await;
    let setup = start(|config| voters.configure(config, OnDisagreement::Deny)).await;
    let mut chat = setup.chat("erin").await;
    let original = chat.send("please record the tea").await;
    let _refused = chat.notice(&original).await;
    let _answer = chat.reply(&original).await;
    let usage_id = chat.send("/usage").await;
    let usage = chat.notice(&usage_id).await;
    for line in ["This conversation today: ", "In total today: "] {
        let shown = usage.lines().find(|l| l.starts_with(line)).unwrap_or_default();
        assert!(
            shown.ends_with("(of which consensus votes: 300 in, 16 out)"),
            "{line:?} in {usage}"
        );
    }
    let status = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status)
        .await
        .expect("status");
    let voted = status["providers"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["name"] == "disagree")
        .cloned()
        .unwrap_or_default();
    assert_eq!(voted["tokens_in"], 200, "{status:#}");
}

#[tokio::test]
async fn a_vote_waiting_on_a_voter_holds_up_no_other_conversation() {
    let voters = Voters::start().await;
    let setup = start(|config| {
        voters.configure(config, OnDisagreement::Ask);
        config.skills.consensus.timeout_s = 60;
    })
    .await;
    let mut waiting = setup.chat("frank").await;
    let original = waiting.send("please record the jam").await;
    voters.slow.wait_for_requests(1, WAIT).await;

    // The slow voter holds its answer; another conversation goes on.
    let mut other = setup.chat("grace").await;
    other.sync("hello").await;
    let listing = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: false })
        .await
        .expect("approvals");
    assert_eq!(listing["approvals"], Value::Array(Vec::new()), "the vote still waits");

    // The slow voter goes away: it did not vote, and the prompt comes.
    voters.slow.shutdown();
    let prompt = waiting.prompt(&original).await;
    assert!(prompt.text.contains("slow did not vote (it failed)"), "{}", prompt.text);
}
