//! The Signal gateway against the fake signal-cli daemon: subscribing after
//! every connect, one message at a time into the intake, reconnecting,
//! refusals, and delivery with quotes, long-text splitting and typing.
//!
//! Each test runs a real [`SignalGateway`] over a Unix socket (or TCP) against
//! the root crate's fake daemon, with a real intake whose queue the test
//! answers itself ([`CoreSide`]), playing the core. Every wait is on an event,
//! under a timeout.

use crate::fake_signal;

use std::sync::Arc;
use std::time::Duration;

use fake_signal::{ACCOUNT, ACCOUNT_UUID, FakeSignal, codes};
use passepartout_gateway::{
    Ack, ChatId, ConversationKey, Deliver, GatewayError, GatewayId, HealthState, InboundBody, Listen, MessageId,
    Outbound, Refusal,
};
use passepartout_gateway_testing::{CoreSide, Listening, build};
use passepartout_signal::{SIGNAL_TEXT_LIMIT, SignalGateway, SignalSettings};

const WAIT: Duration = Duration::from_secs(5);
const ADA: &str = "a1a1a1a1-1111-4111-8111-111111111111";
const BOB: &str = "c2c2c2c2-2222-4222-8222-222222222222";
const GROUP: &str = "Z3JvdXAtaWQtMTIzNDU2Nzg5MA==";

fn settings(endpoint: &str) -> SignalSettings {
    SignalSettings {
        account_uuid: Some(ACCOUNT_UUID.to_owned()),
        refusal: "This assistant is private.".to_owned(),
        backoff_base: Duration::from_millis(10),
        backoff_max: Duration::from_millis(50),
        busy_backoff: Duration::from_millis(10),
        call_timeout: WAIT,
        ..SignalSettings::new(endpoint.parse().expect("the endpoint parses"), ACCOUNT)
    }
}

struct Running {
    gateway: Arc<SignalGateway>,
    core: CoreSide,
    listening: Listening<SignalGateway>,
}

impl Running {
    async fn stop(self) {
        assert_eq!(self.listening.stop().await, Ok(()));
    }
}

fn listen(settings: SignalSettings) -> Running {
    let (listening, queue) = Listening::start(SignalGateway::new(settings), 4);
    Running {
        gateway: Arc::clone(&listening.gateway),
        core: CoreSide::new(queue),
        listening,
    }
}

fn conversation(chat: &str) -> ConversationKey {
    build::conversation("signal", chat)
}

fn text(conversation: ConversationKey, body: &str, in_reply_to: Option<&str>) -> Outbound {
    build::outbound(conversation, in_reply_to, build::answer(body))
}

#[tokio::test]
async fn messages_reach_the_core_in_order_one_at_a_time() {
    let fake = FakeSignal::start().await;
    fake.push_envelope(fake_signal::text_envelope(ADA, 1_000, "first"));
    fake.push_envelope(fake_signal::text_envelope(ADA, 1_001, "second"));
    let mut running = listen(settings(&fake.unix_endpoint()));

    let (first, ack) = running.core.next().await;
    assert_eq!(first.body, InboundBody::Text { text: "first".into() });
    assert_eq!(first.conversation, conversation(ADA));
    assert_eq!(first.message_id.as_str(), format!("1000:{ADA}"));
    assert!(
        running.core.is_idle(),
        "the second message was submitted before the first was acknowledged"
    );
    ack.send(Ack::Accepted).unwrap();
    let second = running.core.answer(Ack::Accepted).await;
    assert_eq!(second.message_id.as_str(), format!("1001:{ADA}"));
    assert_eq!(running.gateway.health().state, HealthState::Up);
    assert_eq!(fake.calls("subscribeReceive").len(), 1);
    running.stop().await;
}

#[tokio::test]
async fn a_busy_core_gets_the_same_message_again() {
    let fake = FakeSignal::start().await;
    fake.push_envelope(fake_signal::text_envelope(ADA, 2_000, "hello"));
    let mut running = listen(settings(&fake.tcp_endpoint()));
    let first = running.core.answer(Ack::Busy).await;
    let again = running.core.answer(Ack::Accepted).await;
    assert_eq!(first, again);
    running.stop().await;
}

#[tokio::test]
async fn reconnects_and_subscribes_again_after_the_connection_drops() {
    let fake = FakeSignal::start().await;
    let mut running = listen(settings(&fake.unix_endpoint()));
    fake.wait_for_subscriber().await;
    fake.drop_connections();
    // Queued while we are away; delivered only after the new subscription.
    fake.push_envelope(fake_signal::text_envelope(ADA, 3_000, "while you were away"));
    let got = running.core.answer(Ack::Accepted).await;
    assert_eq!(got.message_id.as_str(), format!("3000:{ADA}"));
    assert!(fake.wait_for_calls("subscribeReceive", 2).await.len() >= 2);
    running.stop().await;
}

#[tokio::test]
async fn keeps_trying_while_the_daemon_refuses_to_subscribe() {
    let fake = FakeSignal::start().await;
    fake.fail_next("subscribeReceive", codes::INTERNAL_ERROR, "not yet");
    fake.push_envelope(fake_signal::text_envelope(ADA, 4_000, "eventually"));
    let mut running = listen(settings(&fake.unix_endpoint()));
    let got = running.core.answer(Ack::Accepted).await;
    assert_eq!(got.message_id.as_str(), format!("4000:{ADA}"));
    assert_eq!(fake.calls("subscribeReceive").len(), 2);
    running.stop().await;
}

#[tokio::test]
async fn group_messages_need_a_mention_and_replies_quote_their_author() {
    let fake = FakeSignal::start().await;
    let mut running = listen(settings(&fake.unix_endpoint()));
    fake.push_envelope(fake_signal::text_envelope(BOB, 5_000, "not for the bot"));
    let mut unaddressed = fake_signal::text_envelope(BOB, 5_001, "group chatter");
    unaddressed["dataMessage"]["groupInfo"] = serde_json::json!({ "groupId": GROUP, "type": "DELIVER" });
    fake.push_envelope(unaddressed);
    fake.push_envelope(fake_signal::group_mention_envelope(
        ADA,
        5_002,
        GROUP,
        "what time is it?",
    ));

    let direct = running.core.answer(Ack::Accepted).await;
    assert_eq!(direct.message_id.as_str(), format!("5000:{BOB}"));
    let mention = running.core.answer(Ack::Accepted).await;
    assert_eq!(
        mention.message_id.as_str(),
        format!("5002:{ADA}"),
        "the unaddressed group message is skipped"
    );
    assert_eq!(mention.conversation, conversation(&format!("group:{GROUP}")));
    assert_eq!(
        mention.body,
        InboundBody::Text {
            text: "what time is it?".into()
        }
    );

    let delivered = running
        .gateway
        .deliver(&text(
            mention.conversation.clone(),
            "noon",
            Some(mention.message_id.as_str()),
        ))
        .await
        .expect("delivered");
    let sent = fake.wait_for_sent(1).await;
    assert_eq!(sent[0].group_id.as_deref(), Some(GROUP));
    assert!(sent[0].recipients.is_empty());
    assert_eq!(sent[0].message.as_deref(), Some("noon"));
    assert_eq!(
        (sent[0].quote_timestamp, sent[0].quote_author.as_deref()),
        (Some(5_002), Some(ADA))
    );
    assert_eq!(
        delivered.message_ids,
        vec![MessageId::new(sent[0].timestamp.to_string()).unwrap()],
        "the bot's own messages are known by their timestamp alone"
    );
    running.stop().await;

    // After a restart the gateway remembers nothing, yet the journaled id
    // still names the author: the answer quotes the right message.
    let restarted = SignalGateway::new(settings(&fake.unix_endpoint()));
    restarted
        .deliver(&text(
            mention.conversation.clone(),
            "still noon",
            Some(mention.message_id.as_str()),
        ))
        .await
        .expect("delivered after a restart");
    restarted
        .deliver(&text(mention.conversation.clone(), "as I said", Some("777")))
        .await
        .expect("delivered");
    let sent = fake.wait_for_sent(3).await;
    assert_eq!(
        (sent[1].quote_timestamp, sent[1].quote_author.as_deref()),
        (Some(5_002), Some(ADA))
    );
    assert_eq!(
        (sent[2].quote_timestamp, sent[2].quote_author.as_deref()),
        (Some(777), Some(ACCOUNT)),
        "a reply to one of the bot's messages quotes the bot's account"
    );
}

#[tokio::test]
async fn long_replies_are_split_and_only_the_first_part_quotes() {
    let fake = FakeSignal::start().await;
    let gateway = SignalGateway::new(settings(&fake.unix_endpoint()));
    let long = vec!["word"; 1000].join(" ");
    let delivered = gateway
        .deliver(&text(conversation(ADA), &long, Some(&format!("6000:{ADA}"))))
        .await
        .expect("delivered without a listener");
    let sent = fake.sent();
    assert!(sent.len() >= 3, "{} parts", sent.len());
    assert_eq!(delivered.message_ids.len(), sent.len());
    for (index, part) in sent.iter().enumerate() {
        assert_eq!(part.recipients, vec![ADA.to_owned()]);
        assert!(part.message.as_ref().is_some_and(|m| m.len() <= SIGNAL_TEXT_LIMIT));
        let quoted = (part.quote_timestamp, part.quote_author.as_deref());
        if index == 0 {
            assert_eq!(
                quoted,
                (Some(6_000), Some(ADA)),
                "the quote names the author the id carries"
            );
        } else {
            assert_eq!(quoted, (None, None));
        }
    }
    let rejoined: Vec<String> = sent.iter().filter_map(|part| part.message.clone()).collect();
    assert!(
        rejoined.join(" ") == long,
        "the parts, joined at the cuts, are the text"
    );
}

#[tokio::test]
async fn an_answer_and_a_prompt_go_out_rendered_with_text_styles() {
    let fake = FakeSignal::start().await;
    let gateway = SignalGateway::new(settings(&fake.unix_endpoint()));
    let markdown = "中文 😀 **bold** and `code`, see [docs](https://example.com/d)\n\n```sh\nls -la\n```";
    gateway
        .deliver(&text(conversation(ADA), markdown, None))
        .await
        .expect("delivered");
    let prompt = build::outbound(
        conversation(ADA),
        None,
        passepartout_gateway::OutboundBody::ApprovalPrompt {
            token: passepartout_gateway::ApprovalToken::new("K7PX2Q").unwrap(),
            action: "shell: rm *_old".into(),
            text: "Run `rm *_old`? Reply approve or deny.".into(),
        },
    );
    gateway.deliver(&prompt).await.expect("delivered");
    let sent = fake.sent();
    assert_eq!(
        sent[0].message.as_deref(),
        Some("中文 😀 bold and code, see docs (https://example.com/d)\n\nls -la")
    );
    // 中文 and the space are three units, the emoji two, and its space one.
    assert_eq!(sent[0].text_styles, ["6:4:BOLD", "15:4:MONOSPACE", "55:6:MONOSPACE"]);
    // The command is a code span in the prompt's Markdown: it reads as it
    // will run, `*` and `_` and all.
    assert_eq!(sent[1].message.as_deref(), Some("Run rm *_old? Reply approve or deny."));
    assert_eq!(sent[1].text_styles, ["4:8:MONOSPACE"]);
}

#[tokio::test]
async fn delivery_errors_keep_their_meaning() {
    let fake = FakeSignal::start().await;
    let gateway = SignalGateway::new(settings(&fake.tcp_endpoint()));
    let message = text(conversation(ADA), "hi", None);
    fake.fail_next("send", codes::RATE_LIMIT, "Rate limit exceeded");
    assert!(matches!(
        gateway.deliver(&message).await,
        Err(GatewayError::RateLimited { .. })
    ));
    fake.fail_next("send", codes::USER_ERROR, "Unregistered user");
    let rejected = gateway.deliver(&message).await.expect_err("rejected");
    assert!(rejected.is_permanent(), "{rejected:?}");
    fake.fail_next("send", codes::IO_ERROR, "Failed to send");
    assert!(matches!(
        gateway.deliver(&message).await,
        Err(GatewayError::Transient { .. })
    ));
    gateway.deliver(&message).await.expect("and then it works");
    let telegram = ConversationKey::new(GatewayId::new("telegram").unwrap(), ChatId::new("1").unwrap());
    assert!(
        gateway
            .deliver(&text(telegram, "hi", None))
            .await
            .unwrap_err()
            .is_permanent()
    );
}

#[tokio::test]
async fn people_not_allowed_are_told_once() {
    let fake = FakeSignal::start().await;
    let mut running = listen(settings(&fake.unix_endpoint()));
    let refused = Ack::Refused {
        reason: Refusal::NotAllowed,
    };
    fake.push_envelope(fake_signal::text_envelope(BOB, 7_000, "hi"));
    running.core.answer(refused.clone()).await;
    let sent = fake.wait_for_sent(1).await;
    assert_eq!(sent[0].recipients, vec![BOB.to_owned()]);
    assert_eq!(sent[0].message.as_deref(), Some("This assistant is private."));
    fake.push_envelope(fake_signal::text_envelope(BOB, 7_001, "hello?"));
    running.core.answer(refused).await;
    // A third message, accepted, proves the second one was handled.
    fake.push_envelope(fake_signal::text_envelope(ADA, 7_002, "hi"));
    running.core.answer(Ack::Accepted).await;
    assert_eq!(fake.sent().len(), 1, "told only once");
    running.stop().await;
}

#[tokio::test]
async fn an_empty_refusal_tells_strangers_nothing() {
    let fake = FakeSignal::start().await;
    let mut running = listen(SignalSettings {
        refusal: String::new(),
        ..settings(&fake.unix_endpoint())
    });
    fake.push_envelope(fake_signal::text_envelope(BOB, 7_100, "hi"));
    running
        .core
        .answer(Ack::Refused {
            reason: Refusal::NotAllowed,
        })
        .await;
    // The next message, accepted, proves the refused one was handled.
    fake.push_envelope(fake_signal::text_envelope(ADA, 7_101, "hi"));
    running.core.answer(Ack::Accepted).await;
    assert!(fake.sent().is_empty(), "{:?}", fake.sent());
    running.stop().await;
}

#[tokio::test]
async fn typing_goes_to_the_chat() {
    let fake = FakeSignal::start().await;
    let gateway = SignalGateway::new(settings(&fake.unix_endpoint()));
    gateway
        .typing(&conversation(&format!("group:{GROUP}")))
        .await
        .expect("typing");
    let calls = fake.wait_for_calls("sendTyping", 1).await;
    assert_eq!(calls[0].params["groupId"], GROUP);
}

#[tokio::test]
async fn multi_account_requests_name_the_account() {
    let fake = FakeSignal::start().await;
    let mut running = listen(SignalSettings {
        multi_account: true,
        ..settings(&fake.unix_endpoint())
    });
    fake.push_envelope(fake_signal::text_envelope(ADA, 8_000, "hi"));
    let got = running.core.answer(Ack::Accepted).await;
    assert_eq!(got.message_id.as_str(), format!("8000:{ADA}"));
    assert_eq!(fake.calls("subscribeReceive")[0].params["account"], ACCOUNT);
    running
        .gateway
        .deliver(&text(conversation(ADA), "hello", None))
        .await
        .expect("delivered");
    assert_eq!(fake.sent()[0].params["account"], ACCOUNT);
    running.stop().await;
}

#[tokio::test]
async fn without_a_daemon_listen_keeps_trying_and_stops_on_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = format!("unix:{}", dir.path().join("absent.sock").display());
    let running = listen(settings(&endpoint));
    let gateway = running.gateway.clone();
    tokio::time::timeout(WAIT, async {
        while gateway.health().state != HealthState::Degraded {
            tokio::task::yield_now().await;
        }
    })
    .await
    .expect("health turns degraded");
    running.stop().await;
}

#[tokio::test]
async fn shutdown_unsubscribes_so_later_messages_wait_for_the_next_run() {
    let fake = FakeSignal::start().await;
    let mut running = listen(settings(&fake.unix_endpoint()));
    // A message taken proves the session runs (the subscription was confirmed).
    fake.push_envelope(fake_signal::text_envelope(ADA, 8_999, "hi"));
    running.core.answer(Ack::Accepted).await;
    let gateway = running.gateway.clone();
    running.stop().await;
    fake.wait_for_calls("unsubscribeReceive", 1).await;
    fake.push_envelope(fake_signal::text_envelope(ADA, 9_000, "for the next run"));
    assert_eq!(fake.queued(), 1, "handed to a connection nobody reads");
    // The connection stays for the drain's deliveries.
    gateway
        .deliver(&text(conversation(ADA), "bye", None))
        .await
        .expect("delivered");
    assert_eq!(
        fake.calls("send")[0].connection,
        fake.calls("subscribeReceive")[0].connection
    );
    gateway.close().await;
    fake.wait_for_connections(0).await;
}

#[tokio::test]
async fn a_stopped_draft_is_deleted_for_everyone_and_again_after_a_failure() {
    let fake = FakeSignal::start().await;
    let gateway = SignalGateway::new(settings(&fake.tcp_endpoint()));
    let drafts = vec![
        MessageId::new("1800000000007").unwrap(),
        MessageId::new("1800000000008").unwrap(),
        // Someone else's message is never the bot's draft.
        MessageId::new(format!("5:{ADA}")).unwrap(),
    ];
    let mut stopped = build::outbound(
        conversation(ADA),
        Some("1000"),
        passepartout_gateway::OutboundBody::Stopped {
            partial: "Half an".into(),
        },
    );
    stopped.drafts = drafts;
    fake.fail_after("remoteDelete", 1, codes::IO_ERROR, "Failed to send");
    let failed = gateway.deliver(&stopped).await.expect_err("the second deletion fails");
    assert!(!failed.is_permanent(), "tried again: {failed:?}");
    let delivered = gateway.deliver(&stopped).await.expect("deleted");
    assert!(delivered.message_ids.is_empty(), "nothing sent");
    assert_eq!(
        fake.deleted(),
        [1_800_000_000_007, 1_800_000_000_007, 1_800_000_000_008],
        "each of the bot's drafts, from the first again"
    );
    let calls = fake.calls("remoteDelete");
    assert_eq!(calls[0].params["recipient"], serde_json::json!([ADA]));
    assert!(fake.sent().is_empty(), "no message instead");
}
