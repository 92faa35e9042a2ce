//! Standing rules through the desk, against a real store: who makes them,
//! where they apply, how long, and how they go; and queues decided at once.

use std::collections::HashMap;
use std::time::Duration;

use passepartout_gateway::{ChatId, GatewayId, Inbound, InboundBody, MessageId, Sender, UserId};

use crate::config::ApprovalsConfig;
use crate::foundation::clock::Clock;
use crate::model::signal::Origin;
use crate::safety::approvals::answer::parse;
use crate::safety::approvals::{Approval, Approvals, Approver, Handled, Policy, Requested, Status};
use crate::safety::skills::ProposedCall;
use crate::store::tests_support::{open_temp, reopen};
use crate::store::{ApprovalWrite, Audited, Store, TurnCommit};

use passepartout_gateway::ConversationKey;

const T0: u64 = 1_700_000_000_000;
const DAY: Duration = Duration::from_secs(24 * 3600);

fn conversation(gateway: &str, chat: &str) -> ConversationKey {
    ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap())
}

fn approver(gateway: &str, user: Option<&str>, anywhere: bool) -> Approver {
    Approver {
        gateway: GatewayId::new(gateway).unwrap(),
        user: user.map(|u| UserId::new(u).unwrap()),
        anywhere,
    }
}

/// Telegram's approver is user 42 (in the prompt's chat), user 7 approves
/// anywhere, and the socket's every user approves (the local one); rules
/// last two days, on a clock at `T0` that follows tokio's.
fn desk(store: &Store) -> Approvals {
    let per_gateway = HashMap::from([
        (
            GatewayId::new("telegram").unwrap(),
            vec![approver("telegram", Some("42"), false)],
        ),
        (GatewayId::new("socket").unwrap(), vec![approver("socket", None, false)]),
    ]);
    let policy = Policy::new(
        per_gateway,
        vec![approver("telegram", Some("7"), true)],
        Some(GatewayId::new("socket").unwrap()),
    );
    let settings = ApprovalsConfig {
        rule_days: 2,
        ..ApprovalsConfig::default()
    };
    Approvals::new(store.clone(), policy, Clock::at(T0), &settings)
}

fn shell(command: &str) -> ProposedCall {
    ProposedCall {
        tool: "shell".into(),
        arguments: serde_json::json!({ "command": command }),
    }
}

/// Commits a pending approval of `call` asked in `chat`, its prompt
/// delivered as message `p-TOKEN`.
fn pending(desk: &Approvals, chat: &ConversationKey, call: ProposedCall) -> Approval {
    let origin = Origin {
        conversation: chat.clone(),
        sender: UserId::new("5").unwrap(),
        message_id: MessageId::new("ask").unwrap(),
        sender_names: Default::default(),
    };
    let approval = desk.request(&origin, Requested::new(call, "approval_policy".into(), "asks".into()));
    let commit = TurnCommit {
        approvals: vec![ApprovalWrite::Create(Box::new(approval.clone()))],
        ..TurnCommit::default()
    };
    desk.store().commit_turn(chat, commit).unwrap();
    let prompt = MessageId::new(format!("p-{}", approval.token.as_str())).unwrap();
    desk.store().index_prompt(chat, &approval.token, &[prompt]).unwrap();
    let committed = desk.store().approval(&approval.token).unwrap().unwrap();
    desk.created([&committed]);
    committed
}

fn text_from(chat: &ConversationKey, user: &str, id: &str, text: &str, reply_to: Option<&str>) -> Inbound {
    Inbound {
        conversation: chat.clone(),
        sender: Sender::new(UserId::new(user).unwrap()),
        message_id: MessageId::new(id).unwrap(),
        reply_to: reply_to.map(|r| MessageId::new(r).unwrap()),
        body: InboundBody::Text { text: text.into() },
        received_at_ms: 0,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}

/// What the desk answers `inbound` with.
fn said(desk: &Approvals, inbound: &Inbound) -> String {
    match desk.answer(inbound, parse(inbound).expect("for the desk")).unwrap() {
        Handled::Answered { replies, .. } => replies
            .iter()
            .map(|(_, text)| shown(text))
            .collect::<Vec<_>>()
            .join("\n"),
        Handled::NotAnAnswer => panic!("not an answer"),
    }
}

/// Markdown `text` as a person reads it.
fn shown(text: &str) -> String {
    passepartout_gateway::markup::render(text, passepartout_gateway::markup::Flavor::SPELLED).text
}

fn status(desk: &Approvals, approval: &Approval) -> Status {
    desk.store().approval(&approval.token).unwrap().unwrap().status
}

fn audited(store: &Store) -> Vec<Audited> {
    store.audit_events(100).unwrap().into_iter().map(|e| e.what).collect()
}

#[tokio::test(start_paused = true)]
async fn always_approves_and_makes_a_rule_for_this_conversation_only() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat, shell("git status"));
    assert!(
        shown(&desk.prompt_text(&approval))
            .contains("to also let git status and the same command with more options run here without asking"),
        "the prompt shows the rule before anyone answers: {}",
        desk.prompt_text(&approval)
    );

    let told = said(
        &desk,
        &text_from(&chat, "42", "a1", &format!("always {}", approval.token.as_str()), None),
    );
    assert!(
        told.starts_with(&format!("Approved {}: running", approval.token.as_str())),
        "{told}"
    );
    let rule = store.standing_rule_of(&approval.token).unwrap().expect("a rule");
    assert!(
        told.ends_with(&format!(
            "Standing rule {} lets git status and the same command with more options run without asking \
             in telegram:100 until 2023-11-16 22:13 UTC (/rules lists them).",
            rule.id
        )),
        "{told}"
    );
    assert_eq!(status(&desk, &approval), Status::Approved);
    assert_eq!(rule.by.to_string(), "telegram:42");

    let standing = desk.standing();
    let covered = standing
        .covering(&chat, &shell("git status --short"))
        .expect("covered here");
    assert_eq!(covered.id, rule.id);
    assert!(standing.covering(&chat, &shell("git status; rm -rf /")).is_none());
    assert!(standing.covering(&chat, &shell("git status && curl x")).is_none());
    assert!(standing.covering(&chat, &shell("git push")).is_none());
    for elsewhere in [conversation("telegram", "200"), conversation("signal", "100")] {
        assert!(
            standing.covering(&elsewhere, &shell("git status")).is_none(),
            "not in {elsewhere}"
        );
    }
    let events = audited(&store);
    assert!(
        matches!(&events[..], [Audited::Requested { .. }, Audited::Decided { .. }, Audited::RuleMade { rule: made, token, .. }]
            if *made == rule.id && *token == approval.token),
        "{events:#?}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_non_approver_makes_no_rule_and_is_told_what_an_approval_would_tell_them() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat, shell("ls"));
    let token = approval.token.as_str();
    let prompt = format!("p-{token}");
    for (n, (always, approve)) in [
        (format!("always {token}"), format!("approve {token}")),
        (format!("/always {token}"), format!("/approve {token}")),
    ]
    .into_iter()
    .enumerate()
    {
        let by_always = said(&desk, &text_from(&chat, "43", &format!("x{n}"), &always, None));
        let by_approve = said(&desk, &text_from(&chat, "43", &format!("y{n}"), &approve, None));
        assert_eq!(by_always, by_approve, "{always}");
    }
    let by_always = said(&desk, &text_from(&chat, "43", "r1", "always", Some(&prompt)));
    let by_yes = said(&desk, &text_from(&chat, "43", "r2", "yes", Some(&prompt)));
    assert_eq!(by_always, by_yes);
    assert!(by_always.contains("not allowed to approve"), "{by_always}");
    assert_eq!(status(&desk, &approval), Status::Pending);
    assert!(store.standing_rules().unwrap().is_empty());
    assert!(desk.standing().covering(&chat, &shell("ls")).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_rule_covers_nothing_once_it_expires() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat, shell("uptime"));
    say_always(&desk, &chat, &approval, "a1");
    assert!(desk.standing().covering(&chat, &shell("uptime")).is_some());
    tokio::time::advance(2 * DAY - Duration::from_secs(1)).await;
    assert!(
        desk.standing().covering(&chat, &shell("uptime")).is_some(),
        "still within two days"
    );
    assert!(said(&desk, &text_from(&chat, "5", "l1", "/rules", None)).contains(": uptime and the same"));
    tokio::time::advance(Duration::from_secs(1)).await;
    assert!(
        desk.standing().covering(&chat, &shell("uptime")).is_none(),
        "two days on"
    );
    assert!(
        said(&desk, &text_from(&chat, "5", "l2", "/rules", None)).starts_with("No standing rules here."),
        "an expired rule is not listed"
    );
    assert_eq!(desk.rules_listing().unwrap()["rules"], serde_json::json!([]));
    let now = T0 + 2 * DAY.as_millis() as u64;
    assert_eq!(store.prune_standing_rules(now).unwrap(), 1);
}

fn say_always(desk: &Approvals, chat: &ConversationKey, approval: &Approval, id: &str) -> String {
    let told = said(
        desk,
        &text_from(chat, "42", id, &format!("always {}", approval.token.as_str()), None),
    );
    assert!(told.contains("Standing rule "), "{told}");
    told
}

#[tokio::test(start_paused = true)]
async fn a_rule_of_an_approver_taken_off_the_lists_lets_nothing_run() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat, shell("uptime"));
    say_always(&desk, &chat, &approval, "a1");
    assert!(desk.rule_covering(&chat, &shell("uptime")).is_some());
    // A reload that names only user 7.
    desk.set_policy(Policy::new(
        HashMap::new(),
        vec![approver("telegram", Some("7"), true)],
        None,
    ));
    assert!(
        desk.rule_covering(&chat, &shell("uptime")).is_none(),
        "42 no longer approves"
    );
    assert!(
        desk.standing().covering(&chat, &shell("uptime")).is_some(),
        "the rule itself is kept"
    );
    // Listed again, their rule holds again.
    desk.set_policy(Policy::new(
        HashMap::from([(
            GatewayId::new("telegram").unwrap(),
            vec![approver("telegram", Some("42"), false)],
        )]),
        Vec::new(),
        None,
    ));
    assert!(desk.rule_covering(&chat, &shell("uptime")).is_some());
}

#[tokio::test(start_paused = true)]
async fn only_an_approver_here_revokes_and_a_revoked_rule_covers_nothing() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let other = conversation("telegram", "200");
    let approval = pending(&desk, &chat, shell("df -h"));
    say_always(&desk, &chat, &approval, "a1");
    let id = store.standing_rules().unwrap()[0].id;
    let revoke = format!("/rules revoke {id}");

    let listed = said(&desk, &text_from(&chat, "43", "l1", "/rules", None));
    assert!(
        listed.contains(&format!(
            "\n• {id}: df -h and the same command with more options; until "
        )),
        "{listed}"
    );
    assert_eq!(
        said(&desk, &text_from(&chat, "43", "v1", &revoke, None)),
        "You are not allowed to revoke standing rules here."
    );
    assert_eq!(
        said(&desk, &text_from(&other, "42", "v2", &revoke, None)),
        format!("There is no standing rule {id} here."),
        "an approver of another chat does not reach this one's rules"
    );
    assert!(desk.standing().covering(&chat, &shell("df -h")).is_some());

    let revoked = said(&desk, &text_from(&chat, "42", "v3", &revoke, None));
    assert_eq!(
        revoked,
        format!(
            "Revoked standing rule {id}: df -h and the same command with more options asks for approval again in telegram:100."
        )
    );
    assert!(desk.standing().covering(&chat, &shell("df -h")).is_none());
    assert_eq!(
        said(&desk, &text_from(&chat, "42", "v4", &revoke, None)),
        format!("There is no standing rule {id} here.")
    );
    assert!(
        audited(&store).iter().any(
            |e| matches!(e, Audited::RuleRevoked { rule, by, .. } if *rule == id && by.to_string() == "telegram:42")
        )
    );

    // A global approver revokes from anywhere.
    let second = pending(&desk, &chat, shell("uname -a"));
    say_always(&desk, &chat, &second, "a2");
    let id = store.standing_rule_of(&second.token).unwrap().unwrap().id;
    let revoked = said(
        &desk,
        &text_from(&other, "7", "v5", &format!("/rules revoke {id}"), None),
    );
    assert!(revoked.starts_with(&format!("Revoked standing rule {id}")), "{revoked}");
}

#[tokio::test(start_paused = true)]
async fn a_late_or_second_always_makes_no_rule() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let first = pending(&desk, &chat, shell("pwd"));
    say_always(&desk, &chat, &first, "a1");
    let again = said(
        &desk,
        &text_from(&chat, "42", "a2", &format!("always {}", first.token.as_str()), None),
    );
    assert_eq!(
        again,
        format!("Approval {} was already approved by telegram:42.", first.token.as_str())
    );
    assert_eq!(store.standing_rules().unwrap().len(), 1, "one rule, not two");

    let late = pending(&desk, &chat, shell("whoami"));
    tokio::time::advance(Duration::from_secs(901)).await;
    let told = said(
        &desk,
        &text_from(&chat, "42", "a3", &format!("always {}", late.token.as_str()), None),
    );
    assert!(told.contains("already timed out"), "{told}");
    assert_eq!(store.standing_rules().unwrap().len(), 1, "a late always makes nothing");
    assert!(desk.standing().covering(&chat, &shell("whoami")).is_none());
}

#[tokio::test(start_paused = true)]
async fn rules_survive_reopening_the_store() {
    let (dir, store) = open_temp();
    let path = store.path().to_path_buf();
    let chat = conversation("telegram", "100");
    {
        let desk = desk(&store);
        let approval = pending(&desk, &chat, shell("ps -ef"));
        say_always(&desk, &chat, &approval, "a1");
        store.durable().await.unwrap();
    }
    drop(store);
    let store = reopen(&path);
    let desk = desk(&store);
    assert!(desk.standing().covering(&chat, &shell("ps -ef")).is_some());
    drop(dir);
}

#[tokio::test(start_paused = true)]
async fn the_local_user_makes_lists_and_revokes_rules() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat, shell("echo hi; ls"));
    let me = UserId::new("1000").unwrap();
    let (decision, owed) = desk
        .decide_local(
            approval.token.as_str(),
            true,
            true,
            me.clone(),
            passepartout_admin::Via::Terminal,
        )
        .unwrap();
    assert!(decision.decided, "{decision:?}");
    assert!(
        decision
            .message
            .contains("lets `echo hi; ls` exactly as written run without asking in `telegram:100`"),
        "{decision:?}"
    );
    assert_eq!(owed.unwrap().conversation, chat);
    let listing = desk.rules_listing().unwrap();
    let rule = &listing["rules"][0];
    assert_eq!(rule["conversation"], "telegram:100");
    assert_eq!(rule["covers"], "echo hi; ls exactly as written");
    assert_eq!(rule["by"], "socket:1000");
    let id = rule["id"].as_u64().unwrap();
    assert!(desk.standing().covering(&chat, &shell("echo hi; ls")).is_some());
    assert!(desk.standing().covering(&chat, &shell("echo hi; ls; rm x")).is_none());

    let (revoked, message) = desk.revoke_local(id, me.clone()).unwrap();
    assert!(revoked, "{message}");
    let (revoked, message) = desk.revoke_local(id, me.clone()).unwrap();
    assert!(!revoked);
    assert_eq!(message, format!("there is no standing rule {id}"));

    // Deny --always makes nothing.
    let denied = pending(&desk, &chat, shell("ls"));
    let (decision, _) = desk
        .decide_local(
            denied.token.as_str(),
            false,
            true,
            me,
            passepartout_admin::Via::Terminal,
        )
        .unwrap();
    assert!(shown(&decision.message).starts_with("Denied"), "{decision:?}");
    assert!(store.standing_rules().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn whoever_may_approve_makes_a_rule_that_applies_where_it_was_offered() {
    use passepartout_admin::Via;
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let me = || UserId::new("1000").unwrap();
    for (n, chat) in [conversation("telegram", "100"), conversation("web", "owner")]
        .into_iter()
        .enumerate()
    {
        for via in [Via::Terminal, Via::Web] {
            let command = format!("pwd {n} {via:?}");
            let approval = pending(&desk, &chat, shell(&command));
            let (decision, _) = desk
                .decide_local(approval.token.as_str(), true, true, me(), via)
                .unwrap();
            assert!(decision.message.contains("Standing rule "), "{decision:?}");
            assert!(
                desk.rule_covering(&chat, &shell(&command)).is_some(),
                "the local user's rule ({via:?}) applies in {chat}"
            );
            assert!(desk.rule_covering(&chat, &shell("ls -l")).is_none());
        }
    }
    // A global approver answering from their own chat elsewhere.
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat, shell("uptime"));
    let told = said(
        &desk,
        &text_from(
            &conversation("telegram", "7"),
            "7",
            "g1",
            &format!("always {}", approval.token.as_str()),
            None,
        ),
    );
    assert!(told.contains("Standing rule "), "{told}");
    assert!(desk.rule_covering(&chat, &shell("uptime")).is_some());
    // Without a local gateway, the terminal's rules no longer apply.
    desk.set_policy(Policy::new(HashMap::new(), Vec::new(), None));
    assert!(desk.rule_covering(&chat, &shell("pwd 0 Terminal")).is_none());
}

#[tokio::test(start_paused = true)]
async fn a_queue_is_decided_one_approval_at_a_time() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let mine = conversation("telegram", "100");
    let theirs = conversation("telegram", "200");
    let a = pending(&desk, &mine, shell("ls a"));
    let b = pending(&desk, &mine, shell("ls b"));
    let c = pending(&desk, &theirs, shell("ls c"));
    // One of mine was decided already, by its approver.
    said(
        &desk,
        &text_from(&mine, "42", "d1", &format!("deny {}", b.token.as_str()), None),
    );
    let me = UserId::new("1000").unwrap();

    let (refused, owed) = desk.decide_all(true, None, me.clone()).unwrap();
    assert!(
        !refused.ok && refused.message.contains("approving needs a conversation"),
        "{refused:?}"
    );
    assert!(owed.is_empty());
    let (refused, _) = desk.decide_all(true, Some("nowhere"), me.clone()).unwrap();
    assert!(
        !refused.ok && refused.message.contains("is not a conversation"),
        "{refused:?}"
    );
    assert_eq!(status(&desk, &a), Status::Pending);

    let (approved, owed) = desk.decide_all(true, Some("telegram:100"), me.clone()).unwrap();
    assert!(approved.ok, "{approved:?}");
    assert_eq!(approved.message, "approved 1 of 1 waiting in telegram:100");
    assert_eq!(approved.decisions.len(), 1);
    assert!(
        approved.decisions[0]
            .message
            .starts_with(&format!("**Approved** `{}`", a.token.as_str()))
    );
    assert_eq!(owed.iter().map(|o| &o.token).collect::<Vec<_>>(), [&a.token]);
    assert_eq!(
        (status(&desk, &a), status(&desk, &b), status(&desk, &c)),
        (Status::Approved, Status::Denied, Status::Pending)
    );

    let (denied, owed) = desk.decide_all(false, None, me.clone()).unwrap();
    assert_eq!(denied.message, "denied 1 of 1 waiting anywhere");
    assert_eq!(owed.len(), 1);
    assert_eq!(status(&desk, &c), Status::Denied);
    let (nothing, _) = desk.decide_all(false, None, me).unwrap();
    assert_eq!(nothing.message, "Nothing waits for approval anywhere.");

    // Each decision is its own audit event, by the local user from the CLI.
    let decided: Vec<String> = store
        .audit_events(100)
        .unwrap()
        .iter()
        .filter(|e| matches!(e.what, Audited::Decided { .. }))
        .map(|e| e.describe())
        .collect();
    assert_eq!(decided.len(), 3, "{decided:#?}");
    for (approval, outcome) in [(&a, "approved"), (&c, "denied")] {
        let wanted = format!(
            "{outcome} {} `shell: {}` by socket:1000 (cli)",
            approval.token.as_str(),
            approval.call.string_argument("command").unwrap()
        );
        assert!(
            decided.iter().any(|d| d.starts_with(&wanted)),
            "{wanted} in {decided:#?}"
        );
    }
}
