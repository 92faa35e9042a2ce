//! Messages from clients to the core: acks, duplicates, ids, chats, status,
//! and many clients at once.

use crate::common;

use common::{Daemon, Raw, ScriptedCore, Seen, chat, default_chat, euid, fake_status, within};
use passepartout_gateway::{Ack, Deliver, InboundBody, IntakeEvent, MessageId, UserId};
use passepartout_socket::{AdminRequest, Client, ClientError, ErrorCode, SendOutcome, ServerFrame};
use serde_json::json;

#[tokio::test]
async fn send_is_accepted_and_reaches_the_core() {
    let (daemon, mut core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    assert_eq!(client.chat(), &chat("work"));

    let (id, outcome) = within(client.send(Some("m1".into()), "hello there", None))
        .await
        .unwrap();
    assert_eq!((id.as_str(), outcome), ("m1", SendOutcome::Accepted));

    let inbound = core.next_inbound().await;
    assert_eq!(inbound.conversation, common::socket_conversation("work"));
    assert_eq!(inbound.message_id, MessageId::new("m1").unwrap());
    assert_eq!(inbound.sender.id, UserId::new(euid().to_string()).unwrap());
    assert_eq!(
        inbound.body,
        InboundBody::Text {
            text: "hello there".into()
        }
    );
}

#[tokio::test]
async fn resending_an_id_is_a_duplicate() {
    let (daemon, _core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, None)).await.unwrap();
    let first = within(client.send(Some("m1".into()), "once", None)).await.unwrap();
    let second = within(client.send(Some("m1".into()), "once", None)).await.unwrap();
    assert_eq!(first, ("m1".to_owned(), SendOutcome::Accepted));
    assert_eq!(second, ("m1".to_owned(), SendOutcome::Duplicate));
}

#[tokio::test]
async fn a_message_without_id_gets_a_fresh_generated_one() {
    let (daemon, mut core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, None)).await.unwrap();
    let (first, outcome) = within(client.send(None, "a", None)).await.unwrap();
    assert_eq!(outcome, SendOutcome::Accepted);
    let (second, outcome) = within(client.send(None, "b", None)).await.unwrap();
    assert_eq!(outcome, SendOutcome::Accepted, "a generated id must not repeat");
    assert_ne!(first, second);
    assert_eq!(core.next_inbound().await.message_id.as_str(), first);
}

#[tokio::test]
async fn reply_to_is_passed_on() {
    let (daemon, mut core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, None)).await.unwrap();
    within(client.send(Some("m2".into()), "and this", Some("m1".into())))
        .await
        .unwrap();
    assert_eq!(core.next_inbound().await.reply_to, Some(MessageId::new("m1").unwrap()));
}

#[tokio::test]
async fn an_invalid_id_is_refused_by_the_client() {
    let (daemon, _core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, None)).await.unwrap();
    let sent = within(client.send(Some(String::new()), "x", None)).await;
    assert!(matches!(sent, Err(ClientError::InvalidId(_))), "{sent:?}");
}

/// A process of the daemon's own user that cannot read the key file (a
/// tool's, confined) gets nothing from the socket: no message, no admin
/// question, no second try on the same connection.
#[tokio::test]
async fn a_client_without_the_key_is_refused_and_cut_off() {
    let (daemon, mut core) = Daemon::start().await;
    let attempts = [
        json!({"type": "message", "id": "m1", "text": "no hello"}),
        json!({"type": "approvals"}),
        json!({"type": "decide", "token": "ABCD2345", "approve": true}),
        json!({"type": "hello", "version": 1}),
        json!({"type": "hello", "version": 1, "key": "0".repeat(64)}),
        json!({"type": "hello", "version": 1, "key": Raw::key(&daemon.path)[..63]}),
    ];
    for attempt in attempts {
        let mut raw = Raw::unadmitted(&daemon.path).await;
        raw.send_json(attempt.clone()).await;
        let ServerFrame::Error { message, .. } = raw.expect_error(ErrorCode::NotAllowed).await else {
            unreachable!("an error frame")
        };
        assert!(message.contains("passepartout.sock.key"), "{message}");
        assert!(raw.closed().await, "closed after {attempt}");
    }
    let mut admitted = Raw::connect(&daemon.path).await;
    admitted
        .send_json(json!({"type": "message", "id": "m2", "text": "with the key"}))
        .await;
    assert_eq!(admitted.frame().await, ServerFrame::Accepted { id: "m2".into() });
    assert_eq!(
        core.next_inbound().await.message_id.as_str(),
        "m2",
        "nothing before it came through"
    );
}

#[tokio::test]
async fn the_key_file_is_the_daemons_users_alone() {
    let (daemon, _core) = Daemon::start().await;
    let file = passepartout_socket::key_path(&daemon.path);
    let mode = std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&file).unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
}

#[tokio::test]
async fn hello_without_chat_gets_the_uid_chat_and_user() {
    let (daemon, _core) = Daemon::start().await;
    let client = within(Client::connect(&daemon.path, None)).await.unwrap();
    assert_eq!(client.chat(), &default_chat());
    assert_eq!(client.user().as_str(), euid().to_string());
}

#[tokio::test]
async fn a_second_hello_switches_the_chat() {
    let (daemon, mut core) = Daemon::start().await;
    let mut raw = Raw::unadmitted(&daemon.path).await;
    raw.send_json(json!({"type": "hello", "version": 1, "chat": "first", "key": Raw::key(&daemon.path)}))
        .await;
    assert!(matches!(raw.frame().await, ServerFrame::Welcome { chat: c, .. } if c == chat("first")));
    raw.send_json(json!({"type": "hello", "version": 1, "chat": "second"}))
        .await;
    assert!(matches!(raw.frame().await, ServerFrame::Welcome { chat: c, .. } if c == chat("second")));
    assert_eq!(core.next_reachable().await.chat, chat("first"));
    assert_eq!(core.next_reachable().await.chat, chat("second"));

    let old = daemon.gateway.deliver(&common::text_outbound("o1", "first", "x")).await;
    assert_eq!(old, Err(passepartout_gateway::GatewayError::NotConnected));
    within(daemon.gateway.deliver(&common::text_outbound("o2", "second", "x")))
        .await
        .unwrap();
    assert!(matches!(raw.frame().await, ServerFrame::Reply { id, .. } if id == "o2"));

    raw.send_json(json!({"type": "message", "id": "m1", "text": "here"}))
        .await;
    raw.frame().await;
    assert_eq!(core.next_inbound().await.conversation.chat, chat("second"));
}

#[tokio::test]
async fn status_returns_the_cores_document_and_ping_pongs() {
    let (daemon, mut core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, None)).await.unwrap();
    assert_eq!(
        within(client.ask::<serde_json::Value>(AdminRequest::Status))
            .await
            .unwrap(),
        fake_status()
    );
    // The hello reaches the intake and the question the admin queue: two
    // tasks, so either may be recorded first.
    let seen = [core.next().await, core.next().await];
    assert!(seen.iter().any(|s| matches!(s, Seen::Reachable(_))), "{seen:?}");
    assert!(seen.iter().any(|s| matches!(s, Seen::Other("status"))), "{seen:?}");
    within(client.ping()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_clients_at_once_each_get_their_acks() {
    let (daemon, mut core) = Daemon::start().await;
    let mut clients = tokio::task::JoinSet::new();
    for n in 0..20 {
        let path = daemon.path.clone();
        clients.spawn(async move {
            let mut client = Client::connect(&path, Some(chat(&format!("c{n}")))).await.unwrap();
            let mut acks = Vec::new();
            for m in 0..5 {
                acks.push(
                    client
                        .send(Some(format!("c{n}-m{m}")), format!("text {m}"), None)
                        .await
                        .unwrap(),
                );
            }
            (n, acks)
        });
    }
    let mut finished = 0;
    while let Some(joined) = within(clients.join_next()).await {
        let (n, acks) = joined.unwrap();
        let expected: Vec<_> = (0..5).map(|m| (format!("c{n}-m{m}"), SendOutcome::Accepted)).collect();
        assert_eq!(acks, expected);
        finished += 1;
    }
    assert_eq!(finished, 20);
    let mut inbound = 0;
    while inbound < 100 {
        if let Seen::Inbound(_) = core.next().await {
            inbound += 1;
        }
    }
}

#[tokio::test]
async fn a_client_over_the_limit_is_told_busy() {
    let (daemon, _core) = Daemon::start_tweaked(|config| config.max_clients = 2).await;
    let _one = within(Client::connect(&daemon.path, None)).await.unwrap();
    let _two = within(Client::connect(&daemon.path, None)).await.unwrap();
    let three = within(Client::connect(&daemon.path, None)).await;
    assert!(
        matches!(
            three,
            Err(ClientError::Refused {
                code: ErrorCode::Busy,
                ..
            })
        ),
        "{three:?}"
    );

    drop(_one);
    // The slot frees once the daemon saw the close; until then `busy` is right too.
    within(async {
        loop {
            match Client::connect(&daemon.path, None).await {
                Ok(_) => break,
                Err(ClientError::Refused {
                    code: ErrorCode::Busy, ..
                }) => tokio::task::yield_now().await,
                Err(other) => panic!("unexpected {other}"),
            }
        }
    })
    .await;
}

#[tokio::test]
async fn a_refusal_of_the_core_is_an_error_frame_with_the_id() {
    let (daemon, queue) = Daemon::start_with(|_| {}).await;
    let _core = ScriptedCore::answering(queue, |_| Ack::Busy);
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_json(json!({"type": "message", "id": "m9", "text": "x"})).await;
    let frame = raw.expect_error(ErrorCode::Busy).await;
    assert!(matches!(frame, ServerFrame::Error { id: Some(id), .. } if id == "m9"));
}

#[tokio::test]
async fn a_reply_arriving_before_the_ack_is_still_returned_by_next_event() {
    let (daemon, mut queue) = Daemon::start_with(|_| {}).await;
    let gateway = daemon.gateway.clone();
    // A core that answers before it acknowledges: the reply frame is written
    // before the accepted frame.
    tokio::spawn(async move {
        while let Some(event) = queue.recv().await {
            if let IntakeEvent::Inbound { inbound, ack } = event {
                let reply = common::text_outbound("out-1", inbound.conversation.chat.as_str(), "early");
                gateway.deliver(&reply).await.unwrap();
                let _ = ack.send(Ack::Accepted);
            }
        }
    });
    let mut client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    let sent = within(client.send(Some("m1".into()), "hi", None)).await.unwrap();
    assert_eq!(sent, ("m1".to_owned(), SendOutcome::Accepted));
    match within(client.next_event()).await.unwrap() {
        ServerFrame::Reply { id, text, .. } => {
            assert_eq!((id.as_str(), text.as_str()), ("out-1", "early"))
        }
        other => panic!("expected the early reply, got {other:?}"),
    }
}
