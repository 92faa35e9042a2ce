//! Every notice the daemon sends, rendered for Telegram: none shows a
//! literal backtick or `**`. The texts are collected from where they are
//! defined — the approvals desk (prompts on every surface, every outcome,
//! every refusal, the standing rules), the commands, linking, `/status`, `/tools`,
//! `/model`, `/usage`, `/summary` — with values that hold Markdown's own
//! marks (`*`, `_`, `<`, `[`) wherever a value goes in.

use std::collections::HashMap;

use passepartout_gateway::{ChatId, ConversationKey, GatewayId, Inbound, InboundBody, MessageId, Sender, UserId};
use serde_json::json;

use crate::config::ApprovalsConfig;
use crate::engine::pipeline::cascade::{EntryState, ProviderHealth};
use crate::engine::pipeline::commands::{self, COMMANDS};
use crate::engine::pipeline::compaction;
use crate::engine::pipeline::model_command::{self, ProviderInfo};
use crate::engine::pipeline::perceive::Command;
use crate::engine::pipeline::tool_list::{self, ToolLine};
use crate::engine::pipeline::usage_report::{self, UsagePeriods};
use crate::foundation::clock::Clock;
use crate::foundation::notices::Surfaces;
use crate::model::signal::Origin;
use crate::safety::approvals::{Approval, Approvals, Approver, Handled, Policy, Requested, Status, answer};
use crate::safety::skills::ProposedCall;
use crate::store::tests_support::open_temp;
use crate::store::{ApprovalWrite, TurnCommit};

/// A value with Markdown's marks in it, as a name or a person's words.
const MARKED: &str = "a*b_c <d> [e](f) #g";

/// What a person sees of `text` on Telegram, and whether any markup is left.
fn assert_clean(what: &str, text: &str) {
    for part in passepartout_telegram::parts(text) {
        assert!(
            !part.text.contains('`') && !part.text.contains("**"),
            "{what}: {:?}\nfrom {text:?}",
            part.text
        );
    }
}

fn chat(gateway: &str) -> ConversationKey {
    ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new("100").unwrap())
}

fn inbound(conversation: &ConversationKey, user: &str, text: &str) -> Inbound {
    Inbound {
        conversation: conversation.clone(),
        sender: Sender::new(UserId::new(user).unwrap()),
        message_id: MessageId::new(format!("m-{text}")).unwrap(),
        reply_to: None,
        body: InboundBody::Text { text: text.into() },
        received_at_ms: 0,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}

/// The desk's replies to `text` from `user` in `conversation`.
fn replies(desk: &Approvals, conversation: &ConversationKey, user: &str, text: &str) -> Vec<String> {
    let inbound = inbound(conversation, user, text);
    let Some(parsed) = answer::parse(&inbound) else {
        return Vec::new();
    };
    match desk.answer(&inbound, parsed).unwrap() {
        Handled::Answered { replies, .. } => replies.into_iter().map(|(_, text)| text).collect(),
        Handled::NotAnAnswer => Vec::new(),
    }
}

/// A desk where user 42 approves on every gateway.
fn desk(store: &crate::store::Store) -> Approvals {
    let gateways = ["telegram", "signal", "socket", "matrix"];
    let per_gateway = gateways
        .iter()
        .map(|gateway| {
            let id = GatewayId::new(*gateway).unwrap();
            let approver = Approver {
                gateway: id.clone(),
                user: Some(UserId::new("42").unwrap()),
                anywhere: false,
            };
            (id, vec![approver])
        })
        .collect::<HashMap<_, _>>();
    let surfaces = Surfaces::new([
        (GatewayId::new("telegram").unwrap(), passepartout_telegram::SURFACE),
        (GatewayId::new("signal").unwrap(), passepartout_signal::SURFACE),
        (GatewayId::new("socket").unwrap(), passepartout_socket::SURFACE),
    ]);
    Approvals::new(
        store.clone(),
        Policy::new(per_gateway, vec![], None),
        Clock::at(1_000),
        &ApprovalsConfig::default(),
    )
    .with_surfaces(surfaces)
}

/// Commits a pending approval of `call` in `conversation`.
fn pending(desk: &Approvals, conversation: &ConversationKey, call: ProposedCall) -> Approval {
    let origin = Origin {
        conversation: conversation.clone(),
        sender: UserId::new("5").unwrap(),
        message_id: MessageId::new("ask").unwrap(),
        sender_names: Default::default(),
    };
    let requested = Requested::new(call, "approval_policy".into(), format!("it is {MARKED}"))
        .with_votes(Some(format!("2 of 3 models agree; {MARKED} disagrees")));
    let approval = desk.request(&origin, requested);
    let commit = TurnCommit {
        approvals: vec![ApprovalWrite::Create(Box::new(approval.clone()))],
        ..TurnCommit::default()
    };
    desk.store().commit_turn(conversation, commit).unwrap();
    desk.store().approval(&approval.token).unwrap().unwrap()
}

/// Calls of every kind a standing rule scopes differently.
fn calls() -> Vec<ProposedCall> {
    let call = |tool: &str, arguments| ProposedCall {
        tool: tool.into(),
        arguments,
    };
    vec![
        call("shell", json!({ "command": "df -h" })),
        call("shell", json!({ "command": "ls *_old; echo <x>" })),
        call("write_file", json!({ "path": "notes/a*b_c.md", "content": "x" })),
        call("read_file", json!({ "path": "notes/[e].md" })),
        call("read_file", json!({ "path": "top.md" })),
        call("http_get", json!({ "url": "https://example.org/a_b" })),
        call("record", json!({ "what": MARKED })),
    ]
}

#[tokio::test(start_paused = true)]
async fn every_approval_notice_renders_without_markup() {
    let (_dir, store) = open_temp();
    let desk = desk(&store);
    for gateway in ["telegram", "signal", "socket", "matrix"] {
        let here = chat(gateway);
        for call in calls() {
            let approval = pending(&desk, &here, call);
            let token = approval.token.as_str().to_owned();
            assert_clean("prompt", &desk.prompt_text(&approval));
            assert_clean("reminder", &desk.reminder_text(&approval));
            for status in [
                Status::Pending,
                Status::Approved,
                Status::Denied,
                Status::Cancelled,
                Status::Expired,
            ] {
                let decided = Approval {
                    status,
                    ..approval.clone()
                };
                assert_clean("outcome", &desk.outcome_text(&decided, None));
                assert_clean(
                    "outcome elsewhere",
                    &desk.outcome_text(&decided, Some(&chat("elsewhere"))),
                );
            }
            for (user, text) in [
                ("7", format!("approve {token}")),
                ("5", "/approvals".to_owned()),
                ("42", format!("always {token}")),
                ("42", format!("deny {token}")),
                ("42", "/rules".to_owned()),
            ] {
                for reply in replies(&desk, &here, user, &text) {
                    assert_clean(&text, &reply);
                }
            }
        }
        let told = [
            ("42", "/rules revoke 999999".to_owned()),
            ("7", "/rules revoke 1".to_owned()),
            ("5", "/cancel".to_owned()),
            ("5", "/cancel ZZZZZZZZ".to_owned()),
            ("42", "approve ZZZZZZZZ".to_owned()),
        ];
        for (user, text) in told {
            for reply in replies(&desk, &here, user, &text) {
                assert_clean(&text, &reply);
            }
        }
        for rule in store.standing_rules().unwrap() {
            let revoked = replies(&desk, &here, "42", &format!("/rules revoke {}", rule.id));
            revoked.iter().for_each(|reply| assert_clean("revoke", reply));
        }
    }
    for _ in 0..25 {
        replies(&desk, &chat("telegram"), "9", "approve ZZZZZZZZ");
    }
    for reply in replies(&desk, &chat("telegram"), "9", "approve ZZZZZZZZ") {
        assert_clean("too many", &reply);
    }
}

#[test]
fn every_command_notice_renders_without_markup() {
    assert_clean("help", &commands::help(&["telegram", "web"]));
    for (name, _) in COMMANDS {
        assert!(
            commands::help(&["telegram", "web"]).contains(&format!("/{name} ")),
            "{name}"
        );
    }
    for command in [Command::New, Command::Forget, Command::Unknown(MARKED.into())] {
        assert_clean("command", &commands::execute(&command, |_| String::new()).text);
    }
    let status = json!({
        "version": "0.1.0", "uptime_s": 100_000,
        "gateways": [{"name": "telegram", "state": "up"}],
        "providers": [{"name": MARKED, "endpoint": "http://x/v1", "state": "unhealthy", "calls": 1, "failures": 1}],
        "conversations": {"active": 1, "queued": 2},
        "approvals": {"pending": 1},
        "loops": {"running": 1, "failing": [{"name": MARKED, "error": MARKED}]},
        "store": {"outbox": 1, "error": MARKED},
    });
    assert_clean("status", &crate::operator::status::summary(&status));
    let tools = [ToolLine {
        name: "read_file".into(),
        source: format!("mcp:{MARKED}"),
        gate: "needs approval".into(),
        reason: None,
    }];
    assert_clean("tools", &tool_list::render(&tools));
    let health = [ProviderHealth {
        name: MARKED.into(),
        endpoint: "http://x/v1".into(),
        state: EntryState::CoolingDown,
        cooldown_s: Some(3),
        calls: 1,
        failures: 0,
        failure_kinds: Default::default(),
        tokens_in: 0,
        tokens_out: 0,
        last_error: None,
    }];
    let providers = [ProviderInfo {
        name: MARKED.into(),
        model: "gpt_4*".into(),
        price_in_per_mtok: 1.0,
        price_out_per_mtok: 1.0,
    }];
    for (arg, pinned) in [
        (None, Some(MARKED)),
        (None, Some("gone_*")),
        (Some(MARKED), None),
        (Some("auto"), None),
        (Some("x_*y"), None),
    ] {
        assert_clean("model", &model_command::answer(arg, &providers, &health, pinned).0);
    }
    assert_clean(
        "usage",
        &usage_report::render(&UsagePeriods::default(), &UsagePeriods::default()),
    );
    for (summary, compacting) in [(None, true), (None, false), (Some("the **summary**"), true)] {
        assert_clean("summary", &compaction::shown(summary, compacting));
    }
}

#[test]
fn linking_notices_render_clean_with_marked_names() {
    use crate::people::linking::words;
    use crate::store::{Identity, LinkedPerson, Names};
    let identity = |gateway: &str, user: &str| Identity {
        gateway: GatewayId::new(gateway).unwrap(),
        user: UserId::new(user).unwrap(),
        aliases: Vec::new(),
        conversation: chat(gateway),
        at_ms: 0,
        names: Names {
            name: Some(MARKED.into()),
            username: Some("a_b".into()),
        },
    };
    let (telegram, signal) = (identity("telegram", "42"), identity("signal", "u-1"));
    let person = LinkedPerson {
        id: 1,
        identities: vec![telegram.clone(), signal.clone()],
        created_ms: 0,
        preferred: None,
    };
    let gone = std::collections::BTreeSet::from([signal.label()]);
    let mut texts = vec![words::code_text("ABCDEFGH")];
    for (_, body) in [words::linked(&telegram, &signal), words::linked(&signal, &telegram)]
        .into_iter()
        .chain(words::unlinked_notices(&person, &gone))
    {
        match body {
            passepartout_gateway::OutboundBody::Text { text, .. } => texts.push(text),
            other => panic!("not text: {other:?}"),
        }
    }
    for text in &texts {
        assert_clean("linking", text);
    }
}
