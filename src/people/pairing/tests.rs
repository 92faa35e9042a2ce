//! The pairing desk against a real store under paused time: codes offered
//! once per window and expiring, approved only by owners, wrong codes
//! refused alike and limited, people revoked, and the paired and the codes
//! waiting kept across a reopen.

use std::time::Duration;

use passepartout_gateway::{ChatId, InboundBody, MessageId, OutboundBody, Sender};

use super::*;
use crate::store::tests::{open_temp, reopen};

const EXPIRE_S: u64 = 600;

fn telegram() -> GatewayId {
    GatewayId::new("telegram").unwrap()
}

fn signal() -> GatewayId {
    GatewayId::new("signal").unwrap()
}

fn local() -> GatewayId {
    GatewayId::new("local").unwrap()
}

fn lists() -> Vec<Lists> {
    vec![
        Lists {
            gateway: local(),
            talkers: Roster::Everyone,
            deciders: Roster::Everyone,
        },
        Lists {
            gateway: signal(),
            talkers: Roster::Listed {
                users: vec!["s1".into()],
                chats: vec![],
            },
            deciders: Roster::Listed {
                users: vec!["s1".into()],
                chats: vec![],
            },
        },
        Lists {
            gateway: telegram(),
            talkers: Roster::Listed {
                users: vec!["1".into(), "2".into()],
                chats: vec![],
            },
            deciders: Roster::Listed {
                users: vec!["1".into()],
                chats: vec![],
            },
        },
    ]
}

fn desk(store: Store, enabled: bool) -> Pairing {
    desk_at(store, enabled, 1_000_000)
}

/// A desk whose clock reads `now_ms` when made.
fn desk_at(store: Store, enabled: bool, now_ms: u64) -> Pairing {
    let settings = PairingConfig {
        enabled,
        expire_s: EXPIRE_S,
        wrong_codes_per_hour: 3,
        max_waiting: 2,
    };
    Pairing::new(
        &settings,
        &ApprovalsConfig::default(),
        lists(),
        store,
        Clock::at(now_ms),
    )
    .unwrap()
}

fn from(user: &str) -> Inbound {
    Inbound {
        conversation: ConversationKey::new(telegram(), ChatId::new(user).unwrap()),
        sender: Sender::new(UserId::new(user).unwrap()),
        message_id: MessageId::new("m1").unwrap(),
        reply_to: None,
        body: InboundBody::Text { text: "hello".into() },
        received_at_ms: 0,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}

fn owner() -> Person {
    Person::known_as(local(), UserId::new("1000").unwrap())
}

fn here() -> ConversationKey {
    ConversationKey::new(local(), ChatId::new("uid-1000").unwrap())
}

/// The code in the text of an offer.
fn code_of(offer: Option<Offer>) -> String {
    let Some(Offer::Send { code: outbound, .. }) = offer else {
        panic!("no code sent: {offer:?}");
    };
    let OutboundBody::Text { text, .. } = outbound.body else {
        panic!("not a text");
    };
    text.split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        .find(|w| Code::parse(w).is_some() && w.len() == 8 && w.chars().all(|c| !c.is_ascii_lowercase()))
        .expect("a code in the text")
        .to_owned()
}

#[tokio::test(start_paused = true)]
async fn one_code_per_window_which_expires() {
    let (_dir, store) = open_temp();
    let desk = desk(store, true);
    let first = code_of(desk.offer(&from("42")));
    assert!(
        matches!(desk.offer(&from("42")), Some(Offer::Sent)),
        "not a second code while the first lives"
    );
    tokio::time::advance(Duration::from_secs(EXPIRE_S)).await;
    assert!(desk.waiting().is_empty(), "expired");
    assert!(
        matches!(desk.approve(&first, false, &owner(), &here()), Err(PairError::Unknown)),
        "an expired code reads as unknown"
    );
    let second = code_of(desk.offer(&from("42")));
    assert_ne!(first, second, "a new code after the window");
}

#[tokio::test(start_paused = true)]
async fn an_owner_approves_and_revokes_live() {
    let (_dir, store) = open_temp();
    let desk = desk(store.clone(), true);
    let code = code_of(desk.offer(&from("42")));
    assert_eq!(desk.waiting().len(), 1);
    let paired = desk.approve(&code.to_lowercase(), true, &owner(), &here()).unwrap();
    assert_eq!((paired.person.user.as_str(), paired.person.approver), ("42", true));
    let ada = Person::of(&from("42"));
    assert!(desk.paired().allows(&telegram(), &from("42").sender));
    assert!(desk.is_owner(&ada), "paired as an approver: an owner");
    assert!(
        matches!(desk.approve(&code, false, &owner(), &here()), Err(PairError::Unknown)),
        "used once"
    );
    assert!(
        matches!(desk.revoke("telegram:1", &owner()), Err(PairError::Configured(_))),
        "the config's lists hold"
    );
    assert!(matches!(
        desk.revoke("telegram", &owner()),
        Err(PairError::NotAPerson(_))
    ));
    desk.revoke("telegram:42", &owner()).unwrap();
    assert!(
        !desk.paired().allows(&telegram(), &from("42").sender),
        "revoked at once"
    );
    assert!(matches!(
        desk.revoke("telegram:42", &owner()),
        Err(PairError::NotPaired(_))
    ));
    let events: Vec<_> = store.audit_events(10).unwrap().into_iter().map(|e| e.what).collect();
    assert!(
        matches!(
            events.as_slice(),
            [
                Audited::PairingOffered { .. },
                Audited::Paired { approver: true, .. },
                Audited::PairingRefused { .. },
                Audited::Unpaired { .. }
            ]
        ),
        "{events:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn only_owners_approve() {
    let (_dir, store) = open_temp();
    let desk = desk(store, true);
    let code = code_of(desk.offer(&from("42")));
    let talker = Person::known_as(telegram(), UserId::new("2").unwrap());
    assert!(matches!(
        desk.approve(&code, false, &talker, &here()),
        Err(PairError::NotOwner)
    ));
    let stranger = Person::of(&from("43"));
    assert!(matches!(
        desk.approve(&code, false, &stranger, &here()),
        Err(PairError::NotOwner)
    ));
    let approver = Person::known_as(telegram(), UserId::new("1").unwrap());
    desk.approve(&code, false, &approver, &here())
        .expect("a configured approver may");
}

#[tokio::test(start_paused = true)]
async fn only_an_approver_on_the_persons_gateway_or_the_terminal_makes_an_approver() {
    let (_dir, store) = open_temp();
    let desk = desk(store, true);
    let code = code_of(desk.offer(&from("42")));
    let on_signal = Person::known_as(signal(), UserId::new("s1").unwrap());
    let refused = desk.approve(&code, true, &on_signal, &here()).unwrap_err();
    assert!(
        matches!(&refused, PairError::ApproverElsewhere(g) if *g == telegram()),
        "{refused}"
    );
    assert!(!desk.paired().allows(&telegram(), &from("42").sender), "nobody let in");
    let let_in = desk
        .approve(&code, false, &on_signal, &here())
        .expect("the code was kept");
    assert!(!let_in.person.approver, "let in to talk, as an owner elsewhere may");

    let code = code_of(desk.offer(&from("43")));
    let on_telegram = Person::known_as(telegram(), UserId::new("1").unwrap());
    let made = desk.approve(&code, true, &on_telegram, &here()).unwrap();
    assert!(made.person.approver, "an approver on Telegram makes one there");
    let code = code_of(desk.offer(&from("44")));
    let made = desk.approve(&code, true, &owner(), &here()).unwrap();
    assert!(made.person.approver, "the owner at the terminal makes one anywhere");
}

#[tokio::test(start_paused = true)]
async fn guessed_codes_are_refused_alike_and_limited() {
    let (_dir, store) = open_temp();
    let desk = desk(store, true);
    let code = code_of(desk.offer(&from("42")));
    for guess in ["ABCD2345", "not a code", ""] {
        let refused = desk.approve(guess, false, &owner(), &here()).unwrap_err();
        assert_eq!(refused.to_string(), PairError::Unknown.to_string(), "{guess:?}");
    }
    assert!(
        matches!(desk.approve(&code, false, &owner(), &here()), Err(PairError::Limited)),
        "even the right code, once the guesses are used up"
    );
    tokio::time::advance(Duration::from_secs(3_600)).await;
    assert!(desk.waiting().is_empty(), "the code expired meanwhile");
    let code = code_of(desk.offer(&from("42")));
    desk.approve(&code, false, &owner(), &here())
        .expect("allowed again after the hour");
}

#[tokio::test(start_paused = true)]
async fn disabled_pairing_offers_nothing() {
    let (_dir, store) = open_temp();
    assert!(desk(store, false).offer(&from("42")).is_none());
}

#[tokio::test(start_paused = true)]
async fn the_paired_are_loaded_again_after_a_reopen() {
    let (dir, store) = open_temp();
    let first = desk(store, true);
    let code = code_of(first.offer(&from("42")));
    first.approve(&code, false, &owner(), &here()).unwrap();
    drop(first);
    let store = reopen(&dir.path().join("store"));
    let again = desk(store, true);
    assert!(again.paired().allows(&telegram(), &from("42").sender));
    assert!(
        again
            .render_access()
            .unwrap()
            .contains("telegram:42  allowed  paired by local:1000")
    );
}

/// A code sent to 42 by a desk whose store is then reopened: the folder,
/// the reopened store and the code.
fn a_code_then_a_restart() -> (tempfile::TempDir, Store, String) {
    let (dir, store) = open_temp();
    let first = desk(store, true);
    let code = code_of(first.offer(&from("42")));
    drop(first);
    let store = reopen(&dir.path().join("store"));
    (dir, store, code)
}

#[tokio::test(start_paused = true)]
async fn a_code_sent_before_a_restart_is_approved_after_it() {
    let (dir, store, code) = a_code_then_a_restart();
    let again = desk_at(store.clone(), true, 1_000_000 + 60_000);
    assert_eq!(again.waiting().len(), 1, "still waiting");
    assert!(
        matches!(again.offer(&from("42")), Some(Offer::Sent)),
        "no second code while the first lives"
    );
    again.approve(&code, false, &owner(), &here()).unwrap();
    assert!(again.paired().allows(&telegram(), &from("42").sender));
    assert!(store.pairing_codes().unwrap().is_empty(), "used up, in the store too");
    drop((again, store));
    let store = reopen(&dir.path().join("store"));
    let third = desk(store, true);
    assert!(
        matches!(third.approve(&code, false, &owner(), &here()), Err(PairError::Unknown)),
        "a used code does not come back"
    );
}

#[tokio::test(start_paused = true)]
async fn a_code_that_expired_while_the_daemon_was_down_is_forgotten() {
    let (_dir, store, code) = a_code_then_a_restart();
    assert_eq!(store.pairing_codes().unwrap().len(), 1);
    let later = desk_at(store.clone(), true, 1_000_000 + EXPIRE_S * 1000);
    assert!(store.pairing_codes().unwrap().is_empty(), "forgotten at the start");
    assert!(later.waiting().is_empty());
    assert!(matches!(
        later.approve(&code, false, &owner(), &here()),
        Err(PairError::Unknown)
    ));
    let second = code_of(later.offer(&from("42")));
    assert_ne!(code, second, "a new code is sent");
}

#[tokio::test(start_paused = true)]
async fn turning_pairing_off_voids_the_codes_waiting() {
    let (_dir, store, code) = a_code_then_a_restart();
    let off = desk(store.clone(), false);
    assert!(store.pairing_codes().unwrap().is_empty(), "forgotten at the start");
    assert!(matches!(
        off.approve(&code, false, &owner(), &here()),
        Err(PairError::Unknown)
    ));
}

#[tokio::test(start_paused = true)]
async fn strangers_past_the_codes_that_may_wait_are_refused_until_one_is_used() {
    let (_dir, store) = open_temp();
    let desk = desk(store.clone(), true);
    let first = code_of(desk.offer(&from("42")));
    code_of(desk.offer(&from("43")));
    assert!(matches!(desk.offer(&from("44")), Some(Offer::Full)));
    assert_eq!(store.pairing_codes().unwrap().len(), 2, "nothing more is kept");
    desk.approve(&first, false, &owner(), &here()).unwrap();
    code_of(desk.offer(&from("44")));
}

/// The texts waiting in `conversation`'s outbox.
fn outbox_texts(store: &Store, conversation: &ConversationKey) -> Vec<String> {
    store
        .outbox_for(conversation)
        .unwrap()
        .into_iter()
        .filter_map(|entry| match entry.outbound.body {
            OutboundBody::Text { text, .. } => Some(text),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn the_owners_are_told_who_asks_by_name_and_the_person_when_let_in() {
    let (_dir, store) = open_temp();
    let desk = desk(store.clone(), true);
    let mut ada = from("42");
    ada.sender.display_name = Some("Ada\nLovelace".into());
    ada.sender.username = Some("ada".into());
    let offer = desk.offer(&ada);
    let Some(Offer::Send { told, .. }) = &offer else {
        panic!("no code sent: {offer:?}");
    };
    let owner_chat = ConversationKey::new(telegram(), ChatId::new("1").unwrap());
    assert_eq!(
        told,
        &vec![owner_chat.clone()],
        "the gateway's one approver, not the other talker"
    );
    let code = code_of(offer);
    let told_owner = outbox_texts(&store, &owner_chat);
    assert_eq!(told_owner.len(), 1);
    assert!(
        told_owner[0].starts_with("Ada Lovelace @ada (telegram:42) asks to be let in."),
        "{}",
        told_owner[0]
    );
    assert!(
        told_owner[0].contains(&format!("`/pair approve {code}`")),
        "{}",
        told_owner[0]
    );
    assert!(outbox_texts(&store, &ConversationKey::new(telegram(), ChatId::new("2").unwrap())).is_empty());
    let waiting = desk.waiting();
    assert_eq!(waiting[0].names.name.as_deref(), Some("Ada Lovelace"));

    let let_in = desk.approve(&code, false, &owner(), &here()).unwrap();
    assert_eq!(let_in.told, ada.conversation);
    assert_eq!(
        outbox_texts(&store, &ada.conversation),
        vec!["You are let in: you can talk to this assistant now.".to_owned()]
    );
    assert_eq!(
        paired_message(&let_in.person),
        "Ada Lovelace @ada (telegram:42) is let in; they were told so."
    );
    assert_eq!(
        outbox_texts(&store, &owner_chat).len(),
        1,
        "the owners are not told twice"
    );
}

/// A desk where `max_waiting` codes may wait.
fn desk_for(store: Store, max_waiting: u32) -> Pairing {
    let settings = PairingConfig {
        enabled: true,
        expire_s: EXPIRE_S,
        wrong_codes_per_hour: 3,
        max_waiting,
    };
    Pairing::new(
        &settings,
        &ApprovalsConfig::default(),
        lists(),
        store,
        Clock::at(1_000_000),
    )
    .unwrap()
}

fn from_on(gateway: GatewayId, user: &str) -> Inbound {
    Inbound {
        conversation: ConversationKey::new(gateway, ChatId::new(user).unwrap()),
        ..from(user)
    }
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_strangers_tells_the_owners_a_few_a_minute_and_folds_the_rest() {
    let (_dir, store) = open_temp();
    let desk = desk_for(store.clone(), 100);
    let owner_chat = ConversationKey::new(telegram(), ChatId::new("1").unwrap());
    for n in 0..40 {
        code_of(desk.offer(&from(&format!("{}", 100 + n))));
    }
    let told = outbox_texts(&store, &owner_chat);
    assert_eq!(told.len(), 4, "three requests and one folded: {told:#?}");
    assert!(told[..3].iter().all(|t| t.contains("asks to be let in")), "{told:#?}");
    assert!(
        told[3].starts_with("More people ask to be let in on telegram than you are told of (at most 3 a minute).")
            && told[3].contains("`passepartout pair list`")
            && told[3].contains("`passepartout pair clear telegram`"),
        "{}",
        told[3]
    );
    assert_eq!(desk.waiting().len(), 40, "every one of them still waits, listed");
    // Another gateway's owners are told on their own count.
    code_of(desk.offer(&from_on(signal(), "s9")));
    let signal_owner = ConversationKey::new(signal(), ChatId::new("s1").unwrap());
    assert_eq!(outbox_texts(&store, &signal_owner).len(), 1);

    tokio::time::advance(Duration::from_secs(59)).await;
    code_of(desk.offer(&from("200")));
    assert_eq!(outbox_texts(&store, &owner_chat).len(), 4, "still the same minute");
    tokio::time::advance(Duration::from_secs(1)).await;
    code_of(desk.offer(&from("201")));
    let told = outbox_texts(&store, &owner_chat);
    assert_eq!(told.len(), 5);
    assert!(
        told[4].starts_with("telegram:201 asks to be let in.")
            && told[4].ends_with(
                "38 more asked before without a message of their own; `passepartout pair list` shows everyone waiting."
            ),
        "{}",
        told[4]
    );
}

#[tokio::test(start_paused = true)]
async fn the_owner_clears_all_codes_one_gateways_one_persons_or_one() {
    let (_dir, store) = open_temp();
    let desk = desk_for(store.clone(), 4);
    let first = code_of(desk.offer(&from("42")));
    code_of(desk.offer(&from("43")));
    code_of(desk.offer(&from("44")));
    code_of(desk.offer(&from_on(signal(), "s9")));
    assert!(
        matches!(desk.offer(&from("45")), Some(Offer::Full)),
        "every place taken"
    );

    let stranger = Person::known_as(telegram(), UserId::new("2").unwrap());
    assert!(matches!(desk.clear(None, &stranger), Err(PairError::NotOwner)));
    assert!(matches!(
        desk.clear(Some("nonsense!"), &owner()),
        Err(PairError::NotWaiting(_))
    ));
    assert!(matches!(
        desk.clear(Some("ABCDEFGH"), &owner()),
        Err(PairError::Unknown)
    ));

    assert_eq!(
        desk.clear(Some(&first.to_lowercase()), &owner()).unwrap(),
        "cleared 1 pairing code; whoever writes again is sent a new one"
    );
    assert!(matches!(
        desk.approve(&first, false, &owner(), &here()),
        Err(PairError::Unknown)
    ));
    assert!(
        desk.clear(Some("telegram:43"), &owner())
            .unwrap()
            .starts_with("cleared 1 pairing code")
    );
    code_of(desk.offer(&from("45")));
    assert!(
        desk.clear(Some("telegram"), &owner())
            .unwrap()
            .starts_with("cleared 2 pairing codes")
    );
    let waiting: Vec<String> = desk.waiting().iter().map(|w| w.conversation.to_string()).collect();
    assert_eq!(waiting, ["signal:s9"]);
    assert_eq!(
        desk.clear(None, &owner()).unwrap(),
        "cleared 1 pairing code; whoever writes again is sent a new one"
    );
    assert_eq!(
        desk.clear(None, &owner()).unwrap(),
        "no pairing codes waiting there; nothing cleared"
    );
    assert!(store.pairing_codes().unwrap().is_empty(), "forgotten in the store too");
    let cleared = store
        .audit_events(100)
        .unwrap()
        .iter()
        .filter(|e| matches!(e.what, Audited::PairingCleared { .. }))
        .count();
    assert_eq!(cleared, 5);
    // A stranger cleared is offered a new code when they write again.
    code_of(desk.offer(&from("42")));
}
