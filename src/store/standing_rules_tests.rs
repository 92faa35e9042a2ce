//! The standing rules' tree against a real sled store.

use passepartout_gateway::{GatewayId, MessageId, UserId};

use super::*;
use crate::store::records::{Approval, How, ProposedCall, RunState, Scope, Status};
use crate::store::tests::{conversation, open_temp, reopen};
use crate::store::{ApprovalWrite, TurnCommit};

fn person() -> Person {
    Person::known_as(GatewayId::new("socket").unwrap(), UserId::new("1").unwrap())
}

fn rule(chat: &str, tool: &str, expires_ms: u64) -> StandingRule {
    StandingRule {
        id: 0,
        conversation: conversation(chat),
        tool: tool.into(),
        scope: Scope::Command { command: "ls".into() },
        created_ms: 1,
        expires_ms,
        by: person(),
        how: None,
        approval: ApprovalToken::new("AAAAAA").unwrap(),
    }
}

fn pending(store: &Store, token: &str) -> ApprovalToken {
    let approval = Approval {
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
        approvers: Vec::new(),
        created_ms: 1,
        expires_ms: 100,
        status: Status::Pending,
        decision: None,
        run: RunState::NotStarted,
        prompts: Vec::new(),
        reminded: false,
        votes: None,
        output: None,
        settled: false,
    };
    let token = approval.token.clone();
    let commit = TurnCommit {
        approvals: vec![ApprovalWrite::Create(Box::new(approval))],
        ..TurnCommit::default()
    };
    store.commit_turn(&conversation("c"), commit).unwrap();
    token
}

fn approve(message: &str) -> Decision {
    Decision {
        outcome: Status::Approved,
        by: Some(person()),
        how: How::Reply,
        at_ms: 5,
        message: Some((conversation("c"), MessageId::new(message).unwrap())),
    }
}

fn events(store: &Store) -> Vec<String> {
    store
        .audit_events(100)
        .unwrap()
        .into_iter()
        .map(|e| {
            serde_json::to_value(&e.what).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

#[test]
fn rules_are_found_by_conversation_and_tool_only() {
    let (_dir, store) = open_temp();
    let mine = store.add_standing_rule(&rule("c", "shell", 9), "`ls` exactly").unwrap();
    store.add_standing_rule(&rule("c", "shell2", 9), "x").unwrap();
    store.add_standing_rule(&rule("cc", "shell", 9), "x").unwrap();
    store.add_standing_rule(&rule("d", "shell", 9), "x").unwrap();
    assert_eq!(store.standing_rules_for(&conversation("c"), "shell").unwrap(), [mine]);
    assert!(store.standing_rules_for(&conversation("c"), "shel").unwrap().is_empty());
    assert_eq!(store.standing_rules().unwrap().len(), 4);
    let ids: std::collections::BTreeSet<u64> = store.standing_rules().unwrap().iter().map(|r| r.id).collect();
    assert_eq!(ids.len(), 4, "every rule has its own id");
    assert_eq!(events(&store), ["rule_made"; 4]);
}

#[test]
fn a_rule_is_made_only_by_the_decision_that_wins() {
    let (_dir, store) = open_temp();
    let token = pending(&store, "AAAAAA");
    let (decided, made) = store
        .decide_with_rule(&token, approve("a1"), &rule("c", "shell", 9), "`ls` exactly")
        .unwrap();
    assert!(matches!(decided, Decided::Won(ref a) if a.status == Status::Approved));
    let made = made.expect("a rule");
    assert_eq!(store.standing_rule_of(&token).unwrap(), Some(made.clone()));

    // The same message redone after a crash: it won, but nothing is made twice.
    let (redone, again) = store
        .decide_with_rule(&token, approve("a1"), &rule("c", "shell", 9), "`ls` exactly")
        .unwrap();
    assert!(matches!(redone, Decided::Won(_)));
    assert_eq!(again, None);
    // A second "always": what the first decided, and no rule.
    let (second, none) = store
        .decide_with_rule(&token, approve("a2"), &rule("c", "shell", 9), "`ls` exactly")
        .unwrap();
    assert!(matches!(second, Decided::Already(_)));
    assert_eq!(none, None);
    assert_eq!(store.standing_rules().unwrap(), [made]);
    assert_eq!(events(&store), ["requested", "decided", "rule_made"]);
}

#[test]
fn revoking_removes_the_rule_once_and_audits_it() {
    let (_dir, store) = open_temp();
    let made = store.add_standing_rule(&rule("c", "shell", 9), "`ls` exactly").unwrap();
    let revoked = store
        .revoke_standing_rule(made.id, &person(), 7, |_| "`ls` exactly".into())
        .unwrap();
    assert_eq!(revoked, Some(made.clone()));
    assert!(
        store
            .standing_rules_for(&conversation("c"), "shell")
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .revoke_standing_rule(made.id, &person(), 8, |_| String::new())
            .unwrap(),
        None,
        "nothing twice"
    );
    assert_eq!(events(&store), ["rule_made", "rule_revoked"]);
}

#[tokio::test]
async fn expired_rules_are_pruned_and_the_rest_survive_reopening() {
    let (_dir, store) = open_temp();
    let path = store.path().to_path_buf();
    store.add_standing_rule(&rule("c", "shell", 10), "old").unwrap();
    let kept = store.add_standing_rule(&rule("c", "shell", 20), "new").unwrap();
    assert_eq!(store.prune_standing_rules(10).unwrap(), 1);
    assert_eq!(store.prune_standing_rules(10).unwrap(), 0, "nothing twice");
    store.durable().await.unwrap();
    drop(store);
    let store = reopen(&path);
    assert_eq!(store.standing_rules_for(&conversation("c"), "shell").unwrap(), [kept]);
}

#[tokio::test]
async fn ids_count_up_from_one_across_a_reopening_and_are_never_given_twice() {
    let (_dir, store) = open_temp();
    let path = store.path().to_path_buf();
    let first = store.add_standing_rule(&rule("c", "shell", 10), "a").unwrap();
    let second = store.add_standing_rule(&rule("d", "read_file", 10), "b").unwrap();
    assert_eq!((first.id, second.id), (1, 2));
    assert!(
        store
            .revoke_standing_rule(2, &person(), 5, |_| "b".into())
            .unwrap()
            .is_some()
    );
    store.durable().await.unwrap();
    drop(store);
    let store = reopen(&path);
    let third = store.add_standing_rule(&rule("c", "shell", 10), "c").unwrap();
    assert_eq!(third.id, 3, "not 2 again, and no leap at the restart");
    let ids: Vec<u64> = store.standing_rules().unwrap().iter().map(|rule| rule.id).collect();
    assert_eq!(ids, [1, 3], "the counter is no rule");
    assert_eq!(
        store.prune_standing_rules(10).unwrap(),
        2,
        "the counter is never pruned"
    );
    assert_eq!(store.add_standing_rule(&rule("c", "shell", 20), "d").unwrap().id, 4);
}
