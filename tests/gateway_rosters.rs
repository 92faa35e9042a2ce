//! Who may talk and approve through each gateway, as its component lists
//! them and as access and the approvals policy then decide: Telegram's user
//! and chat ids, Signal's senders (by UUID or number) and groups, the local
//! socket's own user.

use passepartout::config::Config;
use passepartout::gateways::socket::Socket;
use passepartout::gateways::{GatewayComponent, Roster};
use passepartout_gateway::{ChatId, ConversationKey, GatewayId, Inbound, InboundBody, MessageId, Sender, UserId};

/// A text from `user` in `chat` on `gateway`.
fn from(gateway: &str, chat: &str, user: &str) -> Inbound {
    Inbound {
        conversation: ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap()),
        sender: Sender::new(UserId::new(user).unwrap()),
        message_id: MessageId::new("m").unwrap(),
        reply_to: None,
        body: InboundBody::Text { text: "hi".into() },
        received_at_ms: 0,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}

#[test]
fn listed_users_and_chats_only() {
    let mut config = Config::default();
    config.telegram.allowed_users = vec![42];
    config.telegram.allowed_chats = vec![-100];
    let access = passepartout::gateways::access(&config);
    assert!(access.allows(&from("socket", "uid-1000", "1000")));
    assert!(access.allows(&from("telegram", "42", "42")), "a listed user");
    assert!(
        access.allows(&from("telegram", "-5", "42")),
        "a listed user, in any chat"
    );
    assert!(access.allows(&from("telegram", "-100", "7")), "anyone in a listed chat");
    assert!(!access.allows(&from("telegram", "7", "7")), "a stranger");
    assert!(!access.allows(&from("matrix", "42", "42")), "no allowlist: nobody");
}

#[test]
fn nobody_by_default() {
    let access = passepartout::gateways::access(&Config::default());
    assert!(!access.allows(&from("telegram", "42", "42")));
}

#[test]
fn signal_senders_by_uuid_and_whole_groups() {
    let mut config = Config::default();
    config.signal.allowed_senders = vec!["uuid-a".into()];
    config.signal.allowed_groups = vec!["R3JvdXA=".into()];
    let access = passepartout::gateways::access(&config);
    assert!(access.allows(&from("signal", "uuid-a", "uuid-a")));
    assert!(
        access.allows(&from("signal", "group:R3JvdXA=", "uuid-b")),
        "anyone in a listed group"
    );
    assert!(!access.allows(&from("signal", "uuid-b", "uuid-b")));
    assert!(!access.allows(&from("signal", "group:other", "uuid-b")));
}

#[test]
fn signal_senders_by_number_match_their_alias() {
    let mut config = Config::default();
    config.signal.allowed_senders = vec!["+15550000002".into()];
    let access = passepartout::gateways::access(&config);
    let mut known = from("signal", "uuid-b", "uuid-b");
    assert!(!access.allows(&known), "no number given, no match");
    known.sender.aliases = vec![UserId::new("+15550000002").unwrap()];
    assert!(access.allows(&known), "the number is the sender's alias");
    known.sender.aliases = vec![UserId::new("+15550000003").unwrap()];
    assert!(!access.allows(&known), "another number");
}

#[test]
fn the_socket_user_is_the_local_one_and_may_talk_and_approve() {
    let socket = Socket::new(&Config::default());
    assert_eq!(
        (socket.talkers(), socket.deciders()),
        (Roster::Everyone, Roster::Everyone)
    );
    let policy = passepartout::gateways::policy(&Config::default());
    assert_eq!(policy.local_gateway(), Some(&socket.id()));
}
