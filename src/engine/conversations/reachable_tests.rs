//! A reply committed while the client was away goes out as soon as the chat
//! is reachable again, even while a later turn of the same conversation is
//! still running: through the real intake, workers, store and outbox, with a
//! model that holds one message until the test lets it go and a gateway
//! whose client comes and goes. It runs in real time: under paused time the
//! runtime is idle while sled flushes on its own threads, so the clock would
//! jump to the running turn's timeout and end it early. If the delivery
//! waited for that turn, the test would give up after its patience.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{
    Ack, ChatId, ConversationKey, Deliver, Delivered, GatewayError, GatewayId, Inbound, InboundBody, Intake, MessageId,
    Outbound, OutboundBody, Sender, UserId,
};
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;

use super::{Conversations, Outlets};
use crate::config::Config;
use crate::engine::intake::IntakeContext;
use crate::engine::pipeline::Pipeline;
use crate::engine::pipeline::cascade::Cascade;
use crate::foundation::clock::Clock;
use crate::foundation::clock::testing::within_patience;
use crate::foundation::lifecycle::Lifecycle;
use crate::model::llm::{ChatModel, ChatRequest, ChatResponse, LlmError, Role, Usage};
use crate::people::access::{Access, Roster};
use crate::safety::approvals::Approvals;
use crate::safety::skills::Skills;
use crate::safety::tools::ToolBox;

/// 2026-11-22 12:00:00 UTC.
const NOON: u64 = 1_795_867_200_000;

/// Echoes the last user text; "slow" only once the test releases it.
struct HeldModel {
    /// Told when "slow" reaches the model.
    entered: Notify,
    release: Semaphore,
    /// Whether the call for "slow" ended: answered, or given up on.
    ended: Arc<AtomicBool>,
}

impl HeldModel {
    fn new() -> Arc<Self> {
        Arc::new(Self {
            entered: Notify::new(),
            release: Semaphore::new(0),
            ended: Arc::default(),
        })
    }
}

/// Sets its flag when dropped: the call it lives in ended, however.
struct Ends(Arc<AtomicBool>);

impl Drop for Ends {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[async_trait]
impl ChatModel for HeldModel {
    fn name(&self) -> &str {
        "held"
    }
    fn endpoint(&self) -> &str {
        "http://model.test/v1"
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let text = request
            .messages
            .iter()
            .rev()
            .find(|message| message.role == Role::User)
            .map(|message| message.content.clone())
            .unwrap_or_default();
        if text == "slow" {
            let _ends = Ends(self.ended.clone());
            self.entered.notify_one();
            self.release.acquire().await.expect("never closed").forget();
        }
        Ok(ChatResponse {
            content: Some(format!("echo: {text}")),
            tool_calls: Vec::new(),
            usage: Usage::default(),
            model: "held-model".into(),
        })
    }
    async fn probe(&self) -> Result<(), LlmError> {
        Ok(())
    }
}

/// A gateway whose chat has a client only while `connected`; records what
/// it delivers.
#[derive(Default)]
struct Door {
    connected: AtomicBool,
    sent: Mutex<Vec<String>>,
    changed: Notify,
}

#[async_trait]
impl Deliver for Door {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        if !self.connected.load(Ordering::SeqCst) {
            return Err(GatewayError::NotConnected);
        }
        let text = match &message.body {
            OutboundBody::Text { text, .. } => text.clone(),
            other => panic!("not a text: {other:?}"),
        };
        let mut sent = self.sent.lock().unwrap();
        let id = MessageId::new(format!("p{}", sent.len())).unwrap();
        sent.push(text);
        self.changed.notify_waiters();
        Ok(Delivered { message_ids: vec![id] })
    }
}

impl Door {
    /// Waits until `n` messages were delivered; returns them.
    async fn until(&self, n: usize) -> Vec<String> {
        within_patience("delivery", async {
            loop {
                let changed = self.changed.notified();
                let sent = self.sent.lock().unwrap().clone();
                if sent.len() >= n {
                    return sent;
                }
                changed.await;
            }
        })
        .await
    }
}

fn chat() -> ConversationKey {
    ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("away").unwrap())
}

fn text(id: &str, text: &str) -> Inbound {
    Inbound {
        conversation: chat(),
        sender: Sender::new(UserId::new("1000").unwrap()),
        message_id: MessageId::new(id).unwrap(),
        reply_to: None,
        body: InboundBody::Text { text: text.into() },
        received_at_ms: NOON,
        overheard: false,
        by_reply_only: false,
        client: None,
    }
}

/// Conversations delivering through `door`, answering with `model`, and the
/// intake in front of them; the lifecycle their tasks are tracked by.
fn start(dir: &std::path::Path, model: Arc<HeldModel>, door: Arc<Door>) -> (Lifecycle, Intake) {
    let config = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    let store = crate::store::Store::open(&config.store_dir(), &config.store).unwrap();
    let clock = Clock::at(NOON);
    let approvals = Arc::new(Approvals::new(
        store.clone(),
        crate::gateways::policy(&config),
        clock,
        &config.approvals,
    ));
    let cascade = Arc::new(Cascade::new(
        vec![model as Arc<dyn ChatModel>],
        Duration::from_secs(3_600),
    ));
    let pipeline = Pipeline::new(
        &config,
        cascade,
        ToolBox::default(),
        Skills::new(Vec::new()),
        approvals.clone(),
        clock,
    );
    let outlets = Outlets {
        deliver: [(chat().gateway, door as Arc<dyn Deliver>)].into(),
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
    let pairing =
        crate::people::pairing::Pairing::new(&config.pairing, &config.approvals, Vec::new(), store.clone(), clock)
            .unwrap();
    let access = Arc::new(Access::from_rosters([(chat().gateway, Roster::Everyone)]));
    let linking = crate::people::linking::Linking::new(store.clone(), clock, access.clone(), 10).unwrap();
    let context = Arc::new(IntakeContext {
        conversations,
        store,
        approvals,
        access,
        pairing: Arc::new(pairing),
        linking: Arc::new(linking),
        clock,
        max_message_bytes: config.pipeline.max_message_bytes,
        lifecycle: lifecycle.clone(),
    });
    let (intake, queue) = Intake::channel(16);
    tokio::spawn(crate::engine::intake::run(context, queue, CancellationToken::new()));
    (lifecycle, intake)
}

#[tokio::test]
async fn a_committed_reply_goes_out_when_the_chat_is_reachable_while_a_later_turn_runs() {
    let dir = tempfile::tempdir().unwrap();
    let model = HeldModel::new();
    let door = Arc::new(Door::default());
    let (lifecycle, intake) = start(dir.path(), model.clone(), door.clone());

    // "hold" is answered and committed with nobody there to take it; then
    // "slow" is in the model, its turn running.
    assert_eq!(intake.submit(text("m1", "hold")).await.unwrap(), Ack::Accepted);
    assert_eq!(intake.submit(text("m2", "slow")).await.unwrap(), Ack::Accepted);
    within_patience("the second turn", model.entered.notified()).await;
    assert!(door.sent.lock().unwrap().is_empty(), "nobody was there");

    door.connected.store(true, Ordering::SeqCst);
    intake.reachable(chat()).await.unwrap();
    assert_eq!(door.until(1).await, ["echo: hold"]);
    assert!(
        !model.ended.load(Ordering::SeqCst),
        "the reply to the first waited for the running turn to end"
    );

    model.release.add_permits(1);
    assert_eq!(door.until(2).await, ["echo: hold", "echo: slow"], "in order");
    lifecycle.draining().cancel();
    lifecycle.tracker().close();
    within_patience("shutdown", lifecycle.tracker().wait()).await;
}
