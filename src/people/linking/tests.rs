//! The linking desk against a real store: codes from private chats only,
//! used once, the same answer for a wrong and an expired code, the limit on
//! guessing, both sides told, codes kept across a restart, and unlinking.
//! Every test runs under paused time: each desk's clock reads what it was
//! given, and a code ages only when a test advances the time.

use std::sync::Arc;

use passepartout_gateway::{ChatId, GatewayId, InboundBody, MessageId, Outbound, OutboundBody, UserId};

use super::*;
use crate::people::access::Roster;
use crate::store::tests_support::open_temp;

const T0: u64 = 1_700_000_000_000;

fn conversation(gateway: &str, chat: &str) -> ConversationKey {
    ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap())
}

/// Telegram lets 42 and 43 talk; Signal lets u-1 talk; the terminal vouches.
fn access() -> Arc<Access> {
    let listed = |users: &[&str]| Roster::Listed {
        users: users.iter().map(|u| (*u).to_owned()).collect(),
        chats: Vec::new(),
    };
    Arc::new(Access::from_rosters([
        (GatewayId::new("telegram").unwrap(), listed(&["42", "43"])),
        (GatewayId::new("signal").unwrap(), listed(&["u-1"])),
        (GatewayId::new("socket").unwrap(), Roster::Everyone),
    ]))
}

fn desk(store: &Store, access: Arc<Access>, at: u64) -> Linking {
    Linking::new(store.clone(), Clock::at(at), access, 3).unwrap()
}

fn says(gateway: &str, chat: &str, user: &str, text: &str) -> Inbound {
    Inbound {
        conversation: conversation(gateway, chat),
        sender: Sender::new(UserId::new(user).unwrap()),
        message_id: MessageId::new("m1").unwrap(),
        reply_to: None,
        body: InboundBody::Text { text: text.into() },
        received_at_ms: 0,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}

fn text(outbound: &Outbound) -> &str {
    match &outbound.body {
        OutboundBody::Text { text, .. } => text,
        other => panic!("not text: {other:?}"),
    }
}

/// How the desk answers `inbound`, a linking command.
fn answer(desk: &Linking, inbound: &Inbound) -> Answer {
    let command = command::parse(inbound).expect("a linking command");
    desk.answer_command(inbound, &command)
}

/// What `inbound` is answered at once.
fn answered(desk: &Linking, inbound: &Inbound) -> String {
    text(answer(desk, inbound).now.as_ref().expect("an answer at once")).to_owned()
}

/// The code in a `/link` answer.
fn code_in(answer: &str) -> String {
    let start = answer.find('`').unwrap() + 1;
    answer[start..start + 8].to_owned()
}

#[tokio::test(start_paused = true)]
async fn a_code_from_one_channel_named_on_another_links_them_and_both_are_told() {
    let (_dir, store) = open_temp();
    let desk = desk(&store, access(), T0);
    let asked = answered(&desk, &says("telegram", "42", "42", "/link"));
    assert!(asked.contains("/link "), "{asked}");
    let code = code_in(&asked);
    let inbound = says("signal", "u-1", "u-1", &format!("/link {}", code.to_lowercase()));
    let answer = answer(&desk, &inbound);
    assert!(answer.now.is_none(), "told through the outboxes: {answer:?}");
    assert_eq!(
        answer.told,
        [conversation("telegram", "42"), conversation("signal", "u-1")]
    );
    for told in &answer.told {
        assert!(store.has_outbox(told), "{told} is told");
    }
    let person = store
        .person_of(&GatewayId::new("signal").unwrap(), &UserId::new("u-1").unwrap())
        .unwrap()
        .unwrap();
    assert_eq!(
        person.identities.iter().map(Identity::label).collect::<Vec<_>>(),
        ["telegram:42", "signal:u-1"]
    );
    let again = answered(&desk, &says("telegram", "43", "43", &format!("/link {code}")));
    assert_eq!(again, "Not linked: no such link code (or it expired).", "used once");
}

#[tokio::test(start_paused = true)]
async fn codes_are_refused_in_groups_both_ways() {
    let (_dir, store) = open_temp();
    let desk = desk(&store, access(), T0);
    let in_group = answered(&desk, &says("telegram", "-100", "42", "/link"));
    assert!(in_group.contains("not from a group"), "{in_group}");
    let code = code_in(&answered(&desk, &says("telegram", "42", "42", "/link")));
    let named = answered(&desk, &says("signal", "group:g", "u-1", &format!("/link {code}")));
    assert!(named.contains("not from a group") && named.contains("void"), "{named}");
    let after = answered(&desk, &says("signal", "u-1", "u-1", &format!("/link {code}")));
    assert!(
        after.contains("no such link code"),
        "a code read in a group is void: {after}"
    );
    assert!(store.link_codes().unwrap().is_empty(), "and gone from the store");
    assert!(store.people().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_wrong_and_an_expired_code_read_the_same_and_guessing_is_limited() {
    let (_dir, store) = open_temp();
    let later = desk(&store, access(), T0);
    let code = code_in(&answered(&later, &says("telegram", "42", "42", "/link")));
    tokio::time::advance(std::time::Duration::from_millis(EXPIRE_MS)).await;
    let expired = answered(&later, &says("signal", "u-1", "u-1", &format!("/link {code}")));
    let wrong = answered(&later, &says("signal", "u-1", "u-1", "/link ABCDEFGH"));
    let garbage = answered(&later, &says("signal", "u-1", "u-1", "/link nonsense!"));
    assert_eq!(expired, wrong);
    assert_eq!(garbage, wrong);
    let fresh = code_in(&answered(&later, &says("telegram", "42", "42", "/link")));
    let limited = answered(&later, &says("signal", "u-1", "u-1", &format!("/link {fresh}")));
    assert!(limited.contains("too many wrong link codes"), "{limited}");
    assert!(
        store.people().unwrap().is_empty(),
        "a right code after the limit is not read"
    );
    let audited = store.audit_events(10).unwrap();
    assert_eq!(audited.len(), 3, "each refusal is audited: {audited:?}");
}

#[tokio::test(start_paused = true)]
async fn a_channels_own_code_is_refused_and_stays_usable() {
    let (_dir, store) = open_temp();
    let desk = desk(&store, access(), T0);
    let code = code_in(&answered(&desk, &says("telegram", "42", "42", "/link")));
    let own = answered(&desk, &says("telegram", "42", "42", &format!("/link {code}")));
    assert!(own.contains("this channel's own"), "{own}");
    let inbound = says("signal", "u-1", "u-1", &format!("/link {code}"));
    assert!(answer(&desk, &inbound).now.is_none());
}

#[tokio::test(start_paused = true)]
async fn asking_again_voids_the_earlier_code_and_codes_outlive_a_restart() {
    let (_dir, store) = open_temp();
    let first = code_in(&answered(
        &desk(&store, access(), T0),
        &says("telegram", "42", "42", "/link"),
    ));
    let second = code_in(&answered(
        &desk(&store, access(), T0 + 1),
        &says("telegram", "42", "42", "/link"),
    ));
    assert_ne!(first, second);
    assert_eq!(store.link_codes().unwrap().len(), 1, "the first is gone from the store");
    let restarted = desk(&store, access(), T0 + 2);
    let voided = answered(&restarted, &says("signal", "u-1", "u-1", &format!("/link {first}")));
    assert!(voided.contains("no such link code"), "{voided}");
    let inbound = says("signal", "u-1", "u-1", &format!("/link {second}"));
    assert!(answer(&restarted, &inbound).now.is_none());
}

#[tokio::test(start_paused = true)]
async fn the_asking_side_must_still_be_allowed_when_its_code_is_named() {
    let (_dir, store) = open_temp();
    let asked_by = desk(&store, access(), T0);
    let code = code_in(&answered(&asked_by, &says("telegram", "43", "43", "/link")));
    let fewer = Roster::Listed {
        users: vec!["42".into()],
        chats: Vec::new(),
    };
    let access = access();
    access.set_rosters([
        (GatewayId::new("telegram").unwrap(), fewer),
        (GatewayId::new("socket").unwrap(), Roster::Everyone),
    ]);
    let named = answered(
        &desk(&store, access, T0),
        &says("socket", "uid-1000", "1000", &format!("/link {code}")),
    );
    assert!(named.contains("may no longer talk to me"), "{named}");
    assert!(store.people().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn unlinking_oneself_and_at_the_terminal_tells_every_side() {
    let (_dir, store) = open_temp();
    let desk = desk(&store, access(), T0);
    let link = |from: Inbound, to: Inbound| {
        let code = code_in(&answered(&desk, &from));
        let named = Inbound {
            body: InboundBody::Text {
                text: format!("/link {code}"),
            },
            ..to
        };
        assert!(answer(&desk, &named).now.is_none());
    };
    link(says("telegram", "42", "42", "/link"), says("signal", "u-1", "u-1", ""));
    link(
        says("socket", "uid-1000", "1000", "/link"),
        says("telegram", "42", "42", ""),
    );
    let not_linked = answered(&desk, &says("telegram", "43", "43", "/unlink"));
    assert_eq!(not_linked, "Not unlinked: this channel is not linked with another.");

    let inbound = says("signal", "u-1", "u-1", "/unlink");
    let answer = answer(&desk, &inbound);
    assert_eq!(answer.told.len(), 3, "every side is told: {answer:?}");
    let person = store.people().unwrap().pop().unwrap();
    assert_eq!(
        person.identities.iter().map(Identity::label).collect::<Vec<_>>(),
        ["telegram:42", "socket:1000"]
    );

    let owner = Person::of(&says("socket", "uid-1000", "1000", ""));
    let at = conversation("socket", "uid-1000");
    assert!(matches!(
        desk.unlink_named("99", &owner, &at),
        Err(LinkError::NoSuchPerson(_))
    ));
    assert!(matches!(
        desk.unlink_named("signal:u-1", &owner, &at),
        Err(LinkError::NoSuchPerson(_))
    ));
    desk.unlink_named(&person.id.to_string(), &owner, &at).unwrap();
    assert!(store.people().unwrap().is_empty());
}
