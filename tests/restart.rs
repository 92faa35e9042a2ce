//! Restarts of the real binary: what was accepted but not answered when the
//! daemon stopped is answered after it starts again, in the order accepted,
//! before anything sent after the restart, each answer as soon as it is ready.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use passepartout_gateway::ChatId;
use passepartout_socket::Client;
use support::fake_llm::{FakeLlm, Script, last_user_text};
use support::harness::{WAIT, reply_to, send};
use support::process::{Running, socket_path, write_config};

/// A daemon in `dir` that is sent `texts` in chat `chat` while the first one
/// hangs in the model, then stopped with a one-second grace: all of them are
/// still unanswered. Returns the config file and the messages' ids.
async fn stop_with_a_backlog(dir: &Path, llm: &FakeLlm, chat: &str, texts: &[&str]) -> (PathBuf, Vec<String>) {
    let held = texts[0].to_owned();
    llm.set_responder(move |request| {
        if last_user_text(request) == held {
            Script::Delay(Duration::from_secs(60), Box::new(Script::Echo))
        } else {
            Script::Echo
        }
    });
    let config = write_config(dir, &llm.base_url());
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("shutdown_grace_s = 5", "shutdown_grace_s = 1");
    std::fs::write(&config, text).unwrap();
    let daemon = Running::start(&config).await;
    let mut client = Client::connect(socket_path(dir), Some(ChatId::new(chat).unwrap()))
        .await
        .unwrap();
    let mut ids = Vec::new();
    for text in texts {
        ids.push(send(&mut client, text).await);
    }
    llm.wait_for_requests(1, WAIT).await; // the first is in the model: its turn is running
    let exit = daemon.terminate().await;
    assert!(exit.success(), "{exit:?}");
    (config, ids)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_messages_are_answered_in_order_before_new_ones_after_a_restart() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let texts = ["first", "second", "third"];
    let (config, waiting) = stop_with_a_backlog(dir.path(), &llm, "ordered", &texts).await;

    llm.set_responder(|_| Script::Echo);
    let before = llm.requests().len();
    let daemon = Running::start(&config).await;
    let chat = Some(ChatId::new("ordered").unwrap());
    let mut client = Client::connect(socket_path(dir.path()), chat).await.unwrap();
    let new = send(&mut client, "fourth").await;
    for (id, text) in waiting.iter().zip(texts) {
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
    let dir = tempfile::tempdir().unwrap();
    let (config, ids) = stop_with_a_backlog(dir.path(), &llm, "backlog", &["hold", "slow", "last"]).await;

    // After the restart the model never answers "slow"; the answer to
    // "hold" must not wait for it (nor, then, for "last").
    llm.set_responder(|request| match last_user_text(request).as_str() {
        "slow" => Script::Hang,
        _ => Script::Echo,
    });
    let before = llm.requests().len();
    let daemon = Running::start(&config).await;
    let chat = Some(ChatId::new("backlog").unwrap());
    let mut client = Client::connect(socket_path(dir.path()), chat).await.unwrap();
    assert_eq!(reply_to(&mut client, &ids[0]).await.1, "echo: hold");
    let asked: Vec<_> = llm.requests()[before..].iter().map(last_user_text).collect();
    assert!(
        !asked.contains(&"last".to_owned()),
        "the reply to the first waited for the whole backlog: {asked:?}"
    );
    daemon.terminate().await;
}
