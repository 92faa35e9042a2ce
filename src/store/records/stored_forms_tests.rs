//! The records' stored bytes, pinned: a store written before must still open.

use passepartout_gateway::{ApprovalToken, ChatId, ConversationKey, GatewayId, MessageId, UserId};
use serde_json::json;

use super::*;

fn conversation() -> ConversationKey {
    ConversationKey {
        gateway: GatewayId::new("socket").unwrap(),
        chat: ChatId::new("c").unwrap(),
    }
}

fn person() -> Person {
    Person {
        gateway: GatewayId::new("signal").unwrap(),
        user: UserId::new("u1").unwrap(),
        aliases: vec![UserId::new("+100").unwrap()],
    }
}

fn decided_approval() -> Approval {
    Approval {
        id: 7,
        token: ApprovalToken::new("ABCDEF").unwrap(),
        conversation: conversation(),
        requester: UserId::new("u1").unwrap(),
        message_id: MessageId::new("m1").unwrap(),
        call: ProposedCall {
            tool: "shell".into(),
            arguments: json!({ "command": "ls" }),
        },
        skill: "approval_policy".into(),
        reason: "shell asks".into(),
        approvers: vec![Approver {
            gateway: GatewayId::new("signal").unwrap(),
            user: Some(UserId::new("u1").unwrap()),
            anywhere: true,
        }],
        created_ms: 1,
        expires_ms: 100,
        status: Status::Approved,
        decision: Some(Decision {
            outcome: Status::Approved,
            by: Some(person()),
            how: How::Reply,
            at_ms: 5,
            message: Some((conversation(), MessageId::new("m2").unwrap())),
        }),
        run: RunState::Finished {
            at_ms: 9,
            is_error: false,
        },
        prompts: vec![MessageId::new("p1").unwrap()],
        output: Some("done".into()),
        settled: true,
    }
}

fn assert_stored<T>(value: &T, stored: &str)
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq + std::fmt::Debug,
{
    assert_eq!(serde_json::to_string(value).unwrap(), stored);
    assert_eq!(&serde_json::from_str::<T>(stored).unwrap(), value);
}

#[test]
fn a_decided_approval_keeps_its_stored_form() {
    assert_stored(
        &decided_approval(),
        r#"{"id":7,"token":"ABCDEF","conversation":{"gateway":"socket","chat":"c"},"requester":"u1","message_id":"m1","call":{"tool":"shell","arguments":{"command":"ls"}},"skill":"approval_policy","reason":"shell asks","approvers":[{"gateway":"signal","user":"u1","anywhere":true}],"created_ms":1,"expires_ms":100,"status":"approved","decision":{"outcome":"approved","by":{"gateway":"signal","user":"u1","aliases":["+100"]},"how":"reply","at_ms":5,"message":[{"gateway":"socket","chat":"c"},"m2"]},"run":{"state":"finished","at_ms":9,"is_error":false},"prompts":["p1"],"output":"done","settled":true}"#,
    );
}

#[test]
fn a_pending_approval_leaves_out_what_it_does_not_have() {
    let pending = Approval {
        status: Status::Pending,
        decision: None,
        run: RunState::NotStarted,
        prompts: Vec::new(),
        output: None,
        settled: false,
        approvers: vec![Approver {
            gateway: GatewayId::new("socket").unwrap(),
            user: None,
            anywhere: false,
        }],
        ..decided_approval()
    };
    assert_stored(
        &pending,
        r#"{"id":7,"token":"ABCDEF","conversation":{"gateway":"socket","chat":"c"},"requester":"u1","message_id":"m1","call":{"tool":"shell","arguments":{"command":"ls"}},"skill":"approval_policy","reason":"shell asks","approvers":[{"gateway":"socket","anywhere":false}],"created_ms":1,"expires_ms":100,"status":"pending","run":{"state":"not_started"},"settled":false}"#,
    );
}

#[test]
fn audit_events_keep_their_stored_form() {
    let token = ApprovalToken::new("ABCDEF").unwrap();
    let event = |what| AuditEvent {
        at_ms: 3,
        conversation: conversation(),
        what,
    };
    assert_stored(
        &event(Audited::Requested {
            token: token.clone(),
            action: "shell: ls".into(),
            requester: UserId::new("u1").unwrap(),
            reason: "shell asks".into(),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"requested","token":"ABCDEF","action":"shell: ls","requester":"u1","reason":"shell asks"}"#,
    );
    assert_stored(
        &event(Audited::Decided {
            token: token.clone(),
            action: "shell: ls".into(),
            outcome: Status::Expired,
            by: None,
            how: How::Timer,
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"decided","token":"ABCDEF","action":"shell: ls","outcome":"expired","how":"timer"}"#,
    );
    assert_stored(
        &event(Audited::Decided {
            token: token.clone(),
            action: "shell: ls".into(),
            outcome: Status::Denied,
            by: Some(person()),
            how: How::Button,
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"decided","token":"ABCDEF","action":"shell: ls","outcome":"denied","by":{"gateway":"signal","user":"u1","aliases":["+100"]},"how":"button"}"#,
    );
    assert_stored(
        &event(Audited::ToolRan {
            tool: "shell".into(),
            action: "shell: ls".into(),
            requester: UserId::new("u1").unwrap(),
            is_error: true,
            approval: Some(token),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"tool_ran","tool":"shell","action":"shell: ls","requester":"u1","is_error":true,"approval":"ABCDEF"}"#,
    );
}

#[test]
fn an_interrupted_run_keeps_its_stored_form() {
    assert_stored(&RunState::Interrupted, r#"{"state":"interrupted"}"#);
    assert_stored(&RunState::Started { at_ms: 4 }, r#"{"state":"started","at_ms":4}"#);
}
