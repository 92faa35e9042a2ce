//! The book across restarts, under paused time: real sled files reopened,
//! a registry whose iterations are counted (and stored as the daemon's
//! are, through [`Schedules::ran`]), and clocks set to the hour.

use std::sync::Weak;
use std::time::Duration;

use async_trait::async_trait;
use passepartout_gateway::{ChatId, GatewayId};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::*;
use crate::config::StoreConfig;
use crate::engine::loops::iterate::{Iterate, IterateError, Iteration, Report};
use crate::foundation::clock::schedule::Schedule;
use crate::foundation::clock::testing::within_patience;
use crate::store::TurnCommit;
use crate::store::tests_support::open_temp;

/// 2026-11-22 12:00:00 UTC.
const NOON: u64 = 1_795_867_200_000;
const HOUR: u64 = 3_600_000;
/// Opens the store at `path` again once the last daemon let go of it:
/// other tasks get to run meanwhile (one may still hold the book), and
/// sled's threads release the files a moment after the last handle goes.
async fn reopen(path: &std::path::Path) -> Store {
    within_patience("reopening the store", async {
        loop {
            match Store::open(path, &StoreConfig::default()) {
                Ok(store) => return store,
                Err(_) => tokio::task::yield_now().await,
            }
        }
    })
    .await
}

/// Tells the test when each iteration ran, then commits it with its next
/// run, as a conversation's worker does.
struct Counting {
    ran: mpsc::UnboundedSender<(String, u64)>,
    clock: Clock,
    book: Weak<Schedules>,
}

#[async_trait]
impl Iterate for Counting {
    async fn iterate(&self, iteration: Iteration) -> Result<Report, IterateError> {
        let _ = self.ran.send((iteration.spec.name.to_string(), self.clock.now_ms()));
        // A loop without a schedule (the heartbeat's kind) stores no next run.
        if let (Some(book), Some(schedule)) = (self.book.upgrade(), iteration.spec.schedule.as_ref()) {
            let next_run = book.next_run_write(&iteration.spec.name, schedule, iteration.next_run_ms);
            let commit = TurnCommit {
                loop_record: next_run.expect("the record reads"),
                ..TurnCommit::default()
            };
            book.store
                .commit_turn_durably(&chat(), commit)
                .await
                .expect("the commit");
        }
        Ok(Report::default())
    }
}

struct Daemon {
    book: Arc<Schedules>,
    registry: Arc<Registry>,
    ran: mpsc::UnboundedReceiver<(String, u64)>,
}

/// A "daemon" on `store` whose clock reads `now_ms`.
fn daemon(store: &Store, now_ms: u64) -> Daemon {
    let clock = Clock::at(now_ms);
    let book = Arc::new(Schedules::new(store.clone(), clock, Zone::utc()));
    let (ran, receiver) = mpsc::unbounded_channel();
    let counting = Counting {
        ran,
        clock,
        book: Arc::downgrade(&book),
    };
    let registry = Arc::new(Registry::new(Arc::new(counting), 8, clock, &CancellationToken::new()));
    book.install(&registry);
    Daemon {
        book,
        registry,
        ran: receiver,
    }
}

impl Daemon {
    async fn next_run(&mut self) -> (String, u64) {
        within_patience("a run", self.ran.recv())
            .await
            .expect("the registry is gone")
    }

    /// Stops every loop, as the daemon's shutdown does, and lets go of the store.
    async fn stop(self) {
        self.registry.shutdown(Duration::from_secs(1)).await;
    }
}

/// Waits for loop `name` to stop, then for its watcher to forget it, in steps.
async fn forgotten_once_stopped(registry: &Registry, store: &Store, name: &str) {
    let mut status = registry.watch(name).unwrap();
    status.wait_for(|s| s.state == State::Stopped).await.unwrap();
    within_patience("forgetting the spent reminder", async {
        while store.loop_record(name).unwrap().is_some() {
            tokio::task::yield_now().await;
        }
    })
    .await;
}

fn chat() -> ConversationKey {
    ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("me").unwrap())
}

fn reminder(name: &str, when: &str, now_ms: u64) -> LoopSpec {
    let mut spec = LoopSpec::message(LoopName::new(name).unwrap(), "drink water");
    spec.output = Some(chat());
    spec.schedule = Some(Schedule::parse(when, &Zone::utc(), now_ms).unwrap());
    spec
}

/// A configured hourly reminder called `name`.
fn hourly(name: &str, on_heartbeat: bool) -> Configured {
    Configured {
        spec: reminder(name, "every hour", NOON),
        on_heartbeat,
    }
}

fn me() -> UserId {
    UserId::new("1000").unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_restart_resumes_the_loop_and_runs_the_missed_slots_once() {
    let (_dir, store) = open_temp();
    let path = store.path().to_path_buf();
    let mut first = daemon(&store, NOON);
    first.book.resume(Vec::new()).await.unwrap();
    first
        .book
        .add(reminder("water", "every hour", NOON), &me())
        .await
        .unwrap();
    assert_eq!(first.next_run().await, ("water".into(), NOON + HOUR));
    first.stop().await;
    drop(store);

    // Down from 13:00 to 16:30: the 14:00, 15:00 and 16:00 runs were missed.
    let store = reopen(&path).await;
    let mut second = daemon(&store, NOON + 4 * HOUR + HOUR / 2);
    let resumed = second.book.resume(Vec::new()).await.unwrap();
    assert_eq!(
        resumed,
        Resumed {
            started: 1,
            missed: 1,
            failed: 0
        }
    );
    assert_eq!(
        second.next_run().await,
        ("water".into(), NOON + 4 * HOUR + HOUR / 2),
        "once, at start"
    );
    assert_eq!(
        second.next_run().await,
        ("water".into(), NOON + 5 * HOUR),
        "then on the hour again"
    );
    second.stop().await;
    drop(store);

    // Down for ten minutes before a slot: nothing was missed.
    let store = reopen(&path).await;
    let mut third = daemon(&store, NOON + 5 * HOUR + HOUR / 2);
    let resumed = third.book.resume(Vec::new()).await.unwrap();
    assert_eq!((resumed.started, resumed.missed), (1, 0));
    assert_eq!(third.next_run().await, ("water".into(), NOON + 6 * HOUR));
    third.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_one_shot_missed_while_down_runs_once_at_start_and_is_forgotten() {
    let (_dir, store) = open_temp();
    let path = store.path().to_path_buf();
    let first = daemon(&store, NOON);
    first.book.resume(Vec::new()).await.unwrap();
    first
        .book
        .add(reminder("call-mum", "in 20 minutes", NOON), &me())
        .await
        .unwrap();
    first.stop().await;
    drop(store);

    let store = reopen(&path).await;
    let mut second = daemon(&store, NOON + HOUR);
    assert_eq!(second.book.resume(Vec::new()).await.unwrap().missed, 1);
    assert_eq!(second.next_run().await, ("call-mum".into(), NOON + HOUR));
    forgotten_once_stopped(&second.registry, &store, "call-mum").await;
    second.stop().await;
    drop(store);

    let store = reopen(&path).await;
    let third = daemon(&store, NOON + 2 * HOUR);
    assert_eq!(
        third.book.resume(Vec::new()).await.unwrap().started,
        0,
        "it does not come back"
    );
    third.stop().await;
}

#[tokio::test(start_paused = true)]
async fn configured_loops_keep_their_next_run_and_are_forgotten_once_unconfigured() {
    let (_dir, store) = open_temp();
    let path = store.path().to_path_buf();
    let configured = |name: &str| hourly(name, false);
    let mut first = daemon(&store, NOON);
    let resumed = first
        .book
        .resume(vec![configured("daily"), configured("backup-check")])
        .await;
    assert_eq!(resumed.unwrap().started, 2);
    let source: Stored = serde_json::from_slice(&store.loop_record("daily").unwrap().unwrap()).unwrap();
    assert_eq!(source.source, Source::Config);
    assert_eq!(first.next_run().await.1, NOON + HOUR);
    first.stop().await;
    drop(store);

    let store = reopen(&path).await;
    let second = daemon(&store, NOON + 3 * HOUR);
    let resumed = second.book.resume(vec![configured("daily")]).await.unwrap();
    assert_eq!((resumed.started, resumed.missed), (1, 1));
    assert!(
        store.loop_record("backup-check").unwrap().is_none(),
        "no longer configured"
    );
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_unreadable_record_is_left_alone_and_the_rest_resume() {
    let (_dir, store) = open_temp();
    store.put_loop_record("broken", b"{not json".to_vec()).await.unwrap();
    let first = daemon(&store, NOON);
    first.book.resume(Vec::new()).await.unwrap();
    first
        .book
        .add(reminder("water", "every hour", NOON), &me())
        .await
        .unwrap();
    first.stop().await;
    let second = daemon(&store, NOON);
    assert_eq!(second.book.resume(Vec::new()).await.unwrap().started, 1);
    assert!(
        store.loop_record("broken").unwrap().is_some(),
        "kept for a person to look at"
    );
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_ended_loop_is_forgotten_but_not_a_new_one_of_its_name() {
    let (_dir, store) = open_temp();
    let mut daemon = daemon(&store, NOON);
    daemon.book.resume(Vec::new()).await.unwrap();
    daemon
        .book
        .add(reminder("tea", "in 1 minute", NOON), &me())
        .await
        .unwrap();
    let old = store.loop_record("tea").unwrap().unwrap();
    assert!(
        !daemon
            .book
            .forget_ended(&LoopName::new("tea").unwrap(), NOON + 1)
            .await
            .unwrap()
    );
    assert_eq!(
        store.loop_record("tea").unwrap().unwrap(),
        old,
        "another loop's end leaves it"
    );
    assert_eq!(daemon.next_run().await.1, NOON + 60_000);
    forgotten_once_stopped(&daemon.registry, &store, "tea").await;
    assert!(
        !daemon
            .book
            .forget_ended(&LoopName::new("tea").unwrap(), NOON)
            .await
            .unwrap(),
        "gone already"
    );
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_configured_schedule_that_changed_starts_afresh_and_stays_out_of_chats_reach() {
    let (_dir, store) = open_temp();
    let configured = |when: &str| Configured {
        spec: reminder("report", when, NOON),
        on_heartbeat: false,
    };
    let first = daemon(&store, NOON);
    first.book.resume(vec![configured("every hour")]).await.unwrap();
    let refused = first.book.remove_in(&chat(), "report").await.unwrap_err();
    assert!(matches!(refused, BookError::Configured { .. }), "{refused}");
    assert!(refused.to_string().contains("config file"), "{refused}");
    first.stop().await;

    // Three hours later, with a daily schedule instead: nothing was missed.
    let mut second = daemon(&store, NOON + 3 * HOUR);
    let resumed = second.book.resume(vec![configured("daily at 18:00")]).await.unwrap();
    assert_eq!((resumed.started, resumed.missed), (1, 0));
    assert_eq!(
        second.next_run().await.1,
        NOON + 6 * HOUR,
        "at 18:00, by the new schedule"
    );
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_chat_loop_keeps_its_name_at_a_start_and_at_a_reload() {
    let (_dir, store) = open_temp();
    let path = store.path().to_path_buf();
    let configured = |name: &str| hourly(name, true);
    let first = daemon(&store, NOON);
    first.book.resume(Vec::new()).await.unwrap();
    first
        .book
        .add(reminder("stretch", "daily at 09:00", NOON), &me())
        .await
        .unwrap();
    let made = first.book.made_in_chat().unwrap();
    assert_eq!(made.len(), 1);
    assert_eq!((made[0].0.as_str(), made[0].1.clone()), ("stretch", Some(chat())));

    // A reload that brings a configured loop of its name.
    let done = first
        .book
        .reconfigure(vec![configured("stretch"), configured("report")], &BTreeSet::new())
        .await
        .unwrap();
    assert_eq!(done.taken, ["stretch"]);
    assert_eq!(done.started, ["report"]);
    let chats = |daemon: &Daemon| {
        let kept = daemon.book.stored("stretch").unwrap().unwrap();
        assert_eq!(kept.source, Source::Chat { by: me() }, "the chat's loop is kept");
        let status = daemon.registry.status("stretch").unwrap();
        assert_ne!(status.state, State::Stopped, "and runs on");
        assert_eq!(status.what.as_deref(), Some("drink water"));
        assert_eq!(
            daemon.book.heartbeat_triggered(),
            [LoopName::new("report").unwrap()],
            "the heartbeat does not trigger the chat's loop"
        );
    };
    chats(&first);
    first.stop().await;
    drop(store);

    // A start with the same configuration.
    let store = reopen(&path).await;
    let second = daemon(&store, NOON + HOUR / 2);
    let resumed = second
        .book
        .resume(vec![configured("stretch"), configured("report")])
        .await
        .unwrap();
    assert_eq!(resumed.started, 2, "the chat's loop and report");
    chats(&second);
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn an_iteration_of_a_replaced_loop_does_not_store_its_next_run_in_the_new_one() {
    let (_dir, store) = open_temp();
    let daemon = daemon(&store, NOON);
    daemon.book.resume(Vec::new()).await.unwrap();
    let now = reminder("tea", "daily at 16:00", NOON);
    daemon.book.add(now.clone(), &me()).await.unwrap();
    let name = LoopName::new("tea").unwrap();
    let before = Schedule::parse("every hour", &Zone::utc(), NOON).unwrap();
    assert!(
        daemon
            .book
            .next_run_write(&name, &before, Some(NOON + HOUR))
            .unwrap()
            .is_none(),
        "an iteration of the hourly version that ran before"
    );
    let schedule = now.schedule.as_ref().unwrap();
    assert!(
        daemon
            .book
            .next_run_write(&name, schedule, Some(NOON + 4 * HOUR))
            .unwrap()
            .is_some()
    );
    daemon.stop().await;
}

#[path = "schedules_restart_tests.rs"]
mod restart;
