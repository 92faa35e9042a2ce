//! Approvals end to end, the ways of answering: a real daemon, the real
//! socket client, a fake model. A call to a tool that needs approval stops
//! the turn and sends a prompt; every way of answering it — a reply,
//! `approve TOKEN`, `/approve TOKEN`, the CLI — is taken before the model,
//! decides once, and the original conversation then hears the outcome: the
//! action run exactly once, or not at all.

use crate::support;

use passepartout_gateway::ReplyKind;
use serde_json::json;
use support::approvals::*;
use support::chat::shown;
use support::fake_llm::last_user_text;
use support::harness::{WAIT, texts_of};

#[tokio::test]
async fn approve_by_reply_runs_the_action_once_and_the_model_finishes() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the milk").await;
    assert_eq!(setup.record.calls(), 0, "nothing runs before approval");
    assert_eq!(setup.llm.requests().len(), 1);

    let notice = chat.answer("yes", Some(&prompt.id)).await;
    assert_eq!(notice, format!("Approved {}: running {}.", prompt.token, prompt.action));
    let by = format!("by {}", chat.person());
    expect_ran(&setup, &mut chat, &original, &prompt, &by).await;

    // The model's transcript is whole: the call, the result saying it
    // waits for approval (and under which token), then the outcome.
    let requests = setup.llm.requests();
    let results = texts_of(&requests[1], "tool");
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(
        results[0].starts_with("not run yet: it needs a person's approval (")
            && results[0].contains(&format!("asked for as {}", prompt.token)),
        "{results:?}"
    );
    assert_eq!(setup.listed(&prompt.token).await["status"], "approved");
}

#[tokio::test]
async fn approve_by_token_text() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the eggs").await;
    // Typed by a person: any case is fine.
    let notice = chat
        .answer(&format!("approve {}", prompt.token.to_lowercase()), None)
        .await;
    assert_eq!(notice, format!("Approved {}: running {}.", prompt.token, prompt.action));
    let by = format!("by {}", chat.person());
    expect_ran(&setup, &mut chat, &original, &prompt, &by).await;
    assert_eq!(setup.listed(&prompt.token).await["decision"]["how"], "token");
}

#[tokio::test]
async fn approve_by_slash_command() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the bread").await;
    let notice = chat.answer(&format!("/approve {}", prompt.token), None).await;
    assert_eq!(notice, format!("Approved {}: running {}.", prompt.token, prompt.action));
    let by = format!("by {}", chat.person());
    expect_ran(&setup, &mut chat, &original, &prompt, &by).await;
    assert_eq!(setup.listed(&prompt.token).await["decision"]["how"], "command");
}

#[tokio::test]
async fn approve_by_cli() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the butter").await;
    let mut cli = setup.cli().await;
    let pending = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: false })
        .await
        .expect("approvals");
    assert_eq!(find(&pending, &prompt.token)["status"], "pending");

    let mut answer = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Decide {
            token: prompt.token.to_string(),
            approve: true,
            always: false,
        })
        .await
        .expect("decide");
    answer["message"] = json!(shown(answer["message"].as_str().unwrap()));
    assert_eq!(
        answer,
        json!({
            "decided": true,
            "message": format!("Approved {}: running {}.", prompt.token, prompt.action),
        })
    );
    let by = "from the terminal";
    expect_ran(&setup, &mut chat, &original, &prompt, by).await;
    let listed = setup.listed(&prompt.token).await;
    assert_eq!(listed["decision"]["how"], "cli", "{listed}");
    assert_eq!(
        cli.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: false })
            .await
            .expect("approvals")["approvals"],
        json!([]),
        "nothing is pending any more"
    );
}

#[tokio::test]
async fn deny_tells_the_model_and_nothing_runs() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the cheese").await;
    let notice = chat.answer("no", Some(&prompt.id)).await;
    assert_eq!(
        notice,
        format!("Denied {}: {} will not run.", prompt.token, prompt.action)
    );
    let (kind, text) = chat.reply(&original).await;
    let told = last_user_text(&setup.llm.wait_for_requests(2, WAIT).await[1]);
    assert!(
        told.starts_with(&format!(
            "{OUTCOME}`{}` ({}) was denied by {}, so it did not run.",
            prompt.action,
            prompt.token,
            chat.person()
        )),
        "{told}"
    );
    assert_eq!((kind, text), (ReplyKind::Answer, format!("final: {told}")));
    assert_eq!(setup.record.calls(), 0, "a denied action never runs");

    chat.sync("after the denial").await;
    assert_eq!(setup.record.calls(), 0);
    assert_eq!(setup.llm.requests().len(), 3);
    assert_eq!(setup.listed(&prompt.token).await["status"], "denied");
}

#[tokio::test]
async fn expire_reports_timed_out_and_nothing_runs() {
    let setup = Setup::start_with(|config| config.approvals.expire_after_s = 1).await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the jam").await;
    assert!(
        prompt
            .text
            .contains("Expires in 1 second; unanswered, it does not run."),
        "{prompt:?}"
    );

    // The timer tells the original message, without asking the model.
    let notice = chat.notice(&original).await;
    assert_eq!(
        notice,
        format!(
            "Timed out {} after 1 second: {} did not run.",
            prompt.token, prompt.action
        )
    );
    assert_eq!(setup.listed(&prompt.token).await["status"], "timed out");

    // Too late to approve now.
    let late = chat.answer(&format!("approve {}", prompt.token), None).await;
    assert_eq!(late, format!("Approval {} was already timed out.", prompt.token));
    chat.sync("after the timeout").await;
    assert_eq!(setup.record.calls(), 0, "an expired action never runs");
    let requests = setup.llm.requests();
    assert_eq!(requests.len(), 2, "the proposal and the sync message only");
    // The timeout is in the history the model sees next.
    let history = texts_of(&requests[1], "user").join("\n");
    // As the daemon wrote it: Markdown, which the model reads as it is.
    assert!(
        history.contains(&format!("{OUTCOME}**Timed out** `{}` after 1 second", prompt.token)),
        "{history}"
    );
}

#[tokio::test]
async fn cancel_by_the_requester() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, first) = ask_for_approval(&mut chat, "the tea").await;
    let (_, second) = ask_for_approval(&mut chat, "the coffee").await;

    // One by token, then every other one of mine here.
    let notice = chat.answer(&format!("/cancel {}", first.token), None).await;
    assert_eq!(
        notice,
        format!("Cancelled {}: {} will not run.", first.token, first.action)
    );
    let notice = chat.answer("/cancel", None).await;
    assert_eq!(
        notice,
        format!("Cancelled {}: {} will not run.", second.token, second.action)
    );
    let notice = chat.answer("/cancel", None).await;
    assert_eq!(notice, "Nothing you asked for is waiting for approval here.");

    chat.sync("after cancelling").await;
    assert_eq!(setup.record.calls(), 0, "a cancelled action never runs");
    let requests = setup.llm.requests();
    assert_eq!(requests.len(), 3, "two proposals and the sync message: {requests:#?}");
    let history = texts_of(&requests[2], "user").join("\n");
    for prompt in [&first, &second] {
        assert!(
            history.contains(&format!("The person cancelled `{}` ({})", prompt.action, prompt.token)),
            "{history}"
        );
        assert_eq!(setup.listed(&prompt.token).await["status"], "cancelled");
    }
    assert!(
        !chat.replied(&original),
        "nothing answers a cancelled request: {:#?}",
        chat.backlog
    );
}

#[tokio::test]
async fn answer_from_another_conversation_is_refused_and_stays_pending() {
    let setup = Setup::start().await;
    let mut alice = setup.chat("alice").await;
    let mut other = setup.chat("elsewhere").await;
    let (original, prompt) = ask_for_approval(&mut alice, "the honey").await;

    for answer in [
        format!("approve {}", prompt.token),
        format!("/approve {}", prompt.token),
        format!("deny {}", prompt.token),
    ] {
        let notice = other.answer(&answer, None).await;
        // Not to be decided there: told what a token that does not exist is.
        assert_eq!(
            notice,
            format!("No approval has the token {}. Check the prompt's token.", prompt.token)
        );
    }
    other.sync("in the other chat").await;
    let listed = setup.listed(&prompt.token).await;
    assert_eq!(listed["status"], "pending", "{listed}");
    assert_eq!(setup.record.calls(), 0);
    assert_eq!(setup.llm.requests().len(), 2, "the proposal and the sync message");

    // It can still be decided where it was asked for.
    alice.answer(&format!("approve {}", prompt.token), None).await;
    let by = format!("by {}", alice.person());
    let answer = alice.reply(&original).await;
    assert_ran(&setup.llm, &by, &prompt, 1, &answer);
    assert_eq!(setup.record.calls(), 1);
}

#[tokio::test]
async fn unknown_token_is_refused() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (_, prompt) = ask_for_approval(&mut chat, "the salt").await;
    let unknown = if prompt.token == "ZZZZ2222" {
        "YYYY3333"
    } else {
        "ZZZZ2222"
    };
    for answer in [format!("approve {unknown}"), format!("/deny {unknown}")] {
        let notice = chat.answer(&answer, None).await;
        assert_eq!(
            notice,
            format!("No approval has the token {unknown}. Check the prompt's token.")
        );
    }
    let decided = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Decide {
            token: unknown.to_string(),
            approve: true,
            always: false,
        })
        .await
        .expect("decide");
    assert_eq!(decided["decided"], false, "{decided}");
    assert!(decided["message"].as_str().unwrap().contains(unknown), "{decided}");
    assert_eq!(setup.listed(&prompt.token).await["status"], "pending");
    assert_eq!(setup.record.calls(), 0);
    assert_eq!(setup.llm.requests().len(), 1, "no answer reached the model");
}

#[tokio::test]
async fn replayed_token_after_decision_reports_the_first_outcome() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the pepper").await;
    chat.answer(&format!("approve {}", prompt.token), None).await;
    let by = format!("by {}", chat.person());
    expect_ran(&setup, &mut chat, &original, &prompt, &by).await;

    let first = format!("Approval {} was already approved {by}.", prompt.token);
    for replay in [
        format!("approve {}", prompt.token),
        format!("deny {}", prompt.token),
        format!("/approve {}", prompt.token),
    ] {
        assert_eq!(chat.answer(&replay, None).await, first);
    }
    assert_eq!(chat.answer("yes", Some(&prompt.id)).await, first);
    let decided = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Decide {
            token: prompt.token.to_string(),
            approve: false,
            always: false,
        })
        .await
        .expect("decide");
    assert_eq!(decided["decided"], false);
    assert_eq!(shown(decided["message"].as_str().unwrap()), first);

    chat.sync("after the replays").await;
    assert_eq!(setup.record.calls(), 1, "the action ran once, whatever came after");
    assert_eq!(setup.llm.requests().len(), 3, "no replay reached the model");
    assert_eq!(setup.listed(&prompt.token).await["status"], "approved");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_answers_racing_have_one_outcome() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let mut cli = setup.cli().await;
    let by_chat = chat.person();
    let by_cli = "from the terminal";
    let mut runs = 0;
    for round in 0..4 {
        let (original, prompt) = ask_for_approval(&mut chat, &format!("round {round}")).await;
        let before = setup.llm.requests().len();
        // The chat denies while the CLI approves, at the same moment.
        let deny = format!("deny {}", prompt.token);
        let (sent, decided) = tokio::join!(
            chat.client.send(None, deny, None),
            cli.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Decide {
                token: prompt.token.to_string(),
                approve: true,
                always: false
            })
        );
        let (deny_id, _) = sent.expect("send");
        let decided = decided.expect("decide");
        let notice = chat.notice(&deny_id).await;
        let answer = chat.reply(&original).await;
        let cli_won = decided["decided"] == true;
        eprintln!(
            "round {round}: the {} won",
            if cli_won { "CLI's approval" } else { "chat's denial" }
        );
        if cli_won {
            runs += 1;
            assert_eq!(
                shown(decided["message"].as_str().unwrap()),
                format!("Approved {}: running {}.", prompt.token, prompt.action)
            );
            assert_eq!(
                notice,
                format!("Approval {} was already approved from the terminal.", prompt.token)
            );
            assert_ran(&setup.llm, by_cli, &prompt, runs, &answer);
        } else {
            assert_eq!(
                shown(decided["message"].as_str().unwrap()),
                format!("Approval {} was already denied by {by_chat}.", prompt.token),
                "{decided}"
            );
            assert_eq!(
                notice,
                format!("Denied {}: {} will not run.", prompt.token, prompt.action)
            );
            let told = last_user_text(setup.llm.requests().last().unwrap());
            assert!(
                told.contains(&format!("`{}` ({}) was denied", prompt.action, prompt.token)),
                "{told}"
            );
        }
        assert_eq!(setup.record.calls(), runs, "round {round}: ran iff approved");
        assert_eq!(setup.llm.requests().len(), before + 1, "one outcome told, once");
        let status = setup.listed(&prompt.token).await["status"].clone();
        assert_eq!(status, if cli_won { "approved" } else { "denied" });
    }
    chat.sync("after the races").await;
    assert_eq!(setup.record.calls(), runs);
}

#[tokio::test]
async fn malformed_answers_get_clear_errors() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (_, prompt) = ask_for_approval(&mut chat, "the flour").await;
    let before = setup.llm.requests().len();

    let notice = chat.answer("approve", None).await;
    assert!(notice.starts_with("Which approval?"), "{notice}");
    let notice = chat.answer("deny", None).await;
    assert!(notice.starts_with("Which approval?"), "{notice}");
    let notice = chat.answer("approve !!", None).await;
    assert!(notice.starts_with("!! is not an approval token"), "{notice}");
    let huge = "Q".repeat(10 * 1024);
    let notice = chat.answer(&format!("approve {huge}"), None).await;
    assert!(notice.contains("is not an approval token"), "{notice}");
    assert!(
        notice.len() < 200,
        "the bad token is not echoed: {} bytes",
        notice.len()
    );

    chat.sync("after the malformed answers").await;
    let requests = setup.llm.requests();
    assert_eq!(requests.len(), before + 1, "only the sync message reached the model");
    let seen = requests.last().unwrap().to_string();
    assert!(
        !seen.contains("approve !!") && !seen.contains(&huge[..64]),
        "an answer leaked into the history: {seen}"
    );
    assert_eq!(setup.listed(&prompt.token).await["status"], "pending");
    assert_eq!(setup.record.calls(), 0);
}

#[tokio::test]
async fn the_model_receives_no_call_for_an_approval_answer() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the oats").await;
    let answer = format!("approve {}", prompt.token);
    let answer_id = chat.send(&answer).await;
    chat.notice(&answer_id).await;
    let final_answer = chat.reply(&original).await;
    assert_eq!(final_answer.0, ReplyKind::Answer);
    chat.sync("afterwards").await;

    let requests = setup.llm.requests();
    assert_eq!(requests.len(), 3, "proposal, outcome, sync: {requests:#?}");
    for (n, request) in requests.iter().enumerate() {
        let users = texts_of(request, "user");
        assert!(
            !users.iter().any(|text| text.contains(&answer)),
            "request {n} carries the answer: {users:?}"
        );
    }
    assert!(last_user_text(&requests[1]).starts_with(OUTCOME));
    // Nothing was ever answered to the approval message but its notice.
    assert_eq!(setup.record.calls(), 1);
}

#[tokio::test]
async fn approvals_all_shows_history_and_audit() {
    let setup = Setup::start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = ask_for_approval(&mut chat, "the apples").await;
    chat.answer(&format!("approve {}", prompt.token), None).await;
    let by = format!("by {}", chat.person());
    expect_ran(&setup, &mut chat, &original, &prompt, &by).await;

    let mut cli = setup.cli().await;
    assert_eq!(
        cli.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: false })
            .await
            .expect("approvals")["approvals"],
        json!([])
    );
    let listing = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: true })
        .await
        .expect("approvals");
    let listed = find(&listing, &prompt.token);
    assert_eq!(listed["status"], "approved");
    assert_eq!(listed["action"], prompt.action.as_str());
    assert_eq!(listed["conversation"], "socket:alice");
    assert_eq!(listed["requester"], chat.client.user().as_str());
    assert_eq!(listed["decision"]["by"], chat.person().as_str());
    assert_eq!(listed["decision"]["how"], "token");

    let events: Vec<&str> = listing["audit"]
        .as_array()
        .expect("an audit trail")
        .iter()
        .filter_map(|e| e["event"].as_str())
        .collect();
    let (token, action) = (&prompt.token, &prompt.action);
    let expected = [
        format!("requested {token} `{action}`"),
        format!("approved {token} `{action}` {by} (token)"),
        format!("ran `{action}` for"),
    ];
    let mut at = 0;
    for wanted in &expected {
        let found = events[at..]
            .iter()
            .position(|e| e.starts_with(wanted.as_str()))
            .unwrap_or_else(|| panic!("no {wanted:?} after event {at} in {events:#?}"));
        at += found + 1;
    }
    assert!(
        events
            .iter()
            .any(|e| e.contains(&format!("approved {token} in socket:alice"))),
        "{events:#?}"
    );
}

#[tokio::test]
async fn the_daemon_refuses_to_start_when_require_approval_names_no_tool() {
    let llm = support::fake_llm::FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let mut config = support::harness::config(dir.path(), &llm.base_url());
    config.tools.require_approval = vec!["shel".into(), "record".into()];
    let extensions = || passepartout::Extensions {
        tools: vec![std::sync::Arc::new(support::tools::Record::default())],
        ..passepartout::Extensions::default()
    };
    let Err(error) = passepartout::Daemon::start_with(config.clone(), extensions()).await else {
        panic!("a daemon started with a tool name that matches nothing");
    };
    let problem = "tools.require_approval[0]: there is no tool \"shel\"; did you mean \"shell\"?";
    assert!(
        matches!(&error, passepartout::StartError::UnknownNames { problems } if problems == &[problem]),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        format!("1 problem(s) in the configuration:\n  - {problem}")
    );
    assert!(!config.store_dir().exists(), "refused before the store was opened");
    assert!(!config.workspace().exists(), "refused before the workspace was made");

    // The extension's tool counts as registered.
    config.tools.require_approval = vec!["shell".into(), "record".into()];
    let daemon = passepartout::Daemon::start_with(config, extensions())
        .await
        .expect("the daemon starts");
    daemon.shutdown().await.expect("clean shutdown");
}
