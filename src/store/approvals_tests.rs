//! The approval trees against a real sled store.

use passepartout_gateway::{ApprovalToken, ChatId, GatewayId, UserId};

use super::*;
use crate::store::TurnCommit;
use crate::store::records::{How, Person, ProposedCall};
use crate::store::tests::{conversation, open_temp};

fn approval(token: &str) -> Approval {
    Approval {
        id: 0,
        token: ApprovalToken::new(token).unwrap(),
        conversation: conversation("c"),
        requester: UserId::new("1").unwrap(),
        requester_names: Default::default(),
        message_id: MessageId::new("m").unwrap(),
        call: ProposedCall {
            tool: "shell".into(),
            arguments: serde_json::json!({ "command": "ls" }),
        },
        skill: "approval_policy".into(),
        reason: "shell asks".into(),
        votes: None,
        approvers: Vec::new(),
        created_ms: 1,
        expires_ms: 100,
        status: Status::Pending,
        decision: None,
        run: RunState::NotStarted,
        prompts: Vec::new(),
        reminded: false,
        output: None,
        settled: false,
    }
}

fn create(store: &Store, approval: Approval) -> Result<(), StoreError> {
    let commit = TurnCommit {
        approvals: vec![ApprovalWrite::Create(Box::new(approval))],
        ..TurnCommit::default()
    };
    store.commit_turn(&conversation("c"), commit).map(|_| ())
}

fn approve(at_ms: u64) -> Decision {
    Decision {
        outcome: Status::Approved,
        by: Some(Person::known_as(
            GatewayId::new("socket").unwrap(),
            UserId::new("1").unwrap(),
        )),
        how: How::Cli,
        at_ms,
        message: None,
    }
}

#[test]
fn created_with_the_turn_numbered_and_audited() {
    let (_dir, store) = open_temp();
    create(&store, approval("AAAAAA")).unwrap();
    create(&store, approval("BBBBBB")).unwrap();
    let all = store.approvals().unwrap();
    assert_eq!(all.len(), 2);
    assert!(all[0].id < all[1].id, "numbered in creation order");
    let events = store.audit_events(10).unwrap();
    assert_eq!(events.len(), 2);
    assert!(matches!(&events[0].what, Audited::Requested { token, .. } if token.as_str() == "AAAAAA"));
}

#[test]
fn a_token_is_never_overwritten() {
    let (_dir, store) = open_temp();
    create(&store, approval("AAAAAA")).unwrap();
    store
        .decide(&ApprovalToken::new("AAAAAA").unwrap(), approve(5))
        .unwrap();
    assert!(create(&store, approval("AAAAAA")).is_err(), "the whole turn fails");
    assert_eq!(
        store
            .approval(&ApprovalToken::new("AAAAAA").unwrap())
            .unwrap()
            .unwrap()
            .status,
        Status::Approved
    );
}

#[test]
fn only_the_first_decision_counts() {
    let (_dir, store) = open_temp();
    create(&store, approval("AAAAAA")).unwrap();
    let token = ApprovalToken::new("AAAAAA").unwrap();
    assert!(matches!(store.decide(&token, approve(5)).unwrap(), Decided::Won(_)));
    let mut deny = approve(6);
    deny.outcome = Status::Denied;
    let Decided::Already(first) = store.decide(&token, deny).unwrap() else {
        panic!("the second decision lost")
    };
    assert_eq!(first.status, Status::Approved);
    assert_eq!(first.decision.unwrap().at_ms, 5);
}

#[test]
fn a_run_starts_once_and_settling_records_how_it_ended() {
    let (_dir, store) = open_temp();
    create(&store, approval("AAAAAA")).unwrap();
    let token = ApprovalToken::new("AAAAAA").unwrap();
    assert!(!store.start_run(&token, 1).unwrap(), "a pending action does not start");
    store.decide(&token, approve(5)).unwrap();
    assert!(store.start_run(&token, 6).unwrap());
    assert!(!store.start_run(&token, 7).unwrap(), "never twice");
    let settle = TurnCommit {
        approvals: vec![ApprovalWrite::Settle {
            token: token.clone(),
            run: Some(RunState::Finished {
                at_ms: 8,
                is_error: false,
            }),
        }],
        ..TurnCommit::default()
    };
    store.commit_turn(&conversation("c"), settle).unwrap();
    let settled = store.approval(&token).unwrap().unwrap();
    assert!(settled.settled);
    assert_eq!(
        settled.run,
        RunState::Finished {
            at_ms: 8,
            is_error: false
        }
    );
}

#[test]
fn a_prompt_finds_its_approval_only_in_its_conversation() {
    let (_dir, store) = open_temp();
    create(&store, approval("AAAAAA")).unwrap();
    let token = ApprovalToken::new("AAAAAA").unwrap();
    let prompt = MessageId::new("p1").unwrap();
    store
        .index_prompt(&conversation("c"), &token, std::slice::from_ref(&prompt))
        .unwrap();
    let found = store.approval_by_prompt(&conversation("c"), &prompt).unwrap().unwrap();
    assert_eq!(found.token, token);
    assert_eq!(
        found.prompts,
        std::slice::from_ref(&prompt),
        "and the approval knows its prompt"
    );
    let elsewhere = ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("d").unwrap());
    assert!(store.approval_by_prompt(&elsewhere, &prompt).unwrap().is_none());
}

#[test]
fn old_told_approvals_are_pruned_with_their_prompts_and_the_rest_kept() {
    let (_dir, store) = open_temp();
    for token in ["AAAAAA", "BBBBBB", "CCCCCC"] {
        create(&store, approval(token)).unwrap();
        let prompt = MessageId::new(format!("p-{token}")).unwrap();
        store
            .index_prompt(&conversation("c"), &ApprovalToken::new(token).unwrap(), &[prompt])
            .unwrap();
    }
    let settle = |token: &str| TurnCommit {
        approvals: vec![ApprovalWrite::Settle {
            token: ApprovalToken::new(token).unwrap(),
            run: None,
        }],
        ..TurnCommit::default()
    };
    // AAAAAA: decided long ago and told; BBBBBB: decided long ago, not yet told; CCCCCC: pending.
    for token in ["AAAAAA", "BBBBBB"] {
        store.decide(&ApprovalToken::new(token).unwrap(), approve(5)).unwrap();
    }
    store.commit_turn(&conversation("c"), settle("AAAAAA")).unwrap();
    assert_eq!(store.prune_approvals(10).unwrap(), 1);
    let left: Vec<_> = store.approvals().unwrap().into_iter().map(|a| a.token).collect();
    assert_eq!(left, ["BBBBBB", "CCCCCC"].map(|t| ApprovalToken::new(t).unwrap()));
    let gone = MessageId::new("p-AAAAAA").unwrap();
    assert!(store.approval_by_prompt(&conversation("c"), &gone).unwrap().is_none());
    let kept = MessageId::new("p-BBBBBB").unwrap();
    assert!(store.approval_by_prompt(&conversation("c"), &kept).unwrap().is_some());
    assert_eq!(
        store.audit_events(10).unwrap().len(),
        5,
        "the audit trail keeps everything"
    );
}

#[test]
fn audit_events_older_than_the_cutoff_are_pruned_and_newer_kept() {
    let (_dir, store) = open_temp();
    let ran = |at_ms, tool: &str| AuditEvent {
        at_ms,
        conversation: conversation("c"),
        what: Audited::ToolRan {
            tool: tool.into(),
            action: format!("{tool} {{}}"),
            requester: UserId::new("ann").unwrap(),
            is_error: false,
            approval: None,
            rule: None,
            confined: None,
        },
    };
    let turn = TurnCommit {
        audit: vec![ran(100, "old"), ran(300, "new"), ran(150, "older")],
        ..TurnCommit::default()
    };
    store.commit_turn(&conversation("c"), turn).unwrap();
    assert_eq!(store.prune_audit(200).unwrap(), 2);
    assert_eq!(store.audit_events(10).unwrap(), [ran(300, "new")]);
    assert_eq!(store.prune_audit(200).unwrap(), 0, "nothing twice");
}
