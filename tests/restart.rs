//! Restarts of the real binary: what was accepted but not answered when the
//! daemon stopped is answered after it starts again, in the order accepted,
//! before anything sent after the restart.

mod support;

use std::time::Duration;

use passepartout_gateway::ChatId;
use passepartout_socket::Client;
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::harness::{WAIT, reply_to, send};
use support::process::{Running, socket_path, write_config};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_messages_are_answered_in_order_before_new_ones_after_a_restart() {
    let llm = FakeLlm::start().await;
    // The first turn hangs in the model until the daemon is gone.
    llm.set_responder(|request| match last_user_text(request).as_str() {
        "first" => Script::Delay(Duration::from_secs(60), Box::new(Script::Echo)),
        _ => Script::Echo,
    });
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("shutdown_grace_s = 5", "shutdown_grace_s = 1");
    std::fs::write(&config, text).unwrap();
    let socket = socket_path(dir.path());
    let chat = || Some(ChatId::new("ordered").unwrap());

    let daemon = Running::start(&config).await;
    let mut client = Client::connect(&socket, chat()).await.unwrap();
    let mut waiting = Vec::new();
    for text in ["first", "second", "third"] {
        waiting.push(send(&mut client, text).await);
    }
    llm.wait_for_requests(1, WAIT).await; // "first" is in the model: the turn is running
    let exit = daemon.terminate().await;
    assert!(exit.success(), "{exit:?}");
    drop(client);

    llm.set_responder(|_| Script::Echo);
    let before = llm.requests().len();
    let daemon = Running::start(&config).await;
    let mut client = Client::connect(&socket, chat()).await.unwrap();
    let new = send(&mut client, "fourth").await;
    for (id, text) in waiting.iter().zip(["first", "second", "third"]) {
        assert_eq!(reply_to(&mut client, id).await.1, format!("echo: {text}"));
    }
    assert_eq!(reply_to(&mut client, &new).await.1, "echo: fourth");
    let order: Vec<_> = llm.requests()[before..].iter().map(last_user_text).collect();
    assert_eq!(
        order,
        ["first", "second", "third", "fourth"],
        "recovered messages first, in order"
    );
    daemon.terminate().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recovered_backlog_is_answered_message_by_message() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| match last_user_text(request).as_str() {
        "hold" => Script::Delay(Duration::from_secs(60), Box::new(Script::Echo)),
        _ => Script::Echo,
    });
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("shutdown_grace_s = 5", "shutdown_grace_s = 1");
    std::fs::write(&config, text).unwrap();
    let socket = socket_path(dir.path());
    let chat = || Some(ChatId::new("backlog").unwrap());

    let daemon = Running::start(&config).await;
    let mut client = Client::connect(&socket, chat()).await.unwrap();
    let hold = send(&mut client, "hold").await;
    send(&mut client, "slow").await;
    send(&mut client, "last").await;
    llm.wait_for_requests(1, WAIT).await;
    daemon.terminate().await;
    drop(client);

    // After the restart "slow" takes a while in the model; the answer to
    // "hold" must not wait for it.
    llm.set_responder(|request| match last_user_text(request).as_str() {
        "slow" => Script::Delay(Duration::from_secs(3), Box::new(Script::Echo)),
        _ => Script::Echo,
    });
    let before = llm.requests().len();
    let daemon = Running::start(&config).await;
    let mut client = Client::connect(&socket, chat()).await.unwrap();
    assert_eq!(reply_to(&mut client, &hold).await.1, "echo: hold");
    let asked: Vec<_> = llm.requests()[before..].iter().map(last_user_text).collect();
    assert!(
        !asked.contains(&"last".to_owned()),
        "the reply to the first waited for the whole backlog: {asked:?}"
    );
    daemon.terminate().await;
}
