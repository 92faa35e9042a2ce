//! The core's messages to clients: replies, approval prompts, typing, and
//! what happens when nobody is connected.

use crate::common;

use common::{Daemon, Raw, chat, socket_conversation, text_outbound, within};
use passepartout_gateway::{
    ApprovalToken, ConversationKey, Deliver, Delivered, GatewayError, GatewayId, MessageId, Outbound, OutboundBody,
    ReplyKind,
};
use passepartout_socket::{Client, ServerFrame};

#[tokio::test]
async fn a_reply_reaches_the_chats_client_with_its_id() {
    let (daemon, _core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    let delivered = within(daemon.gateway.deliver(&text_outbound("out-7", "work", "the answer"))).await;
    assert_eq!(
        delivered,
        Ok(Delivered {
            message_ids: vec![MessageId::new("out-7").unwrap()]
        })
    );
    let expected = ServerFrame::Reply {
        id: "out-7".into(),
        chat: chat("work"),
        in_reply_to: Some("m1".into()),
        text: "the answer".into(),
        kind: ReplyKind::Answer,
        drafted: false,
    };
    assert_eq!(within(client.next_event()).await.unwrap(), expected);
}

#[tokio::test]
async fn every_connection_of_the_chat_gets_the_reply_and_no_other() {
    let (daemon, _core) = Daemon::start().await;
    let mut first = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    let mut second = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    let mut elsewhere = Raw::connect(&daemon.path).await;
    elsewhere
        .send_json(serde_json::json!({"type": "hello", "version": 1, "chat": "home"}))
        .await;
    assert!(matches!(elsewhere.frame().await, ServerFrame::Welcome { .. }));
    within(daemon.gateway.deliver(&text_outbound("out-1", "work", "both")))
        .await
        .unwrap();
    // Both writers get the frame even though one confirmation is enough.
    for client in [&mut first, &mut second] {
        assert!(matches!(within(client.next_event()).await.unwrap(), ServerFrame::Reply { id, .. } if id == "out-1"));
    }
    // Frames arrive in order: a pong first means no reply was queued before it.
    elsewhere.assert_usable().await;
}

#[tokio::test]
async fn an_approval_prompt_becomes_an_approval_frame() {
    let (daemon, _core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    let token = ApprovalToken::new("K7PX2Q").unwrap();
    let prompt = Outbound {
        drafts: Vec::new(),
        turn_end: None,
        id: "out-2".into(),
        conversation: socket_conversation("work"),
        in_reply_to: None,
        body: OutboundBody::ApprovalPrompt {
            token: token.clone(),
            action: "shell: rm -rf build".into(),
            text: "Answer K7PX2Q to approve".into(),
        },
    };
    within(daemon.gateway.deliver(&prompt)).await.unwrap();
    match within(client.next_event()).await.unwrap() {
        ServerFrame::Approval {
            id, token: got, action, ..
        } => {
            assert_eq!(
                (id.as_str(), got, action.as_str()),
                ("out-2", token, "shell: rm -rf build")
            );
        }
        other => panic!("expected an approval frame, got {other:?}"),
    }
}

#[tokio::test]
async fn delivery_to_a_chat_without_client_is_not_connected() {
    let (daemon, _core) = Daemon::start().await;
    let _other = within(Client::connect(&daemon.path, Some(chat("home")))).await.unwrap();
    let delivered = daemon.gateway.deliver(&text_outbound("out-1", "work", "nobody")).await;
    assert_eq!(delivered, Err(GatewayError::NotConnected));
}

#[tokio::test]
async fn delivery_after_the_client_left_is_not_connected() {
    let (daemon, _core) = Daemon::start().await;
    let client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    drop(client);
    // Whether the daemon already saw the close or finds out writing, the answer is the same.
    let delivered = within(daemon.gateway.deliver(&text_outbound("out-1", "work", "gone"))).await;
    assert_eq!(delivered, Err(GatewayError::NotConnected));
}

#[tokio::test]
async fn a_conversation_of_another_gateway_is_rejected() {
    let (daemon, _core) = Daemon::start().await;
    let _client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    let mut outbound = text_outbound("out-1", "work", "x");
    outbound.conversation = ConversationKey::new(GatewayId::new("telegram").unwrap(), chat("work"));
    let delivered = daemon.gateway.deliver(&outbound).await;
    assert!(matches!(delivered, Err(GatewayError::Rejected { .. })), "{delivered:?}");
}

#[tokio::test]
async fn typing_reaches_the_chats_client() {
    let (daemon, _core) = Daemon::start().await;
    let mut client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    daemon.gateway.typing(&socket_conversation("work")).await.unwrap();
    assert_eq!(
        within(client.next_event()).await.unwrap(),
        ServerFrame::Typing { chat: chat("work") }
    );
    // Nobody there: still fine.
    daemon.gateway.typing(&socket_conversation("empty")).await.unwrap();
}

#[tokio::test]
async fn reconnecting_with_hello_makes_the_chat_reachable_again() {
    let (daemon, mut core) = Daemon::start().await;
    let client = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    assert_eq!(core.next_reachable().await, socket_conversation("work"));
    drop(client);
    let _again = within(Client::connect(&daemon.path, Some(chat("work")))).await.unwrap();
    assert_eq!(core.next_reachable().await, socket_conversation("work"));
}
