//! End to end through the local socket: a real daemon, a real store in a temp
//! dir, the real OpenAI client against a fake model server on 127.0.0.1.

use crate::support;

use std::sync::Arc;

use async_trait::async_trait;
use passepartout::model::llm::ToolSpec;
use passepartout::safety::tools::{Tool, ToolContext, ToolError};
use passepartout_gateway::ReplyKind;
use passepartout_socket::ServerFrame;
use serde_json::Value;
use support::fake_llm::{FakeLlm, Script, last_message, last_user_text};
use support::harness::{TestDaemon, WAIT, ask, reply_to, send, texts_of};
use support::tools::Explode;
use tokio::sync::{Notify, Semaphore};

/// A tool that waits until the test opens the gate: lets a test hold one
/// turn in the middle without sleeping.
struct Gate {
    entered: Arc<Notify>,
    open: Arc<Semaphore>,
}

#[async_trait]
impl Tool for Gate {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "gate".into(),
            description: "waits".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(&self, _: &ToolContext, _arguments: Value) -> Result<String, ToolError> {
        self.entered.notify_one();
        self.open.acquire().await.expect("gate not closed").forget();
        Ok("gate passed".into())
    }
}

/// "slow" calls the gate, "boom" the exploding tool; a tool result is
/// answered "done: …"; anything else is echoed.
fn scripted(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply(format!("done: {}", last["content"].as_str().unwrap_or_default()));
    }
    match last_user_text(request).as_str() {
        "slow" => Script::ToolCall {
            name: "gate".into(),
            arguments: "{}".into(),
        },
        "boom" => Script::ToolCall {
            name: "explode".into(),
            arguments: "{}".into(),
        },
        _ => Script::Echo,
    }
}

struct Gated {
    entered: Arc<Notify>,
    open: Arc<Semaphore>,
}

impl Gated {
    fn new() -> Self {
        Self {
            entered: Arc::new(Notify::new()),
            open: Arc::new(Semaphore::new(0)),
        }
    }
    fn tools(&self) -> Vec<Arc<dyn Tool>> {
        vec![
            Arc::new(Gate {
                entered: self.entered.clone(),
                open: self.open.clone(),
            }),
            Arc::new(Explode),
        ]
    }
    async fn wait_entered(&self) {
        tokio::time::timeout(WAIT, self.entered.notified())
            .await
            .expect("the turn reached the gate");
    }
}

#[tokio::test]
async fn send_gets_the_models_reply() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    assert_eq!(
        ask(&mut client, "hello").await,
        (ReplyKind::Answer, "echo: hello".into())
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["model"], "fake-model");
    assert_eq!(
        texts_of(&requests[0], "system").len(),
        1,
        "a system prompt opens the request"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn history_is_carried_into_the_next_prompt() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    ask(&mut client, "my name is Ada").await;
    ask(&mut client, "what is my name?").await;
    let second = &llm.requests()[1];
    assert_eq!(texts_of(second, "user"), ["my name is Ada", "what is my name?"]);
    assert_eq!(texts_of(second, "assistant"), ["echo: my name is Ada"]);
    daemon.stop().await;
}

#[tokio::test]
async fn history_survives_a_restart() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    ask(&mut client, "remember the tulips").await;
    drop(client);
    daemon.restart(Vec::new()).await;
    let mut client = daemon.client("alice").await;
    ask(&mut client, "what did I say?").await;
    let after = llm.requests().pop().unwrap();
    assert_eq!(texts_of(&after, "user"), ["remember the tulips", "what did I say?"]);
    daemon.stop().await;
}

#[tokio::test]
async fn forget_clears_this_conversations_history_without_the_model() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut alice = daemon.client("alice").await;
    let mut bob = daemon.client("bob").await;
    ask(&mut alice, "secret one").await;
    ask(&mut bob, "bob's note").await;
    let (kind, text) = ask(&mut alice, "/forget").await;
    assert_eq!(kind, ReplyKind::Notice);
    assert!(text.contains("forgotten"), "{text}");
    assert_eq!(llm.requests().len(), 2, "/forget never reaches the model");
    ask(&mut alice, "fresh start").await;
    ask(&mut bob, "still there?").await;
    let requests = llm.requests();
    assert_eq!(texts_of(&requests[2], "user"), ["fresh start"]);
    assert_eq!(texts_of(&requests[3], "user"), ["bob's note", "still there?"]);
    daemon.stop().await;
}

#[tokio::test]
async fn help_and_unknown_commands_are_answered_without_the_model() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    assert!(ask(&mut client, "/help").await.1.contains("/forget"));
    assert!(ask(&mut client, "/status").await.1.contains("gateway  socket"));
    assert!(ask(&mut client, "/nope").await.1.contains("/help"));
    assert!(llm.requests().is_empty());
    daemon.stop().await;
}

#[tokio::test]
async fn a_slow_conversation_does_not_block_another() {
    let llm = FakeLlm::start().await;
    llm.set_responder(scripted);
    let gated = Gated::new();
    let mut daemon = TestDaemon::start_with(&llm, |_| {}, gated.tools()).await;
    let mut slow = daemon.client("slow-chat").await;
    let mut quick = daemon.client("quick-chat").await;
    let held = send(&mut slow, "slow").await;
    gated.wait_entered().await;
    assert_eq!(
        ask(&mut quick, "hi").await.1,
        "echo: hi",
        "answered while the other turn is held"
    );
    gated.open.add_permits(1);
    assert_eq!(reply_to(&mut slow, &held).await.1, "done: gate passed");
    daemon.stop().await;
}

#[tokio::test]
async fn order_is_kept_within_a_conversation() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    let mut ids = Vec::new();
    for n in 0..20 {
        ids.push(send(&mut client, &format!("message {n}")).await);
    }
    let mut answered = Vec::new();
    while answered.len() < ids.len() {
        let frame = tokio::time::timeout(WAIT, client.next_event())
            .await
            .expect("replies come")
            .unwrap();
        if let ServerFrame::Reply {
            in_reply_to: Some(id),
            text,
            ..
        } = frame
        {
            answered.push((id, text));
        }
    }
    for (n, (id, text)) in answered.iter().enumerate() {
        assert_eq!(id, &ids[n]);
        assert_eq!(text, &format!("echo: message {n}"));
    }
    let prompts: Vec<_> = llm.requests().iter().map(last_user_text).collect();
    let expected: Vec<_> = (0..20).map(|n| format!("message {n}")).collect();
    assert_eq!(prompts, expected, "the model saw them in order");
    daemon.stop().await;
}

#[tokio::test]
async fn a_panic_inside_a_turn_is_rolled_back_and_apologized_for() {
    let llm = FakeLlm::start().await;
    llm.set_responder(scripted);
    let gated = Gated::new();
    let mut daemon = TestDaemon::start_with(&llm, |_| {}, gated.tools()).await;
    let mut victim = daemon.client("victim").await;
    let mut other = daemon.client("other").await;
    let (kind, text) = ask(&mut victim, "boom").await;
    assert_eq!(kind, ReplyKind::Failure);
    assert!(text.contains("error id E"), "{text}");
    assert_eq!(ask(&mut other, "still fine?").await.1, "echo: still fine?");
    ask(&mut victim, "after").await;
    let last = llm.requests().pop().unwrap();
    assert_eq!(
        texts_of(&last, "user"),
        ["after"],
        "nothing of the failed turn was kept"
    );
    let status = daemon.daemon.as_ref().unwrap().status();
    assert_eq!(
        status["store"]["pending"], 0,
        "the failed message is not retried forever"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_reply_waits_in_the_outbox_for_a_client_that_left() {
    let llm = FakeLlm::start().await;
    llm.set_responder(scripted);
    let gated = Gated::new();
    let mut daemon = TestDaemon::start_with(&llm, |_| {}, gated.tools()).await;
    let mut client = daemon.client("leaver").await;
    let id = send(&mut client, "slow").await;
    gated.wait_entered().await;
    drop(client);
    gated.open.add_permits(1);
    let mut back = daemon.client("leaver").await;
    assert_eq!(reply_to(&mut back, &id).await.1, "done: gate passed");
    daemon.stop().await;
}

#[tokio::test]
async fn an_unreachable_model_gets_one_clear_sentence() {
    let llm = FakeLlm::start().await;
    let url = llm.base_url();
    llm.shutdown();
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    let (kind, text) = ask(&mut client, "anyone there?").await;
    assert_eq!(kind, ReplyKind::Failure);
    assert!(text.contains(&url), "names the endpoint: {text}");
    assert!(text.contains("`passepartout setup"), "says how to choose one: {text}");
    assert!(
        !text.contains("config.example.toml"),
        "no file only the source tree has: {text}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn a_message_id_sent_twice_is_answered_once() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    let (id, first) = client.send(Some("fixed-id".into()), "once", None).await.unwrap();
    assert_eq!(first, passepartout_socket::SendOutcome::Accepted);
    reply_to(&mut client, &id).await;
    let (_, second) = client.send(Some("fixed-id".into()), "once", None).await.unwrap();
    assert_eq!(second, passepartout_socket::SendOutcome::Duplicate);
    assert_eq!(llm.requests().len(), 1);
    daemon.stop().await;
}

#[tokio::test]
async fn an_oversized_message_is_refused_and_the_connection_stays_usable() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start_with(&llm, |c| c.pipeline.max_message_bytes = 100, Vec::new()).await;
    let mut client = daemon.client("alice").await;
    // The client knows the limit from the daemon's welcome and sends nothing.
    let error = client.send(None, &"x".repeat(101), None).await.unwrap_err();
    assert!(
        matches!(
            error,
            passepartout_socket::ClientError::TooLarge { limit: 100, size: 101 }
        ),
        "{error:?}"
    );
    // A client that sends it anyway is refused by the daemon, in words.
    let mut raw = tokio::net::UnixStream::connect(daemon.config.socket_path())
        .await
        .unwrap();
    let key = passepartout_socket::SocketKey::read_for(&daemon.config.socket_path()).unwrap();
    let frame = format!(
        "{{\"type\":\"hello\",\"version\":1,\"key\":\"{}\"}}\n{{\"type\":\"message\",\"id\":\"big\",\"text\":\"{}\"}}\n",
        key.as_str(),
        "x".repeat(101)
    );
    tokio::io::AsyncWriteExt::write_all(&mut raw, frame.as_bytes())
        .await
        .unwrap();
    let mut lines = tokio::io::AsyncBufReadExt::lines(tokio::io::BufReader::new(raw));
    let refusal = loop {
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let frame: serde_json::Value = serde_json::from_str(&line).unwrap();
        if frame["type"] == "error" {
            break frame;
        }
    };
    assert_eq!(refusal["code"], "too_large", "{refusal}");
    assert_eq!(
        refusal["message"],
        "messages are limited to 100 bytes; this one is 101 bytes"
    );
    assert_eq!(ask(&mut client, "small").await.1, "echo: small");
    assert!(llm.requests().iter().all(|r| last_user_text(r) == "small"));
    daemon.stop().await;
}

#[tokio::test]
async fn the_status_document_covers_every_part() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    ask(&mut client, "hi").await;
    let status = client
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status)
        .await
        .unwrap();
    assert_eq!(status["gateways"][0]["name"], "socket");
    assert_eq!(status["providers"][0]["name"], "fake");
    assert_eq!(status["providers"][0]["calls"], 1);
    assert_eq!(status["intake"]["accepted"], 1);
    assert!(status["store"]["size_bytes"].as_u64().unwrap() > 0);
    assert!(status["conversations"]["active"].as_u64().unwrap() >= 1);
    daemon.stop().await;
}

#[tokio::test]
async fn shutdown_removes_the_socket_and_a_second_daemon_is_refused_while_running() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let path = daemon.config.socket_path();
    assert!(path.exists());
    let second = passepartout::Daemon::start(daemon.config.clone()).await;
    assert!(second.is_err(), "a second daemon on the same data dir must not start");
    daemon.stop().await;
    assert!(!path.exists(), "socket file removed on shutdown");
}
