//! A gateway the core has never heard of, built here alone: a small fake
//! platform plugged into a real daemon as an extension. The daemon runs it
//! (a message in, the answer out), names it as its component says in the
//! copies a bridge between two of its chats carries, keeps the secret it
//! declares out of what it shows, and keeps that secret's file out of a
//! tool process's reach.

use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use passepartout::Extensions;
use passepartout::config::{BridgeConfig, SecretPlaces};
use passepartout::gateways::{BuildContext, BuildError, Built, Checked, GatewayComponent, Roster};
use passepartout_gateway::{
    Ack, ChatId, ConversationKey, Deliver, Delivered, GatewayError, GatewayId, Inbound, InboundBody, Intake, Listen,
    LiveSecrets, MessageId, Outbound, OutboundBody, Sender, Surface, UserId,
};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::support;
use support::fake_llm::{FakeLlm, Script, last_message, last_user_text};
use support::harness::{TestDaemon, WAIT};

/// The gateway's id, and its name as people read it.
const ID: &str = "pigeon";
const NAME: &str = "the pigeon post";
/// Its token, kept in a file it declares.
const TOKEN: &str = "pigeon-token-7730-never-shown";

type Handed = (Inbound, oneshot::Sender<Ack>);

/// The platform: what is handed in, and what was delivered.
struct Platform {
    hand: mpsc::Sender<Handed>,
    queue: tokio::sync::Mutex<mpsc::Receiver<Handed>>,
    delivered: Mutex<Vec<Outbound>>,
    arrived: Notify,
    /// The secrets the daemon offered it when it was built.
    secrets: Mutex<Option<LiveSecrets>>,
}

impl Platform {
    fn new() -> Arc<Self> {
        let (hand, queue) = mpsc::channel(16);
        Arc::new(Self {
            hand,
            queue: tokio::sync::Mutex::new(queue),
            delivered: Mutex::default(),
            arrived: Notify::new(),
            secrets: Mutex::default(),
        })
    }

    /// Hands `text` in from a person in `chat`; the daemon's answer.
    async fn say(&self, chat: &str, id: &str, text: &str) -> Ack {
        let inbound = Inbound {
            conversation: key(chat),
            sender: Sender::new(UserId::new("ada").unwrap()),
            message_id: MessageId::new(id).unwrap(),
            reply_to: None,
            body: InboundBody::Text { text: text.into() },
            received_at_ms: passepartout_gateway::unix_ms(),
            overheard: false,
            by_reply_only: false,
            client: None,
        };
        let (ack, acked) = oneshot::channel();
        self.hand.send((inbound, ack)).await.expect("the gateway listens");
        tokio::time::timeout(WAIT, acked).await.expect("acked in time").unwrap()
    }

    /// The first text delivered to `chat` that `wanted` accepts.
    async fn delivered(&self, chat: &str, wanted: impl Fn(&str) -> bool) -> String {
        let wait = async {
            loop {
                let arrived = self.arrived.notified();
                let found = lock(&self.delivered).iter().find_map(|out| match &out.body {
                    OutboundBody::Text { text, .. } if out.conversation.chat.as_str() == chat && wanted(text) => {
                        Some(text.clone())
                    }
                    _ => None,
                });
                if let Some(found) = found {
                    return found;
                }
                arrived.await;
            }
        };
        tokio::time::timeout(WAIT, wait)
            .await
            .unwrap_or_else(|_| panic!("nothing wanted delivered to {chat}: {:?}", lock(&self.delivered)))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

fn id() -> GatewayId {
    GatewayId::new(ID).unwrap()
}

fn key(chat: &str) -> ConversationKey {
    ConversationKey::new(id(), ChatId::new(chat).unwrap())
}

struct Half(Arc<Platform>);

#[async_trait]
impl Listen for Half {
    fn id(&self) -> GatewayId {
        id()
    }

    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        let mut queue = self.0.queue.lock().await;
        loop {
            let (inbound, ack) = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                handed = queue.recv() => match handed {
                    Some(handed) => handed,
                    None => return Ok(()),
                },
            };
            let answer = intake.submit(inbound).await.map_err(|_| GatewayError::Closed)?;
            let _ = ack.send(answer);
        }
    }
}

#[async_trait]
impl Deliver for Half {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        lock(&self.0.delivered).push(message.clone());
        self.0.arrived.notify_waiters();
        Ok(Delivered::default())
    }
}

/// The component: everything the core asks of the gateway, declared here.
struct Pigeon {
    platform: Arc<Platform>,
    token_file: std::path::PathBuf,
}

#[async_trait]
impl GatewayComponent for Pigeon {
    fn id(&self) -> GatewayId {
        id()
    }

    fn enabled(&self) -> bool {
        true
    }

    fn talkers(&self) -> Roster {
        Roster::Everyone
    }

    fn deciders(&self) -> Roster {
        Roster::Everyone
    }

    fn surface(&self) -> Surface {
        Surface::TEXT
    }

    fn name(&self) -> String {
        NAME.to_owned()
    }

    fn secrets(&self) -> SecretPlaces {
        SecretPlaces::default().named(None, Some(&self.token_file))
    }

    fn bridges(&self) -> bool {
        true
    }

    async fn build(&self, with: &BuildContext) -> Result<Built, BuildError> {
        *lock(&self.platform.secrets) = Some(with.secrets.clone());
        Ok(Built {
            listen: Arc::new(Half(self.platform.clone())),
            deliver: Arc::new(Half(self.platform.clone())),
            fetch: None,
            local_path: None,
            draft: None,
        })
    }

    async fn check(&self) -> Option<Checked> {
        None
    }
}

/// `please run: LINE` calls the shell with LINE, and what it returns is
/// quoted back; the rest is echoed.
fn model(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply(format!("ran: {}", last["content"].as_str().unwrap_or_default()));
    }
    let text = last_user_text(request);
    match text.strip_prefix("please run: ") {
        Some(line) => Script::ToolCall {
            name: "shell".into(),
            arguments: json!({ "command": line }).to_string(),
        },
        None => Script::Echo,
    }
}

struct Plugged {
    platform: Arc<Platform>,
    llm: FakeLlm,
    daemon: TestDaemon,
    token_file: std::path::PathBuf,
    _token_dir: tempfile::TempDir,
}

/// A daemon running the pigeon post beside its own gateways, two of its
/// chats bridged, the shell run without asking.
async fn start() -> Plugged {
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let token_dir = tempfile::tempdir().unwrap();
    let token_file = token_dir.path().join("pigeon.token");
    std::fs::write(&token_file, TOKEN).unwrap();
    let platform = Platform::new();
    let extensions = Extensions {
        gateways: vec![Box::new(Pigeon {
            platform: platform.clone(),
            token_file: token_file.clone(),
        })],
        ..Extensions::default()
    };
    let daemon = TestDaemon::start_extended(
        &llm,
        |config| {
            config.tools.require_approval = Vec::new();
            config.bridges = vec![BridgeConfig {
                name: "lofts".into(),
                chats: vec![format!("{ID}:north"), format!("{ID}:south")],
            }];
        },
        extensions,
    )
    .await;
    Plugged {
        platform,
        llm,
        daemon,
        token_file,
        _token_dir: token_dir,
    }
}

#[tokio::test]
async fn a_gateway_built_outside_the_core_runs_is_named_bridged_and_its_secret_kept() {
    let mut plugged = start().await;
    let platform = &plugged.platform;

    // Run: a message in, the answer out where it was asked.
    assert_eq!(platform.say("north", "m1", "hello loft").await, Ack::Accepted);
    platform
        .delivered("north", |text| text.contains("echo: hello loft"))
        .await;

    // Its word is one /handoff takes, as /help says.
    assert_eq!(platform.say("north", "m0", "/help").await, Ack::Accepted);
    let help = platform.delivered("north", |text| text.contains("/handoff")).await;
    assert!(help.contains(&format!("(CHANNEL: {ID}, ")), "{help}");

    // Offered to bridges and named as declared: the other chat gets the copy.
    let named = format!("({NAME}): hello loft");
    let copy = platform.delivered("south", |text| text.contains(&named)).await;
    assert!(copy.starts_with("**Someone**"), "{copy}");

    // Redacted: its secret is among those the daemon keeps out of what it shows.
    let secrets = lock(&platform.secrets).clone().expect("built");
    let shown = secrets.now().redact(&format!("the token is {TOKEN}"));
    assert!(!shown.contains(TOKEN), "{shown}");

    // Protected: a tool's process cannot read its token file.
    if crate::sandbox::landlock("a_gateway_built_outside_the_core_runs_is_named_bridged_and_its_secret_kept") {
        let line = format!("please run: cat {}", plugged.token_file.display());
        assert_eq!(platform.say("north", "m2", &line).await, Ack::Accepted);
        platform.delivered("north", |text| text.starts_with("ran: ")).await;
        let saw = plugged.llm.requests().iter().any(|r| r.to_string().contains(TOKEN));
        assert!(!saw, "the pigeon post's token reached the model");
    }
    plugged.daemon.stop().await;
}
