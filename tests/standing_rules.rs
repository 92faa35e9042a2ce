//! Standing rules end to end: a real daemon, the real socket client (and the
//! real binary for the CLI), a fake model. "Always" approves a call and lets
//! calls like it run in its conversation without a prompt — nowhere else,
//! never a chained command, not after it is revoked, and still after a
//! restart; a returning person decides a whole queue, each approval on its
//! own and audited.

use crate::support;

use passepartout_gateway::ReplyKind;
use passepartout_socket::ServerFrame;
use serde_json::{Value, json};
use support::approvals::*;
use support::chat::{Chat, Prompt};
use support::fake_llm::{Script, last_message, last_user_text};
use support::process::run_cli;

/// The approval tests' model, which also runs `shell: COMMAND` and, once a
/// tool has answered, says what it returned.
fn model(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply(format!("tool said: {}", last["content"].as_str().unwrap_or_default()));
    }
    match last_user_text(request).strip_prefix("shell: ") {
        Some(command) => Script::ToolCall {
            name: "shell".into(),
            arguments: json!({ "command": command }).to_string(),
        },
        None => support::approvals::model(request),
    }
}

async fn start() -> Setup {
    let setup = Setup::start().await;
    setup.llm.set_responder(model);
    setup
}

/// Sends `text` and returns the message's id and the prompt asking about it.
async fn asks(chat: &mut Chat, text: &str) -> (String, Prompt) {
    let original = chat.send(text).await;
    let prompt = chat.prompt(&original).await;
    assert_token(&prompt.token);
    (original, prompt)
}

/// Sends `text` and returns the answer, which must come without a prompt.
async fn runs_unasked(chat: &mut Chat, text: &str) -> String {
    let original = chat.send(text).await;
    let (kind, answer) = chat.reply(&original).await;
    assert_eq!(kind, ReplyKind::Answer, "{answer}");
    assert!(
        !chat.backlog_has(|f| matches!(f, ServerFrame::Approval { in_reply_to: Some(to), .. } if *to == original)),
        "{text:?} was asked about: {:#?}",
        chat.backlog
    );
    answer
}

/// The standing rule's id in a notice saying it was made.
/// The id of the rule a notice says was made (the notice rendered or not).
fn rule_id(notice: &str) -> u64 {
    let at = notice.find("Standing rule ").expect("a rule was made") + "Standing rule ".len();
    let id = notice[at..].trim_start_matches('`');
    id[..id.find(|c: char| !c.is_ascii_digit()).unwrap()].parse().unwrap()
}

fn audit_lines(listing: &Value) -> Vec<String> {
    listing["audit"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e["event"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_call_a_rule_covers_runs_without_a_prompt_and_any_other_still_asks() {
    let setup = start().await;
    let mut alice = setup.chat("alice").await;
    let (original, prompt) = asks(&mut alice, "please record the milk").await;
    assert!(
        prompt.text.contains(&format!(
            "Type always to also let {} with exactly these arguments run here without asking, for 30 days.",
            prompt.action
        )),
        "the prompt shows the rule first: {}",
        prompt.text
    );
    let notice = alice.answer("always", Some(&prompt.id)).await;
    assert!(
        notice.starts_with(&format!(
            "Approved {}: running {}. Standing rule {} lets {} with exactly these arguments run without asking in socket:alice until ",
            prompt.token,
            prompt.action,
            rule_id(&notice),
            prompt.action
        )),
        "{notice}"
    );
    let rule = rule_id(&notice);
    let (_, final_answer) = alice.reply(&original).await;
    assert!(final_answer.starts_with("final: "), "{final_answer}");
    assert_eq!(setup.record.calls(), 1);

    // The same call again: no prompt, it runs.
    let answer = runs_unasked(&mut alice, "please record the milk").await;
    assert!(answer.starts_with("tool said: recorded #2"), "{answer}");
    assert_eq!(setup.record.calls(), 2);

    // Another call of the same tool still asks, and so does the same call elsewhere.
    asks(&mut alice, "please record the eggs").await;
    let mut bob = setup.chat("bob").await;
    asks(&mut bob, "please record the milk").await;
    assert_eq!(setup.record.calls(), 2, "nothing else ran");

    let listing = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: true })
        .await
        .expect("approvals");
    let events = audit_lines(&listing);
    let user = alice.client.user().as_str().to_owned();
    assert!(
        events.iter().any(|e| e.starts_with(&format!(
            "standing rule {rule} made by socket:{user} with {}: {} with exactly these arguments in ",
            prompt.token, prompt.action
        ))),
        "{events:#?}"
    );
    assert!(
        events.iter().any(|e| e.starts_with(&format!("ran `{}`", prompt.action))
            && e.ends_with(&format!(", allowed by standing rule {rule} in socket:alice"))),
        "the audit trail names the rule: {events:#?}"
    );
}

#[tokio::test]
async fn a_shell_rule_covers_more_options_but_never_a_chained_command() {
    let setup = start().await;
    let mut chat = setup.chat("ops").await;
    let (original, prompt) = asks(&mut chat, "shell: ls").await;
    assert!(
        prompt
            .text
            .contains("Type always to also let ls and the same command with more options run here"),
        "{}",
        prompt.text
    );
    let notice = chat.answer(&format!("always {}", prompt.token), None).await;
    assert!(
        notice.contains("lets ls and the same command with more options run without asking"),
        "{notice}"
    );
    chat.reply(&original).await;

    runs_unasked(&mut chat, "shell: ls -a").await;
    for chained in [
        "shell: ls; pwd",
        "shell: ls && pwd",
        "shell: ls $(pwd)",
        "shell: ls > out",
        "shell: ls notes",
    ] {
        let (_, prompt) = asks(&mut chat, chained).await;
        assert!(
            prompt
                .text
                .contains(&format!("{} exactly as written run here", &chained["shell: ".len()..]))
                || prompt.text.contains("and the same command with more options run here"),
            "{}",
            prompt.text
        );
    }
    assert!(
        !setup.daemon.config.workspace().join("out").exists(),
        "the redirection never ran"
    );
}

#[tokio::test]
async fn the_cli_makes_lists_and_revokes_rules_and_a_revoked_rule_asks_again() {
    let setup = start().await;
    let mut chat = setup.chat("alice").await;
    let (original, prompt) = asks(&mut chat, "please record the tea").await;
    let mut cli = setup.cli().await;
    let answer = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Decide {
            token: prompt.token.to_string(),
            approve: true,
            always: true,
        })
        .await
        .expect("decide");
    assert_eq!(answer["decided"], true, "{answer}");
    let message = answer["message"].as_str().unwrap();
    let rule = rule_id(message);
    chat.reply(&original).await;
    runs_unasked(&mut chat, "please record the tea").await;

    let rules = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Rules)
        .await
        .expect("rules");
    let listed = &rules["rules"][0];
    assert_eq!(listed["id"], rule, "{rules}");
    assert_eq!(listed["conversation"], "socket:alice");
    assert_eq!(listed["tool"], "record");
    assert_eq!(listed["by"], format!("socket:{}", cli.user().as_str()));
    assert_eq!(listed["approval"], prompt.token.as_str());

    let revoked = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::RevokeRule { id: rule })
        .await
        .expect("revoke");
    assert_eq!(revoked["revoked"], true, "{revoked}");
    assert_eq!(
        cli.ask::<serde_json::Value>(passepartout_socket::AdminRequest::RevokeRule { id: rule })
            .await
            .expect("revoke")["revoked"],
        false
    );
    assert_eq!(
        cli.ask::<serde_json::Value>(passepartout_socket::AdminRequest::Rules)
            .await
            .expect("rules"),
        json!({ "rules": [] })
    );
    asks(&mut chat, "please record the tea").await;
    assert_eq!(setup.record.calls(), 2);
}

#[tokio::test]
async fn rules_survive_a_restart() {
    let mut setup = start().await;
    {
        let mut chat = setup.chat("alice").await;
        let (original, prompt) = asks(&mut chat, "please record the rice").await;
        chat.answer(&format!("/always {}", prompt.token), None).await;
        chat.reply(&original).await;
    }
    setup.restart().await;
    setup.llm.set_responder(model);
    let mut chat = setup.chat("alice").await;
    let answer = runs_unasked(&mut chat, "please record the rice").await;
    assert!(answer.starts_with("tool said: recorded #2"), "{answer}");
}

#[tokio::test]
async fn a_queue_is_approved_from_one_conversation_and_denied_everywhere() {
    let setup = start().await;
    let mut alice = setup.chat("alice").await;
    let mut bob = setup.chat("bob").await;
    let (first, p1) = asks(&mut alice, "please record one").await;
    let (second, p2) = asks(&mut alice, "please record two").await;
    let (third, p3) = asks(&mut bob, "please record three").await;
    let mut cli = setup.cli().await;

    let approved = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::DecideAll {
            approve: true,
            from: Some("socket:alice".into()),
        })
        .await
        .expect("decide_all");
    assert_eq!(approved["ok"], true, "{approved}");
    assert_eq!(approved["message"], "approved 2 of 2 waiting in socket:alice");
    for original in [&first, &second] {
        let (_, answer) = alice.reply(original).await;
        assert!(answer.contains("and it ran"), "{answer}");
    }
    assert_eq!(setup.listed(&p3.token).await["status"], "pending");

    let denied = cli
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::DecideAll {
            approve: false,
            from: None,
        })
        .await
        .expect("decide_all");
    assert_eq!(denied["message"], "denied 1 of 1 waiting anywhere", "{denied}");
    let (_, answer) = bob.reply(&third).await;
    assert!(answer.contains("denied"), "{answer}");
    assert_eq!(setup.record.calls(), 2);

    let events = audit_lines(
        &setup
            .cli()
            .await
            .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: true })
            .await
            .expect("approvals"),
    );
    let by = format!("socket:{}", cli.user().as_str());
    for (prompt, outcome) in [(&p1, "approved"), (&p2, "approved"), (&p3, "denied")] {
        let wanted = format!("{outcome} {} `{}` by {by} (cli)", prompt.token, prompt.action);
        assert_eq!(
            events.iter().filter(|e| e.starts_with(&wanted)).count(),
            1,
            "one event for {wanted}: {events:#?}"
        );
    }
}

#[tokio::test]
async fn the_binary_takes_always_rules_and_batches() {
    let setup = start().await;
    let config = setup.daemon.dir.path().join("cli.toml");
    std::fs::write(
        &config,
        format!("data_dir = {:?}\n", setup.daemon.config.data_dir.display().to_string()),
    )
    .unwrap();
    let mut chat = setup.chat("alice").await;

    let (original, prompt) = asks(&mut chat, "please record the jam").await;
    let out = run_cli(&config, &["approvals", "approve", &prompt.token, "--always"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let rule = rule_id(&stdout(&out));
    chat.reply(&original).await;

    let out = run_cli(&config, &["approvals", "rules"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = stdout(&out);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    assert!(
        listed.starts_with(&format!(
            "{rule}  socket:alice  {} with exactly these arguments  until ",
            prompt.action
        )),
        "one rule a line, its id first: {listed}"
    );

    let out = run_cli(&config, &["approvals", "approve", "--all"]).await;
    assert!(!out.status.success(), "approving everything everywhere is no option");
    let out = run_cli(&config, &["approvals", "approve", "--all-from", "nowhere"]).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("nowhere is not a conversation"),
        "{}",
        stderr(&out)
    );

    let (waiting, _) = asks(&mut chat, "please record the honey").await;
    let out = run_cli(&config, &["approvals", "approve", "--all-from", "socket:alice"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).ends_with("approved 1 of 1 waiting in socket:alice\n"),
        "{}",
        stdout(&out)
    );
    chat.reply(&waiting).await;
    asks(&mut chat, "please record the butter").await;
    let out = run_cli(&config, &["approvals", "deny", "--all"]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).ends_with("denied 1 of 1 waiting anywhere\n"),
        "{}",
        stdout(&out)
    );

    let out = run_cli(&config, &["approvals", "rules", "revoke", &rule.to_string()]).await;
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!("Revoked standing rule {rule}: ")),
        "{}",
        stdout(&out)
    );
    let out = run_cli(&config, &["approvals", "rules", "revoke", &rule.to_string()]).await;
    assert_eq!(out.status.code(), Some(1), "no such rule any more");
    let out = run_cli(&config, &["approvals", "rules"]).await;
    assert_eq!(stdout(&out), "No standing rules.\n");
}
