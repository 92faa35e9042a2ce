//! In-chat control end to end through the socket: `/model` lists and pins a
//! provider (surviving a restart, and saying so when the pinned one fails),
//! `/usage` sums what the provider reported, `/new` leaves earlier turns out
//! of the model's context while the history keeps them, `/help` names them.

use crate::support;

use passepartout::config::ProviderConfig;
use passepartout::store::Store;
use passepartout_gateway::{ChatId, ConversationKey, GatewayId, ReplyKind};
use serde_json::json;
use support::fake_llm::{FakeLlm, Script};
use support::harness::{TestDaemon, ask, replies, send, texts_of};

fn backup(llm: &FakeLlm) -> ProviderConfig {
    ProviderConfig {
        name: "backup".into(),
        base_url: llm.base_url(),
        model: "backup-model".into(),
        timeout_s: 10,
        ..ProviderConfig::default()
    }
}

#[tokio::test]
async fn model_pins_a_provider_across_a_restart_and_says_when_it_fails() {
    let first = FakeLlm::start().await;
    let second = FakeLlm::start().await;
    let add_backup = |c: &mut passepartout::config::Config| c.llm.providers.push(backup(&second));
    let mut daemon = TestDaemon::start_with(&first, add_backup, Vec::new()).await;
    let mut client = daemon.client("alice").await;

    let (kind, list) = ask(&mut client, "/model").await;
    assert_eq!(kind, ReplyKind::Notice);
    assert!(list.contains("• fake — fake-model — healthy"), "{list}");
    assert!(list.contains("• backup — backup-model — healthy"), "{list}");

    let (_, unknown) = ask(&mut client, "/model bakup").await;
    assert_eq!(unknown, "No provider bakup; try /model backup (or /model auto).");
    let (_, pinned) = ask(&mut client, "/model Backup").await;
    assert!(
        pinned.starts_with("backup (backup-model) answers first here"),
        "{pinned}"
    );
    assert_eq!(ask(&mut client, "hi").await.1, "echo: hi");
    assert_eq!((first.requests().len(), second.requests().len()), (0, 1));

    // Another conversation keeps the usual order.
    let mut bob = daemon.client("bob").await;
    ask(&mut bob, "hello").await;
    assert_eq!((first.requests().len(), second.requests().len()), (1, 1));

    drop((client, bob));
    daemon.restart(Vec::new()).await;
    let mut client = daemon.client("alice").await;
    assert_eq!(ask(&mut client, "again").await.1, "echo: again");
    assert_eq!(second.requests().len(), 2, "the pin survived the restart");
    assert!(
        ask(&mut client, "/model")
            .await
            .1
            .contains("backup-model — healthy (pinned here)")
    );

    // The pinned one fails: the cascade answers, and the reply says so.
    second.push(Script::status(503));
    let id = send(&mut client, "now").await;
    let seen = replies(&mut client, &id).await;
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, ReplyKind::Notice);
    assert!(
        seen[0].1.starts_with("backup did not answer (") && seen[0].1.contains("so fake answered instead"),
        "{seen:?}"
    );
    assert_eq!(seen[1], (ReplyKind::Answer, "echo: now".to_owned()));

    let (_, auto) = ask(&mut client, "/model auto").await;
    assert_eq!(auto, "Back to the usual order here: fake, backup.");
    let before = first.requests().len();
    ask(&mut client, "later").await;
    assert_eq!(first.requests().len(), before + 1);
    daemon.stop().await;
}

#[tokio::test]
async fn usage_sums_what_the_provider_reported_here_and_in_total() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Script::reply_using("ok", 1000, 200));
    let priced = |c: &mut passepartout::config::Config| {
        c.llm.providers[0].price_in_per_mtok = 2.0;
        c.llm.providers[0].price_out_per_mtok = 10.0;
    };
    let mut daemon = TestDaemon::start_with(&llm, priced, Vec::new()).await;
    let mut alice = daemon.client("alice").await;
    let mut bob = daemon.client("bob").await;
    ask(&mut alice, "one").await;
    ask(&mut alice, "two").await;
    ask(&mut bob, "three").await;

    let (kind, usage) = ask(&mut alice, "/usage").await;
    assert_eq!(kind, ReplyKind::Notice);
    for line in [
        "This conversation today: 2000 tokens in, 400 out, about $0.0080",
        "This conversation this month: 2000 tokens in, 400 out, about $0.0080",
        "In total today: 3000 tokens in, 600 out, about $0.0120",
        "In total this month: 3000 tokens in, 600 out, about $0.0120",
    ] {
        assert!(usage.contains(line), "{line} missing from {usage}");
    }
    assert_eq!(llm.requests().len(), 3, "/usage never reaches the model");

    let status = alice
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Status)
        .await
        .unwrap();
    assert_eq!(status["usage"]["today"]["tokens_in"], 3000);
    assert_eq!(status["usage"]["month"]["tokens_out"], 600);
    let text = passepartout::operator::status::render(&status);
    assert!(
        text.contains("usage    today 3000 tokens in, 600 out, about $0.0120"),
        "{text}"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn usage_of_a_free_model_is_tokens_only() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| Script::reply_using("ok", 7, 3));
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    ask(&mut client, "one").await;
    let usage = ask(&mut client, "/usage").await.1;
    assert!(
        usage.contains("This conversation today: 7 tokens in, 3 out\n"),
        "{usage}"
    );
    assert!(!usage.contains('$'), "{usage}");
    daemon.stop().await;
}

#[tokio::test]
async fn new_leaves_earlier_turns_out_of_the_context_but_in_the_history() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    ask(&mut client, "first").await;
    ask(&mut client, "second").await;
    assert_eq!(texts_of(&llm.requests()[1], "user"), ["first", "second"]);

    let (kind, fresh) = ask(&mut client, "/new").await;
    assert_eq!(kind, ReplyKind::Notice);
    assert!(fresh.starts_with("Starting afresh"), "{fresh}");
    ask(&mut client, "third").await;
    assert_eq!(texts_of(&llm.requests()[2], "user"), ["third"]);

    // The mark is stored: after a restart the context still starts there.
    drop(client);
    daemon.restart(Vec::new()).await;
    let mut client = daemon.client("alice").await;
    ask(&mut client, "fourth").await;
    assert_eq!(texts_of(&llm.requests()[3], "user"), ["third", "fourth"]);
    daemon.stop().await;

    let store = open_when_released(&daemon.config);
    let key = ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("alice").unwrap());
    assert_eq!(store.history_len(&key), 4, "every turn stays in the history");
}

/// Opens the stopped daemon's store; sled lets go of its files a moment
/// after the last handle is dropped, so this polls within a limit.
fn open_when_released(config: &passepartout::config::Config) -> Store {
    let deadline = std::time::Instant::now() + support::harness::WAIT;
    loop {
        match Store::open(&config.store_dir(), &config.store) {
            Ok(store) => return store,
            Err(error) if std::time::Instant::now() > deadline => panic!("the store stays locked: {error}"),
            Err(_) => std::thread::yield_now(),
        }
    }
}

#[tokio::test]
async fn help_lists_every_command() {
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start(&llm).await;
    let mut client = daemon.client("alice").await;
    let help = ask(&mut client, "/help").await.1;
    for command in [
        "/model",
        "/usage",
        "/tools",
        "/new",
        "/forget",
        "/status",
        "/approvals",
        "/loops",
    ] {
        assert!(
            help.contains(&format!("\n{command} — ")),
            "{command} missing from {help}"
        );
    }
    assert!(llm.requests().is_empty());
    daemon.stop().await;
}

#[test]
fn the_telegram_menu_offers_every_command_that_takes_no_argument() {
    let menu: Vec<&str> = passepartout_telegram::menu::COMMANDS
        .iter()
        .map(|(name, _)| *name)
        .collect();
    let with_a_token = ["approve", "always", "deny", "cancel", "pair"];
    for (name, _) in passepartout::engine::pipeline::commands::COMMANDS {
        assert_eq!(
            menu.contains(name),
            !with_a_token.contains(name),
            "/{name} in the menu: {menu:?}"
        );
    }
    let help = passepartout::engine::pipeline::commands::help(&["telegram"]);
    for name in menu.iter().filter(|name| **name != "start") {
        assert!(help.contains(&format!("\n/{name} — ")), "/{name} missing from /help");
    }
}

/// Whether a process runs `sleep SECONDS` (the shell may exec it or fork it).
fn sleeping(seconds: &str) -> bool {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return false;
    };
    dir.flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .is_ok_and(|cmdline| cmdline == format!("sleep\0{seconds}\0").as_bytes())
    })
}

/// Polls the process table until `done` holds, within the harness's limit.
async fn until(mut done: impl FnMut() -> bool, what: &str) {
    let deadline = tokio::time::Instant::now() + support::harness::WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} within {:?}",
            support::harness::WAIT
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn stop_ends_a_running_shell_command_and_keeps_only_the_persons_message() {
    let llm = FakeLlm::start().await;
    llm.push(Script::ToolCall {
        name: "shell".into(),
        arguments: json!({"command": "sleep 987"}).to_string(),
    });
    let allow_sleep = |c: &mut passepartout::config::Config| {
        c.skills.rules.push(passepartout::config::RuleConfig {
            tool: "shell".into(),
            pattern: Some("sleep 987".into()),
            argument: Some("command".into()),
            verdict: passepartout::config::RuleVerdict::Allow,
            reason: None,
        });
    };
    let mut daemon = TestDaemon::start_with(&llm, allow_sleep, Vec::new()).await;
    let mut client = daemon.client("alice").await;

    let (_, idle) = ask(&mut client, "/stop").await;
    assert_eq!(idle, "Nothing was running here to stop.");

    send(&mut client, "wait a long time").await;
    until(|| sleeping("987"), "the command starts").await;
    let (kind, stopped) = ask(&mut client, "/stop").await;
    assert_eq!(kind, ReplyKind::Notice);
    assert!(
        stopped.starts_with("Stopped. Your message is kept, but no answer to it"),
        "{stopped}"
    );
    until(|| !sleeping("987"), "the command's process group is killed").await;

    // The conversation goes on with the person's message, and nothing of
    // the call that was stopped.
    assert_eq!(ask(&mut client, "hello").await.1, "echo: hello");
    let last = llm.requests().last().unwrap().clone();
    assert_eq!(
        texts_of(&last, "user"),
        ["wait a long time", "hello"],
        "the stopped turn's message is in the context"
    );
    let said = texts_of(&last, "assistant").join("\n");
    assert!(said.contains("Stopped here by the person before I answered"), "{said}");
    assert!(
        !last.to_string().contains("sleep 987"),
        "the stopped call is not in the context"
    );
    daemon.stop().await;
}

#[tokio::test]
async fn stop_keeps_the_tool_calls_its_turn_had_finished() {
    let llm = FakeLlm::start().await;
    for command in ["echo first step done", "sleep 986"] {
        llm.push(Script::ToolCall {
            name: "shell".into(),
            arguments: json!({ "command": command }).to_string(),
        });
    }
    let allow = |c: &mut passepartout::config::Config| {
        for pattern in ["echo first step done", "sleep 986"] {
            c.skills.rules.push(passepartout::config::RuleConfig {
                tool: "shell".into(),
                pattern: Some(pattern.into()),
                argument: Some("command".into()),
                verdict: passepartout::config::RuleVerdict::Allow,
                reason: None,
            });
        }
    };
    let mut daemon = TestDaemon::start_with(&llm, allow, Vec::new()).await;
    let mut client = daemon.client("alice").await;

    send(&mut client, "do two things").await;
    until(|| sleeping("986"), "the second command starts").await;
    let (_, stopped) = ask(&mut client, "/stop").await;
    assert!(
        stopped.starts_with("Stopped. The 1 tool call it had finished is kept"),
        "{stopped}"
    );
    until(|| !sleeping("986"), "the second command is killed").await;

    // The model is told what was done, and not the step that was stopped.
    assert_eq!(ask(&mut client, "what happened?").await.1, "echo: what happened?");
    let last = llm.requests().last().unwrap().clone();
    let tools = texts_of(&last, "tool");
    assert_eq!(tools.len(), 1, "{tools:?}");
    assert!(tools[0].contains("first step done"), "{tools:?}");
    let said = texts_of(&last, "assistant").join("\n");
    assert!(said.contains("Stopped here by the person"), "{said}");
    assert!(
        !last.to_string().contains("sleep 986"),
        "the stopped call is not in the context"
    );
    daemon.stop().await;
}
