use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_admin::{Admin, AdminAs, AdminClosed, AdminRequest, Asker, Decision, LoopControl, Via};
use passepartout_gateway::{ChatId, ConversationKey, GatewayId, UserId};
use serde_json::json;

use super::*;
use crate::config::Config;
use crate::engine::loops::registry::LoopError;
use crate::engine::loops::schedules::{BookError, NextTime};
use crate::engine::loops::status::LoopStatus;
use crate::foundation::clock::Clock;
use crate::store::tests_support::open_temp;

/// Loops that know one loop, `standup`, which may be stopped but not run,
/// and runs already; any other name starts, to wait for a trigger.
struct OneLoop {
    stopped: Mutex<Vec<String>>,
}

#[async_trait]
impl LoopDesk for OneLoop {
    fn statuses(&self) -> Vec<LoopStatus> {
        Vec::new()
    }

    async fn stop(&self, name: &str) -> Result<(), BookError> {
        self.stopped.lock().unwrap().push(name.to_owned());
        Ok(())
    }

    async fn start(&self, name: &str) -> Result<NextTime, BookError> {
        match name {
            "standup" => Err(LoopError::AlreadyRunning { name: name.to_owned() }.into()),
            _ => Ok(NextTime::OnTrigger),
        }
    }

    fn trigger(&self, name: &str) -> Result<(), BookError> {
        Err(BookError::Configured { name: name.to_owned() })
    }
}

/// A daemon without a configuration file to read again.
struct Unreloadable;

#[async_trait]
impl Reload for Unreloadable {
    async fn reload(&self) -> Reloaded {
        Reloaded {
            message: "nothing to reload".into(),
            ..Reloaded::default()
        }
    }

    fn inspect(&self) -> super::Inspection {
        super::Inspection::default()
    }
}

struct Served {
    admin: AdminAs,
    stop: CancellationToken,
    tracker: TaskTracker,
    loops: Arc<OneLoop>,
    _dir: tempfile::TempDir,
}

fn serve() -> Served {
    serve_reloading(Arc::new(Unreloadable))
}

fn serve_reloading(reload: Arc<dyn Reload>) -> Served {
    let (dir, store) = open_temp();
    let config = Config::default();
    let approvals = Arc::new(Approvals::new(
        store.clone(),
        crate::gateways::policy(&config),
        Clock::start(),
        &config.approvals,
    ));
    let loops = Arc::new(OneLoop {
        stopped: Mutex::default(),
    });
    let tracker = TaskTracker::new();
    let components = crate::gateways::components(&config);
    let pairing = crate::gateways::pairing(&components, &config, &store, Clock::start()).unwrap();
    let access = Arc::new(crate::people::access::Access::from_rosters(
        components.iter().map(|c| (c.id(), c.talkers())),
    ));
    let linking = crate::people::linking::Linking::new(store.clone(), Clock::start(), access, 10).unwrap();
    let context = AdminContext {
        status: Arc::new(|| json!({ "version": "test" })),
        approvals,
        pairing: Arc::new(pairing),
        linking: Arc::new(linking),
        loops: loops.clone(),
        cascade: Arc::new(Cascade::new(Vec::new(), Duration::from_secs(1))),
        tools: Arc::new(|| crate::engine::pipeline::tool_list::ToolList {
            tools: crate::safety::tools::ToolBox::default(),
            skills: crate::safety::skills::Skills::new(Vec::new()),
        }),
        providers: Arc::new(Vec::new),
        reload,
        sign_in: crate::gateways::web::sign_in::SignIn::new(store.clone(), Clock::start()),
        web_keys: crate::gateways::web::keys::WebKeys::new(store.clone(), Clock::start()),
        store,
        tracker: tracker.clone(),
        nudge: Arc::new(|_| {}),
        clock: Clock::start(),
        redact: Arc::new(|text| text.replace("canary-secret", "[redacted]")),
        logs: None,
        changes: Default::default(),
        signal_link: Default::default(),
    };
    let (admin, queue) = Admin::channel(4);
    let admin = admin.asking_as(Asker {
        by: UserId::new("1000").unwrap(),
        via: Via::Terminal,
        conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("uid-1000").unwrap()),
    });
    let stop = CancellationToken::new();
    tracker.spawn(run(context, queue, stop.clone()));
    Served {
        admin,
        stop,
        tracker,
        loops,
        _dir: dir,
    }
}

#[tokio::test]
async fn each_question_gets_its_own_answer() {
    let served = serve();
    let ask = |request| served.admin.ask(request);
    let status = json!({ "version": "test" });
    assert_eq!(ask(AdminRequest::Status).await, Ok(AdminReply::Status(status.clone())));
    assert_eq!(ask(AdminRequest::Recheck).await, Ok(AdminReply::Status(status)));
    assert_eq!(
        ask(AdminRequest::Approvals { all: false }).await,
        Ok(AdminReply::Approvals(Ok(json!({ "approvals": [] }))))
    );
    assert_eq!(ask(AdminRequest::Loops).await, Ok(AdminReply::Loops(Ok(json!([])))));
    let Ok(AdminReply::Reloaded(reloaded)) = ask(AdminRequest::Reload).await else {
        panic!("a reload is answered with what it did");
    };
    assert_eq!(reloaded.message, "nothing to reload");
}

#[tokio::test]
async fn a_decision_on_an_unknown_token_is_refused() {
    let served = serve();
    let decide = AdminRequest::Decide {
        token: "K7PX2QMD".into(),
        approve: true,
        always: false,
    };
    let Ok(AdminReply::Decision(Decision { decided, message })) = served.admin.ask(decide).await else {
        panic!("a decide is answered with a decision");
    };
    assert!(!decided);
    assert!(message.contains("K7PX2QMD"), "{message}");
}

#[tokio::test]
async fn rules_are_listed_and_an_unknown_one_is_not_revoked() {
    let served = serve();
    assert_eq!(
        served.admin.ask(AdminRequest::Rules).await,
        Ok(AdminReply::Rules(Ok(json!({ "rules": [] }))))
    );
    let revoke = AdminRequest::RevokeRule { id: 9 };
    let Ok(AdminReply::RuleRevoked(answer)) = served.admin.ask(revoke).await else {
        panic!("a revoke is answered with what came of it");
    };
    assert!(!answer.revoked, "{answer:?}");
    let batch = AdminRequest::DecideAll {
        approve: true,
        from: None,
    };
    let Ok(AdminReply::Decisions(answer)) = served.admin.ask(batch).await else {
        panic!("a batch is answered with its decisions");
    };
    assert!(!answer.ok, "approving everywhere at once is refused: {answer:?}");
}

#[tokio::test]
async fn loop_control_says_what_happened_or_why_not() {
    let served = serve();
    let stopped = served
        .admin
        .ask(AdminRequest::StopLoop { name: "standup".into() })
        .await;
    assert_eq!(
        stopped,
        Ok(AdminReply::LoopControl(LoopControl {
            ok: true,
            message: "loop \"standup\" stopped".into()
        }))
    );
    assert_eq!(*served.loops.stopped.lock().unwrap(), ["standup"]);
    let refused = served
        .admin
        .ask(AdminRequest::TriggerLoop { name: "standup".into() })
        .await;
    let Ok(AdminReply::LoopControl(LoopControl { ok: false, message })) = refused else {
        panic!("expected a refusal, got {refused:?}");
    };
    assert!(message.contains("config file"), "{message}");

    let running = served
        .admin
        .ask(AdminRequest::StartLoop { name: "standup".into() })
        .await;
    assert_eq!(
        running,
        Ok(AdminReply::LoopControl(LoopControl {
            ok: false,
            message: "loop \"standup\" is already running".into()
        }))
    );
    let started = served
        .admin
        .ask(AdminRequest::StartLoop { name: "stretch".into() })
        .await;
    assert_eq!(
        started,
        Ok(AdminReply::LoopControl(LoopControl {
            ok: true,
            message: "loop \"stretch\" started; it runs when triggered".into()
        }))
    );
}

#[tokio::test]
async fn once_stopped_every_question_is_answered_closed() {
    let served = serve();
    served.stop.cancel();
    served.tracker.close();
    served.tracker.wait().await;
    assert_eq!(served.admin.ask(AdminRequest::Status).await, Err(AdminClosed));
}

/// A file whose public address holds credentials, refused with problems
/// that quote it, and a message that quotes a configured secret.
struct Quoting {
    dir: tempfile::TempDir,
}

const QUOTED: &str = "https://u:canary-pw-1234@a.example";

#[async_trait]
impl Reload for Quoting {
    async fn reload(&self) -> Reloaded {
        Reloaded {
            message: "refused: the token canary-secret is wrong".into(),
            problems: vec![format!("web.public_url {QUOTED:?} is not reachable")],
            ..Reloaded::default()
        }
    }

    fn inspect(&self) -> super::Inspection {
        let file = self.dir.path().join("config.toml");
        std::fs::write(&file, format!("[web]\npublic_url = {QUOTED:?}\n")).unwrap();
        super::Inspection {
            file: Some(file),
            ..super::Inspection::default()
        }
    }
}

#[tokio::test]
async fn a_reloads_answer_shows_no_secret_the_file_or_the_configuration_holds() {
    let served = serve_reloading(Arc::new(Quoting {
        dir: tempfile::tempdir().unwrap(),
    }));
    let Ok(AdminReply::Reloaded(reloaded)) = served.admin.ask(AdminRequest::Reload).await else {
        panic!("a reload is answered with what it did");
    };
    let shown = format!("{} {:?}", reloaded.message, reloaded.problems);
    assert!(!shown.contains("canary"), "{shown}");
    assert!(shown.contains("web.public_url"), "{shown}");
}

/// A configuration file that turns the dashboard on since the start.
struct TurnedOn;

#[async_trait]
impl Reload for TurnedOn {
    async fn reload(&self) -> Reloaded {
        Reloaded::default()
    }

    fn inspect(&self) -> super::Inspection {
        super::Inspection {
            web_enabled: true,
            ..super::Inspection::default()
        }
    }
}

#[tokio::test]
async fn a_link_asked_for_before_the_restart_that_turns_the_dashboard_on_says_so() {
    for (reload, says) in [
        (
            Arc::new(TurnedOn) as Arc<dyn Reload>,
            "the running daemon started with the web dashboard off; the configuration turns it on now",
        ),
        (
            Arc::new(Unreloadable) as Arc<dyn Reload>,
            "the web dashboard is off: set `enabled = true` under [web]",
        ),
    ] {
        let served = serve_reloading(reload);
        let Ok(AdminReply::Web(answer)) = served
            .admin
            .ask(AdminRequest::Web {
                request: passepartout_admin::WebRequest::Link,
            })
            .await
        else {
            panic!("a link is answered");
        };
        assert!(!answer.ok && answer.link.is_none(), "{answer:?}");
        assert!(answer.message.contains(says), "{}", answer.message);
        served.stop.cancel();
    }
}
