//! The records' stored bytes, pinned: a store written before must still open.
//! The outbox entry (kept by `store::outbox`) is pinned here too.

use passepartout_gateway::{ApprovalToken, ChatId, ConversationKey, GatewayId, MessageId, UserId};
use serde_json::json;

use super::*;

fn conversation() -> ConversationKey {
    ConversationKey {
        gateway: GatewayId::new("socket").unwrap(),
        chat: ChatId::new("c").unwrap(),
    }
}

/// `what`, as the audit trail keeps it at 3 ms in [`conversation`].
fn event(what: Audited) -> AuditEvent {
    AuditEvent {
        at_ms: 3,
        conversation: conversation(),
        what,
    }
}

fn person() -> Person {
    Person {
        gateway: GatewayId::new("signal").unwrap(),
        user: UserId::new("u1").unwrap(),
        aliases: vec![UserId::new("+100").unwrap()],
        names: Names::default(),
    }
}

fn decided_approval() -> Approval {
    Approval {
        id: 7,
        token: ApprovalToken::new("ABCDEF").unwrap(),
        conversation: conversation(),
        requester: UserId::new("u1").unwrap(),
        requester_names: Default::default(),
        message_id: MessageId::new("m1").unwrap(),
        call: ProposedCall {
            tool: "shell".into(),
            arguments: json!({ "command": "ls" }),
        },
        skill: "approval_policy".into(),
        reason: "shell asks".into(),
        votes: Some("1 of 1 models agree (1 needed)".into()),
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
        reminded: false,
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
        r#"{"id":7,"token":"ABCDEF","conversation":{"gateway":"socket","chat":"c"},"requester":"u1","message_id":"m1","call":{"tool":"shell","arguments":{"command":"ls"}},"skill":"approval_policy","reason":"shell asks","votes":"1 of 1 models agree (1 needed)","approvers":[{"gateway":"signal","user":"u1","anywhere":true}],"created_ms":1,"expires_ms":100,"status":"approved","decision":{"outcome":"approved","by":{"gateway":"signal","user":"u1","aliases":["+100"]},"how":"reply","at_ms":5,"message":[{"gateway":"socket","chat":"c"},"m2"]},"run":{"state":"finished","at_ms":9,"is_error":false},"prompts":["p1"],"output":"done","settled":true}"#,
    );
}

#[test]
fn a_pending_approval_leaves_out_what_it_does_not_have() {
    let pending = Approval {
        status: Status::Pending,
        votes: None,
        decision: None,
        run: RunState::NotStarted,
        prompts: Vec::new(),
        reminded: false,
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
    assert_stored(
        &event(Audited::Requested {
            token: token.clone(),
            action: "shell: ls".into(),
            requester: UserId::new("u1").unwrap(),
            requester_names: Names::default(),
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
        &event(Audited::Voted {
            tool: "shell".into(),
            action: "shell: ls".into(),
            requester: UserId::new("u1").unwrap(),
            outcome: VoteOutcome::Rejected,
            agree: 1,
            disagree: 1,
            abstain: 1,
            summary: "1 of 3 models agree".into(),
            refused: true,
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"voted","tool":"shell","action":"shell: ls","requester":"u1","outcome":"rejected","agree":1,"disagree":1,"abstain":1,"summary":"1 of 3 models agree","refused":true}"#,
    );
    assert_stored(
        &event(Audited::ToolRan {
            tool: "shell".into(),
            action: "shell: ls".into(),
            requester: UserId::new("u1").unwrap(),
            is_error: true,
            approval: Some(token.clone()),
            rule: None,
            confined: None,
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"tool_ran","tool":"shell","action":"shell: ls","requester":"u1","is_error":true,"approval":"ABCDEF"}"#,
    );
    assert_stored(
        &event(Audited::ToolRan {
            tool: "shell".into(),
            action: "shell: ls".into(),
            requester: UserId::new("u1").unwrap(),
            is_error: false,
            approval: None,
            rule: Some(12),
            confined: Some("landlock abi 7".into()),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"tool_ran","tool":"shell","action":"shell: ls","requester":"u1","is_error":false,"rule":12,"confined":"landlock abi 7"}"#,
    );
    assert_stored(
        &event(Audited::RuleMade {
            rule: 12,
            tool: "shell".into(),
            scope: "`ls` with other options".into(),
            by: person(),
            how: None,
            token: token.clone(),
            expires_ms: 9,
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"rule_made","rule":12,"tool":"shell","scope":"`ls` with other options","by":{"gateway":"signal","user":"u1","aliases":["+100"]},"token":"ABCDEF","expires_ms":9}"#,
    );
    assert_stored(
        &event(Audited::RuleRevoked {
            rule: 12,
            tool: "shell".into(),
            scope: "`ls` with other options".into(),
            by: person(),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"rule_revoked","rule":12,"tool":"shell","scope":"`ls` with other options","by":{"gateway":"signal","user":"u1","aliases":["+100"]}}"#,
    );
}

#[test]
fn a_standing_rule_keeps_its_stored_form() {
    let rule = |scope| StandingRule {
        id: 12,
        conversation: conversation(),
        tool: "shell".into(),
        scope,
        created_ms: 1,
        expires_ms: 9,
        by: person(),
        how: None,
        approval: ApprovalToken::new("ABCDEF").unwrap(),
    };
    assert_stored(
        &rule(Scope::CommandPrefix {
            words: vec!["git".into(), "status".into()],
        }),
        r#"{"id":12,"conversation":{"gateway":"socket","chat":"c"},"tool":"shell","scope":{"kind":"command_prefix","words":["git","status"]},"created_ms":1,"expires_ms":9,"by":{"gateway":"signal","user":"u1","aliases":["+100"]},"approval":"ABCDEF"}"#,
    );
    let answered = StandingRule {
        how: Some(How::Web),
        ..rule(Scope::Command { command: "ls".into() })
    };
    assert_stored(
        &answered,
        r#"{"id":12,"conversation":{"gateway":"socket","chat":"c"},"tool":"shell","scope":{"kind":"command","command":"ls"},"created_ms":1,"expires_ms":9,"by":{"gateway":"signal","user":"u1","aliases":["+100"]},"how":"web","approval":"ABCDEF"}"#,
    );
    let scopes = [
        (
            Scope::Command {
                command: "ls; pwd".into(),
            },
            r#"{"kind":"command","command":"ls; pwd"}"#,
        ),
        (
            Scope::Path {
                argument: "path".into(),
                path: "notes/a.md".into(),
            },
            r#"{"kind":"path","argument":"path","path":"notes/a.md"}"#,
        ),
        (
            Scope::Directory {
                argument: "path".into(),
                directory: "notes".into(),
            },
            r#"{"kind":"directory","argument":"path","directory":"notes"}"#,
        ),
        (
            Scope::Host {
                argument: "url".into(),
                host: "example.org".into(),
            },
            r#"{"kind":"host","argument":"url","host":"example.org"}"#,
        ),
        (
            Scope::Arguments {
                arguments: json!({"what": "milk"}),
            },
            r#"{"kind":"arguments","arguments":{"what":"milk"}}"#,
        ),
    ];
    for (scope, stored) in scopes {
        assert_stored(&scope, stored);
    }
}

#[test]
fn an_interrupted_run_keeps_its_stored_form() {
    assert_stored(&RunState::Interrupted, r#"{"state":"interrupted"}"#);
    assert_stored(&RunState::Started { at_ms: 4 }, r#"{"state":"started","at_ms":4}"#);
}

fn outbox_entry(body: passepartout_gateway::OutboundBody) -> crate::store::OutboxEntry {
    let outbound = passepartout_gateway::Outbound {
        drafts: Vec::new(),
        turn_end: None,
        id: "12-0".into(),
        conversation: conversation(),
        in_reply_to: Some(MessageId::new("m1").unwrap()),
        body,
    };
    crate::store::OutboxEntry::new(Vec::new(), outbound, Some(12))
}

fn text(text: &str) -> passepartout_gateway::OutboundBody {
    passepartout_gateway::OutboundBody::Text {
        text: text.into(),
        kind: passepartout_gateway::ReplyKind::Answer,
    }
}

#[test]
fn an_outbox_entry_stored_before_parts_were_counted_still_opens() {
    let entry = outbox_entry(text("hello"));
    assert_stored(
        &entry,
        r#"{"outbound":{"id":"12-0","conversation":{"gateway":"socket","chat":"c"},"in_reply_to":"m1","body":{"type":"text","text":"hello","kind":"answer"}},"journal_seq":12,"attempts":0}"#,
    );
}

#[test]
fn an_outbox_entry_keeps_the_parts_it_sent() {
    let mut entry = outbox_entry(text("long"));
    entry.attempts = 1;
    entry.parts_sent = 1;
    entry.part_ids = vec![MessageId::new("501").unwrap()];
    assert_stored(
        &entry,
        r#"{"outbound":{"id":"12-0","conversation":{"gateway":"socket","chat":"c"},"in_reply_to":"m1","body":{"type":"text","text":"long","kind":"answer"}},"journal_seq":12,"attempts":1,"parts_sent":1,"part_ids":["501"]}"#,
    );
}

#[test]
fn a_file_waiting_in_the_outbox_keeps_its_stored_form() {
    let file = passepartout_gateway::OutboundFile {
        path: "/data/outgoing/00ff/q3.pdf".into(),
        name: "q3.pdf".into(),
        media_type: "application/pdf".into(),
        size: 13,
        caption: Some("Q3".into()),
        temporary: true,
    };
    assert_stored(
        &outbox_entry(passepartout_gateway::OutboundBody::File(file)),
        r#"{"outbound":{"id":"12-0","conversation":{"gateway":"socket","chat":"c"},"in_reply_to":"m1","body":{"type":"file","path":"/data/outgoing/00ff/q3.pdf","name":"q3.pdf","media_type":"application/pdf","size":13,"caption":"Q3","temporary":true}},"journal_seq":12,"attempts":0}"#,
    );
}

#[test]
fn a_paired_person_and_the_pairing_events_keep_their_stored_form() {
    let paired = PairedPerson {
        gateway: GatewayId::new("telegram").unwrap(),
        user: UserId::new("77").unwrap(),
        approver: true,
        at_ms: 4,
        by: person(),
        names: Names::default(),
    };
    assert_stored(
        &paired,
        r#"{"gateway":"telegram","user":"77","approver":true,"at_ms":4,"by":{"gateway":"signal","user":"u1","aliases":["+100"]}}"#,
    );
    let waiting = PendingPairing {
        conversation: conversation(),
        user: UserId::new("77").unwrap(),
        issued_ms: 2,
        names: Names::default(),
    };
    assert_stored(
        &waiting,
        r#"{"conversation":{"gateway":"socket","chat":"c"},"user":"77","issued_ms":2}"#,
    );
    let user = || UserId::new("77").unwrap();
    assert_stored(
        &event(Audited::PairingOffered {
            person: user(),
            names: Names::default(),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"pairing_offered","person":"77"}"#,
    );
    assert_stored(
        &event(Audited::Paired {
            person: user(),
            approver: false,
            by: person(),
            names: Names::default(),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"paired","person":"77","approver":false,"by":{"gateway":"signal","user":"u1","aliases":["+100"]}}"#,
    );
    assert_stored(
        &event(Audited::PairingRefused { by: person() }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"pairing_refused","by":{"gateway":"signal","user":"u1","aliases":["+100"]}}"#,
    );
    assert_stored(
        &event(Audited::Unpaired {
            person: user(),
            by: person(),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"unpaired","person":"77","by":{"gateway":"signal","user":"u1","aliases":["+100"]}}"#,
    );
}

fn ada() -> Names {
    Names {
        name: Some("Ada Lovelace".into()),
        username: Some("ada".into()),
    }
}

#[test]
fn names_are_kept_beside_the_ids_and_records_without_them_still_open() {
    let named = Person {
        names: ada(),
        ..person()
    };
    assert_stored(
        &named,
        r#"{"gateway":"signal","user":"u1","aliases":["+100"],"name":"Ada Lovelace","username":"ada"}"#,
    );
    let waiting = PendingPairing {
        conversation: conversation(),
        user: UserId::new("77").unwrap(),
        issued_ms: 2,
        names: ada(),
    };
    assert_stored(
        &waiting,
        r#"{"conversation":{"gateway":"socket","chat":"c"},"user":"77","issued_ms":2,"name":"Ada Lovelace","username":"ada"}"#,
    );
    let paired = AuditEvent {
        at_ms: 3,
        conversation: conversation(),
        what: Audited::Paired {
            person: UserId::new("77").unwrap(),
            approver: false,
            by: named.clone(),
            names: ada(),
        },
    };
    assert_stored(
        &paired,
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"paired","person":"77","approver":false,"by":{"gateway":"signal","user":"u1","aliases":["+100"],"name":"Ada Lovelace","username":"ada"},"names":{"name":"Ada Lovelace","username":"ada"}}"#,
    );
    let old: Person = serde_json::from_str(r#"{"gateway":"signal","user":"u1"}"#).unwrap();
    assert!(old.names.is_empty(), "a person kept before names were");
}

#[test]
fn a_linked_person_and_the_linking_events_keep_their_stored_form() {
    let identity = |gateway: &str, user: &str, aliases: Vec<UserId>, names: Names| Identity {
        gateway: GatewayId::new(gateway).unwrap(),
        user: UserId::new(user).unwrap(),
        aliases,
        conversation: ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(user).unwrap()),
        at_ms: 9,
        names,
    };
    let linked = LinkedPerson {
        id: 3,
        identities: vec![
            identity("telegram", "42", Vec::new(), ada()),
            identity("signal", "u1", vec![UserId::new("+100").unwrap()], Names::default()),
        ],
        created_ms: 9,
        preferred: None,
    };
    assert_stored(
        &linked,
        r#"{"id":3,"identities":[{"gateway":"telegram","user":"42","conversation":{"gateway":"telegram","chat":"42"},"at_ms":9,"name":"Ada Lovelace","username":"ada"},{"gateway":"signal","user":"u1","aliases":["+100"],"conversation":{"gateway":"signal","chat":"u1"},"at_ms":9}],"created_ms":9}"#,
    );
    assert_stored(
        &event(Audited::Linked {
            person: 3,
            by: person(),
            with: "telegram:42".into(),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"linked","person":3,"by":{"gateway":"signal","user":"u1","aliases":["+100"]},"with":"telegram:42"}"#,
    );
    assert_stored(
        &event(Audited::LinkRefused { by: person() }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"link_refused","by":{"gateway":"signal","user":"u1","aliases":["+100"]}}"#,
    );
    assert_stored(
        &event(Audited::Unlinked {
            person: 3,
            identities: vec!["signal:u1".into()],
            by: person(),
        }),
        r#"{"at_ms":3,"conversation":{"gateway":"socket","chat":"c"},"event":"unlinked","person":3,"identities":["signal:u1"],"by":{"gateway":"signal","user":"u1","aliases":["+100"]}}"#,
    );
}
