//! The desk against a real store: who may decide, where, and only once.

use std::collections::HashMap;
use std::sync::Arc;

use passepartout_gateway::{ChatId, GatewayId, MessageId, Sender, UserId};

use super::*;
use crate::config::ApprovalsConfig;
use crate::foundation::clock::Clock;
use crate::model::signal::Origin;
use crate::safety::approvals::{Approver, Policy, Requested};
use crate::safety::skills::ProposedCall;
use crate::store::tests_support::open_temp;
use crate::store::{ApprovalWrite, Store, TurnCommit};

const T0: u64 = 1_700_000_000_000;

fn conversation(gateway: &str, chat: &str) -> ConversationKey {
    ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap())
}

fn approver(gateway: &str, user: &str, anywhere: bool) -> Approver {
    Approver {
        gateway: GatewayId::new(gateway).unwrap(),
        user: Some(UserId::new(user).unwrap()),
        anywhere,
    }
}

/// A desk whose Telegram approvers are user 42 (in the prompt's chat) and
/// user 7 (anywhere), with a clock stopped at `T0`.
fn desk(store: &Store) -> Approvals {
    let per_gateway = HashMap::from([(
        GatewayId::new("telegram").unwrap(),
        vec![approver("telegram", "42", false)],
    )]);
    let policy = Policy::new(per_gateway, vec![approver("telegram", "7", true)], None);
    let settings = ApprovalsConfig {
        wrong_tokens_per_hour: 3,
        ..ApprovalsConfig::default()
    };
    Approvals::new(store.clone(), policy, Clock::at(T0), &settings)
}

/// Commits a pending approval for `shell: ls`, asked by user 5 in `chat`.
fn pending(desk: &Approvals, chat: &ConversationKey) -> Approval {
    pending_by(desk, chat, "5")
}

/// Commits a pending approval for `shell: ls`, asked by `user` in `chat`.
fn pending_by(desk: &Approvals, chat: &ConversationKey, user: &str) -> Approval {
    let origin = Origin {
        conversation: chat.clone(),
        sender: UserId::new(user).unwrap(),
        message_id: MessageId::new("ask").unwrap(),
        sender_names: Default::default(),
    };
    let call = ProposedCall {
        tool: "shell".into(),
        arguments: serde_json::json!({ "command": "ls" }),
    };
    let approval = desk.request(
        &origin,
        Requested::new(call, "approval_policy".into(), "shell asks".into()),
    );
    let commit = TurnCommit {
        approvals: vec![ApprovalWrite::Create(Box::new(approval.clone()))],
        ..TurnCommit::default()
    };
    desk.store().commit_turn(chat, commit).unwrap();
    // As the worker does once the turn is in the store.
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
        body: passepartout_gateway::InboundBody::Text { text: text.into() },
        received_at_ms: 0,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}

fn say(desk: &Approvals, inbound: &Inbound) -> Handled {
    let parsed = super::super::answer::parse(inbound).expect("an approval answer");
    desk.answer(inbound, parsed).unwrap()
}

/// The first reply, as a person reads it (rendered).
fn notice(handled: &Handled) -> String {
    match handled {
        Handled::Answered { replies, .. } => shown(&replies[0].1),
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

#[tokio::test(start_paused = true)]
async fn an_approver_decides_in_the_prompts_conversation() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    let answer = format!("approve {}", approval.token.as_str());
    let handled = say(&desk, &text_from(&chat, "42", "a1", &answer, None));
    assert!(notice(&handled).starts_with("Approved"), "{handled:?}");
    assert!(
        matches!(&handled, Handled::Answered { settle, .. } if settle[0].conversation == chat && settle[0].token == approval.token)
    );
    let decided = store.approval(&approval.token).unwrap().unwrap();
    assert_eq!(decided.status, Status::Approved);
    let decision = decided.decision.unwrap();
    assert_eq!(decision.by.unwrap().to_string(), "telegram:42");
    assert_eq!(decision.how, How::Token);
    assert_eq!(decision.at_ms, T0);
}

/// What a token answer naming no approval is told.
fn no_such(token: &str) -> String {
    format!("No approval has the token {token}. Check the prompt's token.")
}

#[test]
fn a_non_approver_is_refused_and_the_approval_stays_pending() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    // The requester is not an approver either.
    for user in ["43", "5"] {
        let answer = format!("/approve {}", approval.token.as_str());
        let handled = say(&desk, &text_from(&chat, user, "a1", &answer, None));
        assert_eq!(notice(&handled), no_such(approval.token.as_str()), "{handled:?}");
    }
    // Replying to the prompt, which they can see, they are told why.
    let prompt = MessageId::new("p1").unwrap();
    store.index_prompt(&chat, &approval.token, &[prompt]).unwrap();
    let handled = say(&desk, &text_from(&chat, "43", "a3", "yes", Some("p1")));
    assert!(notice(&handled).contains("not allowed to approve"), "{handled:?}");
    assert_eq!(status(&desk, &approval), Status::Pending);
    // Someone of another gateway with the same id is not the approver.
    let elsewhere = conversation("signal", "100");
    let answer = format!("approve {}", approval.token.as_str());
    say(&desk, &text_from(&elsewhere, "42", "a2", &answer, None));
    assert_eq!(status(&desk, &approval), Status::Pending);
}

#[test]
fn an_approver_named_by_an_alias_decides() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    let answer = format!("approve {}", approval.token.as_str());
    // User "uuid-42" is not listed, but the platform also knows them as "42".
    let mut inbound = text_from(&chat, "uuid-42", "a1", &answer, None);
    inbound.sender.aliases = vec![UserId::new("41").unwrap()];
    assert_eq!(notice(&say(&desk, &inbound)), no_such(approval.token.as_str()));
    inbound.sender.aliases.push(UserId::new("42").unwrap());
    inbound.message_id = MessageId::new("a2").unwrap();
    assert!(notice(&say(&desk, &inbound)).starts_with("Approved"));
    let decided = store.approval(&approval.token).unwrap().unwrap();
    let by = decided
        .decision
        .and_then(|decision| decision.by)
        .expect("decided by someone");
    assert_eq!(
        (by.user.as_str(), by.aliases.len()),
        ("uuid-42", 2),
        "recorded by id, with aliases"
    );
}

#[test]
fn an_answer_from_another_conversation_is_refused_unless_the_approver_is_global() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let other = conversation("telegram", "200");
    let approval = pending(&desk, &chat);
    let answer = format!("approve {}", approval.token.as_str());
    let handled = say(&desk, &text_from(&other, "42", "a1", &answer, None));
    // Not theirs to decide there: told what a token that does not exist is.
    assert_eq!(notice(&handled), no_such(approval.token.as_str()), "{handled:?}");
    assert_eq!(status(&desk, &approval), Status::Pending);
    let handled = say(&desk, &text_from(&other, "7", "a2", &answer, None));
    assert!(
        notice(&handled).contains(&format!("runs now, in {chat}")),
        "{handled:?}"
    );
    assert_eq!(status(&desk, &approval), Status::Approved);
}

#[test]
fn a_replayed_token_is_told_the_first_outcome() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    let mut named = text_from(&chat, "42", "a1", &format!("deny {}", approval.token.as_str()), None);
    named.sender.display_name = Some("Ada Lovelace".into());
    named.sender.username = Some("ada".into());
    say(&desk, &named);
    let replay = say(
        &desk,
        &text_from(&chat, "7", "a2", &format!("approve {}", approval.token.as_str()), None),
    );
    assert_eq!(
        notice(&replay),
        format!(
            "Approval {} was already denied by Ada Lovelace @ada (telegram:42).",
            approval.token.as_str()
        )
    );
    assert_eq!(status(&desk, &approval), Status::Denied);
}

#[test]
fn the_same_answer_redone_after_a_crash_still_wins() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    let answer = text_from(&chat, "42", "a1", &format!("approve {}", approval.token.as_str()), None);
    say(&desk, &answer);
    let redone = say(&desk, &answer);
    assert!(notice(&redone).starts_with("Approved"), "{redone:?}");
}

#[test]
fn two_approvers_racing_get_one_outcome() {
    for _ in 0..20 {
        let (_dir, store) = open_temp();
        let desk = Arc::new(desk(&store));
        let chat = conversation("telegram", "100");
        let approval = pending(&desk, &chat);
        let answers = [("42", "approve", "a1"), ("7", "deny", "a2")].map(|(user, verb, id)| {
            let desk = desk.clone();
            let inbound = text_from(&chat, user, id, &format!("{verb} {}", approval.token.as_str()), None);
            std::thread::spawn(move || notice(&say(&desk, &inbound)).to_owned())
        });
        let notices: Vec<String> = answers.into_iter().map(|t| t.join().unwrap()).collect();
        let won = notices.iter().filter(|n| !n.contains("already")).count();
        assert_eq!(won, 1, "{notices:?}");
        let final_status = status(&desk, &approval);
        let winner = notices.iter().find(|n| !n.contains("already")).unwrap();
        assert_eq!(
            winner.starts_with("Approved"),
            final_status == Status::Approved,
            "{notices:?}"
        );
        let audited = store
            .audit_events(10)
            .unwrap()
            .into_iter()
            .filter(|e| matches!(e.what, crate::people::audit::Audited::Decided { .. }))
            .count();
        assert_eq!(audited, 1, "one decision, audited once");
    }
}

#[test]
fn unknown_tokens_are_refused_and_rate_limited() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    for n in 0..3 {
        let handled = say(
            &desk,
            &text_from(&chat, "42", &format!("w{n}"), "approve ZZZZZZZZ", None),
        );
        assert!(
            notice(&handled).contains("No approval has the token ZZZZZZZZ"),
            "{handled:?}"
        );
    }
    // Now even the right token is refused unread.
    let answer = format!("approve {}", approval.token.as_str());
    let handled = say(&desk, &text_from(&chat, "42", "a1", &answer, None));
    assert!(notice(&handled).contains("Too many"), "{handled:?}");
    assert_eq!(status(&desk, &approval), Status::Pending);
    // Others are not affected, and a reply to the prompt still works.
    store
        .index_prompt(&chat, &approval.token, &[MessageId::new("p1").unwrap()])
        .unwrap();
    let handled = say(&desk, &text_from(&chat, "42", "a2", "yes", Some("p1")));
    assert!(notice(&handled).starts_with("Approved"), "{handled:?}");
}

#[test]
fn approve_followed_by_a_word_is_ordinary_text_when_nothing_waits() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let nothing = say(&desk, &text_from(&chat, "42", "a1", "approve payment", None));
    assert_eq!(nothing, Handled::NotAnAnswer, "it goes to the model, not counted");
    pending(&desk, &chat);
    let handled = say(&desk, &text_from(&chat, "42", "a2", "approve payment", None));
    assert!(
        notice(&handled).contains("No approval has the token PAYMENT"),
        "{handled:?}"
    );
}

#[test]
fn an_answer_is_judged_by_when_it_arrived() {
    let (_dir, store) = open_temp();
    let chat = conversation("telegram", "100");
    let approval = pending(&desk(&store), &chat);
    // Processed an hour later, but it arrived a minute after the prompt.
    let per_gateway = HashMap::from([(
        GatewayId::new("telegram").unwrap(),
        vec![approver("telegram", "42", false)],
    )]);
    let later = Approvals::new(
        store.clone(),
        Policy::new(per_gateway, Vec::new(), None),
        Clock::at(T0 + 3_600_000),
        &ApprovalsConfig::default(),
    );
    let mut answer = text_from(&chat, "42", "a1", &format!("approve {}", approval.token.as_str()), None);
    answer.received_at_ms = T0 + 60_000;
    let handled = say(&later, &answer);
    assert!(notice(&handled).starts_with("Approved"), "{handled:?}");
}

#[test]
fn a_reply_to_the_prompt_decides_and_a_reply_to_anything_else_is_ordinary_text() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    store
        .index_prompt(&chat, &approval.token, &[MessageId::new("p1").unwrap()])
        .unwrap();
    assert_eq!(
        say(&desk, &text_from(&chat, "42", "a1", "yes", Some("other"))),
        Handled::NotAnAnswer
    );
    let handled = say(&desk, &text_from(&chat, "42", "a2", "no", Some("p1")));
    assert!(notice(&handled).starts_with("Denied"), "{handled:?}");
    let decided = store.approval(&approval.token).unwrap().unwrap();
    assert_eq!(decided.decision.unwrap().how, How::Reply);
}

#[test]
fn only_the_requester_cancels() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    let token = approval.token.as_str();
    let handled = say(&desk, &text_from(&chat, "42", "c1", &format!("/cancel {token}"), None));
    assert!(
        notice(&handled).contains(&format!("You have no approval with the token {token} here")),
        "someone else's reads like a token that does not exist: {handled:?}"
    );
    let handled = say(&desk, &text_from(&chat, "42", "c2", "/cancel", None));
    assert!(notice(&handled).contains("Nothing you asked for"), "{handled:?}");
    assert_eq!(status(&desk, &approval), Status::Pending);
    let handled = say(&desk, &text_from(&chat, "5", "c3", "/cancel", None));
    assert!(
        notice(&handled).starts_with(&format!("Cancelled {token}")),
        "{handled:?}"
    );
    assert_eq!(status(&desk, &approval), Status::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn an_answer_after_the_deadline_finds_it_timed_out() {
    let (_dir, store) = open_temp();
    let per_gateway = HashMap::from([(
        GatewayId::new("telegram").unwrap(),
        vec![approver("telegram", "42", false)],
    )]);
    let desk = Approvals::new(
        store.clone(),
        Policy::new(per_gateway, Vec::new(), None),
        Clock::at(T0),
        &ApprovalsConfig::default(),
    );
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    tokio::time::advance(std::time::Duration::from_secs(901)).await;
    let handled = say(
        &desk,
        &text_from(&chat, "42", "a1", &format!("approve {}", approval.token.as_str()), None),
    );
    assert!(notice(&handled).contains("already timed out"), "{handled:?}");
    assert!(
        matches!(&handled, Handled::Answered { settle, .. } if settle.len() == 1 && settle[0].conversation == chat),
        "the conversation is owed the timeout"
    );
    assert_eq!(status(&desk, &approval), Status::Expired);
}

#[tokio::test(start_paused = true)]
async fn the_timer_expires_approvals_at_their_deadline_and_not_before() {
    let (_dir, store) = open_temp();
    let desk = Arc::new(desk(&store));
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    let (told, mut expired) = tokio::sync::mpsc::unbounded_channel();
    let stop = tokio_util::sync::CancellationToken::new();
    let timer = tokio::spawn(super::super::expiry::run(
        desk.clone(),
        move |key| told.send(key).unwrap(),
        stop.clone(),
    ));
    // 300 s before its timeout (the default), the conversation is owed a reminder.
    tokio::time::sleep(std::time::Duration::from_secs(599)).await;
    assert!(expired.try_recv().is_err());
    let key = tokio::time::timeout(std::time::Duration::from_secs(5), expired.recv())
        .await
        .expect("woken for the reminder")
        .unwrap();
    assert_eq!(key, chat);
    let reminders = desk.take_reminders(&chat).unwrap();
    assert_eq!(reminders.len(), 1);
    assert_eq!(reminders[0].token, approval.token);
    assert!(desk.take_reminders(&chat).unwrap().is_empty(), "taken once");
    assert!(
        desk.take_unsettled(&chat).unwrap().is_empty(),
        "a reminder is no outcome"
    );
    tokio::time::sleep(std::time::Duration::from_secs(898 - 600)).await;
    assert!(expired.try_recv().is_err());
    assert_eq!(status(&desk, &approval), Status::Pending);
    // One created later, expiring later, re-arms nothing earlier.
    let later = {
        tokio::time::advance(std::time::Duration::from_millis(1)).await;
        pending(&desk, &chat)
    };
    let key = tokio::time::timeout(std::time::Duration::from_secs(5), expired.recv())
        .await
        .expect("expired at its deadline")
        .unwrap();
    assert_eq!(key, chat);
    assert_eq!(status(&desk, &approval), Status::Expired);
    assert_eq!(status(&desk, &later), Status::Pending);
    let decided = store.approval(&approval.token).unwrap().unwrap();
    assert_eq!(decided.decision.unwrap().how, How::Timer);
    let owed = desk.take_unsettled(&chat).unwrap();
    assert_eq!(owed.len(), 1);
    assert_eq!(owed[0].token, approval.token);
    assert!(desk.take_unsettled(&chat).unwrap().is_empty(), "taken once");
    stop.cancel();
    timer.await.unwrap();
}

#[test]
fn an_approval_that_expired_while_the_daemon_was_down_times_out_at_once() {
    let (_dir, store) = open_temp();
    let chat = conversation("telegram", "100");
    let approval = pending(&desk(&store), &chat);
    // "Restart" an hour later: a new desk with a later clock.
    let per_gateway = HashMap::new();
    let later = Approvals::new(
        store.clone(),
        Policy::new(per_gateway, Vec::new(), None),
        Clock::at(T0 + 3_600_000),
        &ApprovalsConfig::default(),
    );
    assert!(later.recover().unwrap().is_empty(), "nothing decided yet");
    let (owed, next) = later.expire_due().unwrap();
    assert_eq!(owed, [chat]);
    assert_eq!(next, None);
    assert_eq!(status(&later, &approval), Status::Expired);
}

#[test]
fn a_reminder_sent_before_a_restart_is_not_armed_again_and_none_is_armed_too_late() {
    let (_dir, store) = open_temp();
    let chat = conversation("telegram", "100");
    let reminded = pending(&desk(&store), &chat);
    let commit = TurnCommit {
        approvals: vec![ApprovalWrite::Reminded {
            token: reminded.token.clone(),
        }],
        ..TurnCommit::default()
    };
    store.commit_turn(&chat, commit).unwrap();
    assert!(store.approval(&reminded.token).unwrap().unwrap().reminded);
    let other = conversation("telegram", "200");
    let not_yet = pending(&desk(&store), &other);
    // "Restart" 700 s later: past both reminders' time, before the timeouts.
    let later = Approvals::new(
        store.clone(),
        Policy::new(HashMap::new(), Vec::new(), None),
        Clock::at(T0 + 700_000),
        &ApprovalsConfig::default(),
    );
    later.recover().unwrap();
    let (owed, next) = later.expire_due().unwrap();
    assert_eq!(owed, std::slice::from_ref(&other), "only the one not reminded yet");
    assert_eq!(next, Some(T0 + 900_000));
    assert_eq!(later.take_reminders(&other).unwrap()[0].token, not_yet.token);
    assert!(later.take_reminders(&chat).unwrap().is_empty());

    // A reminder that would come before the request is not armed at all.
    let short = Approvals::new(
        store.clone(),
        Policy::new(HashMap::new(), Vec::new(), None),
        Clock::at(T0),
        &ApprovalsConfig {
            expire_after_s: 60,
            ..ApprovalsConfig::default()
        },
    );
    let third = conversation("telegram", "300");
    pending(&short, &third);
    let (owed, next) = short.expire_due().unwrap();
    assert!(owed.is_empty());
    assert_eq!(next, Some(T0 + 60_000), "the timeout is the only deadline");
}

#[tokio::test(start_paused = true)]
async fn approvals_command_lists_what_waits_in_this_conversation_only() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    assert_eq!(desk.waiting_in(&chat).unwrap(), "Nothing waits for approval here.");
    let approval = pending(&desk, &chat);
    pending(&desk, &conversation("telegram", "200"));
    let listing = shown(&desk.waiting_in(&chat).unwrap());
    assert!(
        listing.contains(&format!(
            "• {}: shell: ls (asked by telegram:5 0 s ago; 15 min left)",
            approval.token.as_str()
        )),
        "{listing}"
    );
    assert_eq!(
        listing.lines().filter(|line| line.starts_with('•')).count(),
        1,
        "one approval, not the other chat's: {listing}"
    );
}

#[test]
fn a_button_press_is_refused_up_front_for_someone_who_may_not_decide_or_a_forged_token() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    let press = |user: &str| Inbound {
        body: passepartout_gateway::InboundBody::Button {
            data: format!("approve:{}", approval.token.as_str()),
        },
        ..text_from(&chat, user, "callback:1", "", None)
    };
    assert!(!desk.may_press(&press("43")), "not an approver");
    assert!(desk.may_press(&press("42")), "an approver");
    assert!(desk.may_press(&press("7")), "a global approver");
    let unknown = Inbound {
        body: passepartout_gateway::InboundBody::Button {
            data: "approve:ZZZZZZZZ".into(),
        },
        ..text_from(&chat, "43", "callback:2", "", None)
    };
    assert!(!desk.may_press(&unknown), "no such approval: refused as one not theirs");
    let elsewhere = Inbound {
        conversation: conversation("telegram", "42"),
        ..press("42")
    };
    assert!(
        desk.may_press(&elsewhere),
        "an approver in another chat: the usual way says why"
    );
    assert!(
        desk.may_press(&text_from(&chat, "43", "m", "hello", None)),
        "not a press"
    );
}

#[test]
fn another_chats_real_token_and_a_missing_token_get_the_same_reply_and_both_count() {
    let (dir, store) = open_temp();
    let desk = desk(&store);
    let theirs = pending(&desk, &conversation("telegram", "100"));
    let mine = conversation("telegram", "200");
    // User 43 may approve nothing; their own chat has something waiting.
    pending(&desk, &mine);
    let real = say(
        &desk,
        &text_from(&mine, "43", "g1", &format!("approve {}", theirs.token.as_str()), None),
    );
    let missing = say(&desk, &text_from(&mine, "43", "g2", "approve ZZZZ9999", None));
    assert_eq!(notice(&real), no_such(theirs.token.as_str()));
    assert_eq!(notice(&missing), no_such("ZZZZ9999"));
    assert_eq!(
        notice(&real).replace(theirs.token.as_str(), "T"),
        notice(&missing).replace("ZZZZ9999", "T"),
        "nothing tells them apart"
    );
    // The third guess of the hour uses the allowance up (3 in these tests),
    // and the real token is refused unread like any other.
    say(&desk, &text_from(&mine, "43", "g3", "approve YYYY9999", None));
    let limited = say(
        &desk,
        &text_from(&mine, "43", "g4", &format!("approve {}", theirs.token.as_str()), None),
    );
    assert!(notice(&limited).starts_with("Too many answers"), "{limited:?}");
    assert_eq!(status(&desk, &theirs), Status::Pending);
    // The count survives a restart.
    let path = store.path().to_path_buf();
    drop((desk, store));
    let store = crate::store::tests_support::reopen(&path);
    let restarted = self::desk(&store);
    let again = say(&restarted, &text_from(&mine, "43", "g5", "approve XXXX9999", None));
    assert!(notice(&again).starts_with("Too many answers"), "{again:?}");
    drop(dir);
}

#[test]
fn guesses_from_a_chat_with_nothing_pending_are_counted() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let quiet = conversation("telegram", "300");
    for (n, word) in ["payment", "budget", "trusted"].iter().enumerate() {
        let inbound = text_from(&quiet, "43", &format!("q{n}"), &format!("approve {word}"), None);
        assert_eq!(
            say(&desk, &inbound),
            Handled::NotAnAnswer,
            "ordinary text for the model"
        );
    }
    let elsewhere = conversation("telegram", "100");
    let real = pending(&desk, &elsewhere);
    let guess = text_from(&quiet, "43", "q9", &format!("approve {}", real.token.as_str()), None);
    assert!(notice(&say(&desk, &guess)).starts_with("Too many answers"));
}

#[tokio::test(start_paused = true)]
async fn an_approver_taken_off_the_lists_no_longer_decides_what_waits() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let approval = pending(&desk, &chat);
    // A reload names only user 7 now; user 42 was listed when it was asked.
    desk.set_policy(Policy::new(HashMap::new(), vec![approver("telegram", "7", true)], None));
    let answer = format!("approve {}", approval.token.as_str());
    let handled = say(&desk, &text_from(&chat, "42", "a1", &answer, None));
    assert_eq!(
        notice(&handled),
        no_such(approval.token.as_str()),
        "told as a stranger is"
    );
    assert_eq!(status(&desk, &approval), Status::Pending);
    // Nor is anyone added by the new lists let decide what was asked before.
    desk.set_policy(Policy::new(
        HashMap::from([(
            GatewayId::new("telegram").unwrap(),
            vec![approver("telegram", "9", false)],
        )]),
        vec![approver("telegram", "7", true)],
        None,
    ));
    let handled = say(&desk, &text_from(&chat, "9", "a2", &answer, None));
    assert_eq!(notice(&handled), no_such(approval.token.as_str()));
    let handled = say(&desk, &text_from(&chat, "7", "a3", &answer, None));
    assert!(notice(&handled).starts_with("Approved"), "{handled:?}");
}

/// Links `a` and `b` (`gateway:user`, each with their direct chat) as one person.
fn link(store: &Store, a: &str, b: &str) {
    let identity = |label: &str| {
        let (gateway, user) = label.split_once(':').unwrap();
        crate::store::Identity {
            gateway: GatewayId::new(gateway).unwrap(),
            user: UserId::new(user).unwrap(),
            aliases: Vec::new(),
            conversation: conversation(gateway, user),
            at_ms: T0,
            names: Default::default(),
        }
    };
    let (a, b) = (identity(a), identity(b));
    let event = |person| crate::store::AuditEvent {
        at_ms: T0,
        conversation: b.conversation.clone(),
        what: crate::store::Audited::Linked {
            person,
            by: Person::of(&text_from(&b.conversation, b.user.as_str(), "x", "", None)),
            with: a.label(),
        },
    };
    store.link("ABCDEFGH", &a, &b, event, &[]).unwrap();
}

#[test]
fn a_linked_person_answers_their_own_approval_from_their_other_channel_only() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    link(&store, "telegram:42", "signal:u-1");
    link(&store, "telegram:7", "signal:u-7");
    let global = approver("telegram", "7", true);
    let per_gateway = HashMap::from([
        (
            GatewayId::new("telegram").unwrap(),
            vec![approver("telegram", "42", false)],
        ),
        (
            GatewayId::new("signal").unwrap(),
            vec![approver("signal", "u-1", false)],
        ),
    ]);
    desk.set_policy(Policy::new(per_gateway, vec![global], None));
    link(&store, "telegram:5", "signal:u-5");
    let theirs = pending_by(&desk, &conversation("telegram", "42"), "42");
    let others = pending_by(&desk, &conversation("telegram", "100"), "77");
    let not_an_approver = pending(&desk, &conversation("telegram", "5"));
    let sevens = pending_by(&desk, &conversation("telegram", "7"), "7");
    let answer = |approval: &Approval| format!("approve {}", approval.token.as_str());

    let refusals = [
        ("group:g", "u-1", &theirs, "never from a group"),
        (
            "u-1",
            "u-1",
            &others,
            "what others asked still needs the approver lists",
        ),
        ("u-5", "u-5", &not_an_approver, "linking makes nobody an approver"),
        (
            "u-7",
            "u-7",
            &sevens,
            "an account that does not approve where it answers does not, linked or not",
        ),
    ];
    for (n, (chat, user, approval, why)) in refusals.into_iter().enumerate() {
        let inbound = text_from(
            &conversation("signal", chat),
            user,
            &format!("r{n}"),
            &answer(approval),
            None,
        );
        assert_eq!(notice(&say(&desk, &inbound)), no_such(approval.token.as_str()), "{why}");
        assert_eq!(status(&desk, approval), Status::Pending, "{why}");
    }

    let signal_dm = conversation("signal", "u-1");
    let own = say(&desk, &text_from(&signal_dm, "u-1", "s3", &answer(&theirs), None));
    assert!(notice(&own).starts_with("Approved"), "{own:?}");
    assert!(
        matches!(&own, Handled::Answered { settle, .. } if settle[0].conversation == theirs.conversation),
        "the outcome settles where it was asked"
    );
    assert_eq!(status(&desk, &theirs), Status::Approved);
}

#[test]
fn an_always_is_counted_as_approved_like_any_approval() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    let chat = conversation("telegram", "100");
    let once = pending(&desk, &chat);
    say(
        &desk,
        &text_from(&chat, "42", "a1", &format!("approve {}", once.token.as_str()), None),
    );
    let always = pending(&desk, &chat);
    let handled = say(
        &desk,
        &text_from(&chat, "42", "a2", &format!("always {}", always.token.as_str()), None),
    );
    assert!(
        notice(&handled).contains("Standing rule"),
        "a rule was made: {handled:?}"
    );
    let denied = pending(&desk, &chat);
    say(
        &desk,
        &text_from(&chat, "42", "a3", &format!("deny {}", denied.token.as_str()), None),
    );
    // A second answer to the same approval decides nothing, and counts nothing.
    say(
        &desk,
        &text_from(&chat, "42", "a4", &format!("always {}", always.token.as_str()), None),
    );
    let counted = desk.decisions();
    assert_eq!((counted.approved, counted.denied), (2, 1), "{counted:?}");
}
