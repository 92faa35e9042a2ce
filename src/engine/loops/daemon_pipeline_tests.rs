//! Loops through the whole core under paused time: a real store in a temp
//! dir, the real pipeline, tools, skills and approvals, conversation workers
//! and outbox, with a scripted model and a gateway that records what it is
//! asked to deliver.
//!
//! While sled flushes on its own threads the runtime is idle, and paused
//! time jumps to the next timer: the tests wait without timers of their own
//! (`within_patience`) and write nothing to the store while a loop they
//! watch is due.

use std::sync::Mutex;

use passepartout_gateway::{
    ChatId, Delivered, GatewayError, GatewayId, Intake, Listen, MessageId, Outbound, OutboundBody, UserId,
};
use serde_json::json;
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::engine::conversations::Outlets;
use crate::engine::loops::prompt::LoopPrompt;
use crate::engine::loops::status::{LoopStatus, State, StopReason};
use crate::engine::pipeline::Pipeline;
use crate::engine::pipeline::cascade::Cascade;
use crate::foundation::clock::Clock;
use crate::foundation::clock::schedule::{Schedule, Zone};
use crate::foundation::clock::testing::within_patience;
use crate::foundation::lifecycle::Lifecycle;
use crate::model::llm::ChatModel;
use crate::model::llm::testing::{Scripted, answer, call};
use crate::model::memory::MemorySession;
use crate::safety::approvals::Approvals;
use crate::safety::skills::Skills;
use crate::safety::tools::{ToolBox, ToolContext};

/// 2026-11-22 12:00:00 UTC.
const NOON: u64 = 1_795_867_200_000;
/// Records every message it is asked to deliver, with the clock's time.
struct Recorder {
    clock: Clock,
    sent: Mutex<Vec<(u64, Outbound)>>,
    changed: Notify,
}

#[async_trait]
impl passepartout_gateway::Deliver for Recorder {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        let mut sent = self.sent.lock().unwrap();
        let id = MessageId::new(format!("p{}", sent.len())).unwrap();
        sent.push((self.clock.now_ms(), message.clone()));
        self.changed.notify_waiters();
        Ok(Delivered { message_ids: vec![id] })
    }
}

#[async_trait]
impl Listen for Recorder {
    fn id(&self) -> GatewayId {
        GatewayId::new("socket").unwrap()
    }
    async fn listen(&self, _intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        shutdown.cancelled().await;
        Ok(())
    }
}

impl Recorder {
    fn sent(&self) -> Vec<(u64, Outbound)> {
        self.sent.lock().unwrap().clone()
    }

    /// Waits until `n` messages were delivered.
    async fn until(&self, n: usize) -> Vec<(u64, Outbound)> {
        within_patience("delivery", async {
            loop {
                let changed = self.changed.notified();
                let sent = self.sent();
                if sent.len() >= n {
                    return sent;
                }
                changed.await;
            }
        })
        .await
    }
}

/// Conversations with loops running, and their parts.
struct Harness {
    _dir: tempfile::TempDir,
    store: crate::store::Store,
    approvals: Arc<Approvals>,
    clock: Clock,
    loops: Arc<Loops>,
    schedules: Arc<Schedules>,
    recorder: Arc<Recorder>,
    workspace: std::path::PathBuf,
}

impl Harness {
    async fn start(models: &[&Arc<Scripted>]) -> Harness {
        let dir = tempfile::tempdir().unwrap();
        let mut config = Config {
            data_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        config.loops.heartbeat_s = 0;
        let store = crate::store::Store::open(&config.store_dir(), &config.store).unwrap();
        let clock = Clock::at(NOON);
        let schedules = Arc::new(Schedules::new(store.clone(), clock, Zone::utc()));
        let mut tools = crate::safety::tools::builtin(
            &config,
            crate::gateways::uploads(&config),
            crate::safety::sandbox::Policy::for_tools(
                &config,
                &crate::gateways::secret_places(&config, &[]),
                None,
                crate::safety::sandbox::Support::pretend(0),
            ),
        )
        .unwrap();
        tools.extend(crate::engine::loops::tools::tools(&schedules));
        let models = models.iter().map(|m| (*m).clone() as Arc<dyn ChatModel>).collect();
        let cascade = Arc::new(Cascade::new(models, Duration::from_secs(30)));
        let approvals = Arc::new(Approvals::new(
            store.clone(),
            crate::gateways::policy(&config),
            clock,
            &config.approvals,
        ));
        let skills = Skills::from_config(&config.skills, &config.tools, &config.mcp).unwrap();
        let pipeline = Pipeline::new(&config, cascade, ToolBox::new(tools), skills, approvals.clone(), clock);
        let recorder = Arc::new(Recorder {
            clock,
            sent: Mutex::default(),
            changed: Notify::new(),
        });
        let outlets = Outlets {
            deliver: [(
                recorder.id(),
                recorder.clone() as Arc<dyn passepartout_gateway::Deliver>,
            )]
            .into(),
            ..Outlets::default()
        };
        let lifecycle = Lifecycle::new();
        let conversations = Conversations::new(
            store.clone(),
            pipeline,
            approvals.clone(),
            outlets,
            config.pipeline.clone(),
            clock,
            lifecycle.clone(),
        );
        let heartbeat = Heartbeat::new(
            approvals.clone(),
            store.clone(),
            clock,
            crate::engine::loops::heartbeat::BackupPlan::configured(&config, Vec::new()),
        );
        let loops = Loops::new(&conversations, heartbeat, &lifecycle, clock, &config, schedules.clone());
        loops.start(&config).await.unwrap();
        Harness {
            workspace: config.workspace(),
            _dir: dir,
            store,
            approvals,
            clock,
            loops,
            schedules,
            recorder,
        }
    }

    fn me(&self) -> ToolContext {
        let conversation = chat("me");
        let sender = UserId::new("1000").unwrap();
        ToolContext {
            memory: MemorySession::new(self.store.clone(), self.clock, &conversation.gateway, &sender),
            conversation,
            sender,
            loop_turn: None,
            outgoing: Default::default(),
        }
    }

    async fn tool(&self, name: &str, arguments: serde_json::Value) -> Result<String, crate::safety::tools::ToolError> {
        let tools = crate::engine::loops::tools::tools(&self.schedules);
        let tool = tools.iter().find(|t| t.spec().name == name).expect("no such tool");
        tool.call(&self.me(), arguments).await
    }

    async fn until(&self, name: &str, done: impl FnMut(&LoopStatus) -> bool) -> LoopStatus {
        let mut status = self.loops.registry().watch(name).expect("no such loop");
        let seen = within_patience(name, status.wait_for(done)).await;
        seen.expect("status gone").clone()
    }
}

fn chat(name: &str) -> ConversationKey {
    ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new(name).unwrap())
}

fn text_of(outbound: &Outbound) -> &str {
    match &outbound.body {
        OutboundBody::Text { text, .. } => text,
        other => panic!("not a text: {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn a_reminder_from_the_remind_tool_reaches_the_socket_conversation_on_time() {
    let model = Scripted::new("small", Vec::new());
    let harness = Harness::start(&[&model]).await;
    let made = harness
        .tool(
            "remind",
            json!({ "name": "stretch", "when": "in 20 minutes", "message": "Time to stretch" }),
        )
        .await
        .unwrap();
    assert!(made.contains("first run is in 20m0s"), "{made}");
    let listed = harness.tool("schedules", json!({})).await.unwrap();
    assert!(listed.contains("stretch: Time to stretch"), "{listed}");

    tokio::time::advance(Duration::from_secs(20 * 60 - 1)).await;
    assert!(harness.recorder.sent().is_empty(), "nothing before its time");
    let sent = harness.recorder.until(1).await;
    let (at, reminder) = &sent[0];
    assert_eq!(text_of(reminder), "Time to stretch");
    assert_eq!(reminder.conversation, chat("me"));
    assert!(*at >= NOON + 20 * 60 * 1000, "delivered at {at}");
    let done = harness.until("stretch", |s| s.state == State::Stopped).await;
    assert_eq!(done.stop_reason, Some(StopReason::Spent));
    assert_eq!(
        done.recent[0].started_ms,
        NOON + 20 * 60 * 1000,
        "it ran at its time exactly"
    );
    assert!(model.seen().is_empty(), "a reminder needs no model");
    let history: Vec<crate::engine::pipeline::TurnRecord> = harness.store.recent_turns(&chat("me"), 10).unwrap();
    let said = history
        .iter()
        .flat_map(|r| &r.messages)
        .any(|m| m.content == "Time to stretch");
    assert!(said, "kept in the history: {history:?}");
    let dated = history.last().and_then(|record| record.at_ms);
    assert!(
        dated.is_some_and(|at| at >= NOON + 20 * 60 * 1000),
        "dated by the clock when kept: {dated:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn stop_reminding_me_cancels_only_this_conversations_reminder() {
    let harness = Harness::start(&[&Scripted::new("small", Vec::new())]).await;
    // Made first: a store flush lets paused time jump to the next timer, so
    // "water" must not be waiting while another loop is written.
    let mut elsewhere = LoopSpec::message(LoopName::new("theirs").unwrap(), "hi");
    elsewhere.output = Some(chat("someone-else"));
    elsewhere.schedule = Some(Schedule::parse("every hour", &Zone::utc(), NOON).unwrap());
    harness
        .schedules
        .add(elsewhere, &UserId::new("2").unwrap())
        .await
        .unwrap();
    let arguments = json!({ "name": "water", "when": "every 2 hours", "message": "Drink" });
    harness.tool("remind", arguments.clone()).await.unwrap();
    let again = harness.tool("remind", arguments).await.unwrap_err();
    assert!(again.to_string().contains("already a loop called \"water\""), "{again}");
    let refused = harness
        .tool("cancel_schedule", json!({ "name": "theirs" }))
        .await
        .unwrap_err();
    assert!(refused.to_string().contains("another conversation"), "{refused}");
    assert!(!harness.tool("schedules", json!({})).await.unwrap().contains("theirs"));

    let cancelled = harness
        .tool("cancel_schedule", json!({ "name": "water" }))
        .await
        .unwrap();
    assert!(cancelled.contains("will not run again"), "{cancelled}");
    let stopped = harness.until("water", |s| s.state == State::Stopped).await;
    assert_eq!(stopped.stop_reason, Some(StopReason::Requested));
    assert!(harness.store.loop_record("water").unwrap().is_none(), "forgotten");
    assert!(harness.store.loop_record("theirs").unwrap().is_some());
    tokio::time::advance(Duration::from_secs(3 * 3600)).await;
    assert!(
        harness
            .recorder
            .sent()
            .iter()
            .all(|(_, o)| o.conversation != chat("me"))
    );
    let bad = harness
        .tool("remind", json!({ "name": "x", "when": "sometime", "message": "m" }))
        .await
        .unwrap_err();
    assert!(
        bad.to_string().contains("Forms:"),
        "the model is told the grammar: {bad}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_loop_task_that_calls_shell_asks_for_approval_instead_of_running_it() {
    let model = Scripted::new("small", Vec::new());
    let harness = Harness::start(&[&model]).await;
    let marker = harness.workspace.join("ran");
    let command = format!("touch {}", marker.display());
    model.push(Ok(answer(
        "small-model",
        None,
        vec![call("shell", json!({ "command": command }))],
    )));
    let mut spec = LoopSpec::task(LoopName::new("tidy").unwrap(), "Tidy the workspace.");
    spec.output = Some(chat("me"));
    spec.schedule = Some(Schedule::parse("in 5 minutes", &Zone::utc(), NOON).unwrap());
    harness
        .schedules
        .add(spec, &UserId::new("1000").unwrap())
        .await
        .unwrap();

    let sent = harness.recorder.until(1).await;
    let prompt = sent.iter().find_map(|(_, o)| match &o.body {
        OutboundBody::ApprovalPrompt { action, .. } => Some(action.clone()),
        _ => None,
    });
    assert!(prompt.is_some_and(|a| a.contains("touch")), "{sent:?}");
    assert!(!marker.exists(), "the shell did not run");
    let pending = harness.approvals.pending_count().unwrap();
    assert_eq!(pending, 1);
    let status = harness.until("tidy", |s| s.iterations == 1).await;
    assert_eq!((status.tokens_in, status.tokens_out), (30, 5));
    assert_eq!(status.recent[0].model.as_deref(), Some("small-model"));
    let request = &model.seen()[0];
    let asked = request.messages.last().unwrap().content.clone();
    assert!(
        asked.contains("Background loop \"tidy\"") && asked.contains("Tidy the workspace."),
        "{asked}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_supervisor_iteration_uses_its_model_and_review_and_may_choose_the_sleep() {
    let small = Scripted::new("small", Vec::new());
    let big = Scripted::new(
        "big",
        vec![Ok(answer(
            "big-model",
            None,
            vec![call("set_next_sleep", json!({ "seconds": 99_999 }))],
        ))],
    );
    let harness = Harness::start(&[&small, &big]).await;
    let mut spec = LoopSpec::task(LoopName::new("watch").unwrap(), "Look at the logs.");
    spec.output = Some(chat("me"));
    spec.supervisor = Some(crate::engine::loops::spec::Supervisor {
        probability: 1.0,
        model: "big".into(),
        review: "Check the last answers for mistakes.".into(),
    });
    harness
        .schedules
        .add(spec, &UserId::new("1000").unwrap())
        .await
        .unwrap();
    let status = harness.until("watch", |s| s.iterations == 1).await;
    let record = &status.recent[0];
    assert!(record.supervisor, "{status:?}");
    assert_eq!(record.model.as_deref(), Some("big-model"));
    assert_eq!(
        status.sleep_ms,
        5 * 60 * 1000,
        "the choice, clamped to the longest sleep"
    );
    assert!(small.seen().is_empty(), "the usual model was not asked");
    let asked = big.seen()[0].messages.last().unwrap().content.clone();
    assert!(asked.contains("[Supervisor review]\nCheck the last answers"), "{asked}");
    let offered: Vec<_> = big.seen()[0].tools.iter().map(|t| t.name.clone()).collect();
    assert!(offered.contains(&"set_next_sleep".to_string()), "{offered:?}");
    let reply = harness.recorder.until(1).await;
    assert_eq!(text_of(&reply[0].1), "ok from big");
}

#[tokio::test(start_paused = true)]
async fn a_loop_may_not_change_the_schedules_even_after_an_approval() {
    let harness = Harness::start(&[&Scripted::new("small", Vec::new())]).await;
    let tools = crate::engine::loops::tools::tools(&harness.schedules);
    let mut from_a_loop = harness.me();
    from_a_loop.sender = LoopPrompt::sender(&LoopName::new("tidy").unwrap());
    for (name, arguments) in [
        (
            "remind",
            json!({ "name": "more", "when": "every hour", "message": "m" }),
        ),
        ("schedule", json!({ "name": "more", "when": "every hour", "task": "t" })),
        ("cancel_schedule", json!({ "name": "more" })),
    ] {
        let tool = tools.iter().find(|t| t.spec().name == name).unwrap();
        let refused = tool.call(&from_a_loop, arguments).await.unwrap_err();
        assert!(
            refused.to_string().contains("a background loop cannot"),
            "{name}: {refused}"
        );
    }
    assert!(harness.store.loop_records().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_recurring_reminder_keeps_its_next_run_with_its_delivery() {
    let harness = Harness::start(&[&Scripted::new("small", Vec::new())]).await;
    let arguments = json!({ "name": "water", "when": "every hour", "message": "Drink" });
    harness.tool("remind", arguments).await.unwrap();
    let next_run = || {
        let record = harness.store.loop_record("water").unwrap().unwrap();
        serde_json::from_slice::<serde_json::Value>(&record).unwrap()["next_run_ms"].as_u64()
    };
    assert_eq!(next_run(), Some(NOON + 3_600_000));
    let status = harness.until("water", |s| s.iterations == 1).await;
    assert_eq!(status.recent[0].started_ms, NOON + 3_600_000);
    assert_eq!(next_run(), Some(NOON + 7_200_000), "stored with the reminder's commit");
    harness.loops.registry().stop("water").unwrap();
}
