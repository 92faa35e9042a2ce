//! Loops stopped on request and started again, under paused time: each
//! runs at its next time and not at once, one start of two wins, a
//! started loop is kept again (and one left stopped is not), and loops that
//! ended by themselves or were never there are refused by name.

use super::*;
use crate::engine::loops::schedules::NextTime;
use crate::engine::loops::sleep::SleepBounds;

const MINUTE: u64 = 60_000;

/// Lets every task that can run, run: what a loop would do "at once" has then been done.
async fn settle() {
    for _ in 0..100 {
        tokio::task::yield_now().await;
    }
}

/// Waits for loop `name` to say it stopped.
async fn stopped(registry: &Registry, name: &str) {
    let mut status = registry.watch(name).unwrap();
    within_patience("the stop", status.wait_for(|s| s.state == State::Stopped))
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_stopped_loop_started_again_runs_at_its_next_slot_and_only_once() {
    let (_dir, store) = open_temp();
    let mut daemon = daemon(&store, NOON);
    daemon.book.resume(Vec::new()).await.unwrap();
    daemon
        .book
        .add(reminder("water", "every hour", NOON), &me())
        .await
        .unwrap();
    assert_eq!(daemon.next_run().await, ("water".into(), NOON + HOUR));

    daemon.book.remove("water").await.unwrap();
    stopped(&daemon.registry, "water").await;
    assert!(store.loop_record("water").unwrap().is_none(), "a stop forgets it");
    tokio::time::advance(Duration::from_millis(10 * MINUTE)).await;

    // Two starts at once: one starts it, the other finds it running.
    let (one, two) = tokio::join!(daemon.book.start_again("water"), daemon.book.start_again("water"));
    let (started, refused) = match (one, two) {
        (Ok(next), Err(refused)) | (Err(refused), Ok(next)) => (next, refused),
        other => panic!("one start of two wins: {other:?}"),
    };
    assert_eq!(started, NextTime::At(NOON + 2 * HOUR));
    assert_eq!(refused.to_string(), "loop \"water\" is already running");
    assert_eq!(daemon.registry.running_count(), 1);
    let kept: Stored = serde_json::from_slice(&store.loop_record("water").unwrap().unwrap()).unwrap();
    assert_eq!(kept.next_run_ms, Some(NOON + 2 * HOUR), "kept again, with its next run");
    assert_eq!(kept.source, Source::Chat { by: me() });

    settle().await;
    assert!(daemon.ran.try_recv().is_err(), "it does not run at once");
    assert_eq!(daemon.next_run().await, ("water".into(), NOON + 2 * HOUR));
    settle().await;
    assert!(daemon.ran.try_recv().is_err(), "one run a slot: never two loops of it");
    assert_eq!(daemon.next_run().await, ("water".into(), NOON + 3 * HOUR));

    let again = daemon.book.start_again("water").await.unwrap_err();
    assert_eq!(again.to_string(), "loop \"water\" is already running");
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_timer_loop_started_again_waits_one_sleep() {
    let (_dir, store) = open_temp();
    let mut daemon = daemon(&store, NOON);
    let mut spec = LoopSpec::handler(LoopName::new("beat").unwrap(), "heartbeat");
    let minute = Duration::from_millis(MINUTE);
    spec.sleep = SleepBounds {
        min: minute,
        max: minute,
        default: minute,
    };
    spec.jitter = 0.0;
    daemon.registry.spawn(spec).unwrap();
    assert_eq!(
        daemon.next_run().await,
        ("beat".into(), NOON),
        "at once, the first time"
    );

    daemon.book.remove("beat").await.unwrap();
    stopped(&daemon.registry, "beat").await;
    tokio::time::advance(Duration::from_millis(5 * MINUTE)).await;
    let next = daemon.book.start_again("beat").await.unwrap();
    assert_eq!(next, NextTime::At(NOON + 6 * MINUTE));
    assert_eq!(daemon.next_run().await, ("beat".into(), NOON + 6 * MINUTE));
    assert!(
        store.loop_record("beat").unwrap().is_none(),
        "never stored, not stored now"
    );
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_loop_started_again_resumes_after_a_restart_and_a_stopped_one_does_not() {
    let (_dir, store) = open_temp();
    let path = store.path().to_path_buf();
    let first = daemon(&store, NOON);
    first.book.resume(Vec::new()).await.unwrap();
    for name in ["water", "tea"] {
        first.book.add(reminder(name, "every hour", NOON), &me()).await.unwrap();
        first.book.remove(name).await.unwrap();
        stopped(&first.registry, name).await;
    }
    first.book.start_again("water").await.unwrap();
    first.stop().await;
    drop(store);

    let store = reopen(&path).await;
    let mut second = daemon(&store, NOON + HOUR / 2);
    assert_eq!(second.book.resume(Vec::new()).await.unwrap().started, 1);
    assert_eq!(second.next_run().await, ("water".into(), NOON + HOUR));
    assert!(second.registry.status("tea").is_none(), "a stop holds across a restart");
    second.stop().await;
}

#[tokio::test(start_paused = true)]
async fn only_a_loop_stopped_on_request_starts_again() {
    let (_dir, store) = open_temp();
    let mut daemon = daemon(&store, NOON);
    daemon.book.resume(Vec::new()).await.unwrap();
    daemon
        .book
        .add(reminder("tea", "in 1 minute", NOON), &me())
        .await
        .unwrap();
    assert_eq!(daemon.next_run().await.1, NOON + MINUTE);
    forgotten_once_stopped(&daemon.registry, &store, "tea").await;
    let ended = daemon.book.start_again("tea").await.unwrap_err();
    assert_eq!(
        ended.to_string(),
        "loop \"tea\" cannot be started again (done: its schedule has no run left); only a loop stopped on request can"
    );
    let unknown = daemon.book.start_again("nope").await.unwrap_err();
    assert_eq!(unknown.to_string(), "there is no loop \"nope\"");
    daemon.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_configured_loop_the_file_no_longer_names_does_not_start_again() {
    let (_dir, store) = open_temp();
    let daemon = daemon(&store, NOON);
    let both = || vec![hourly("report", false), hourly("digest", false)];
    daemon.book.resume(both()).await.unwrap();
    // One stopped by hand, then both taken out of the file by a reload.
    daemon.book.remove("digest").await.unwrap();
    stopped(&daemon.registry, "digest").await;
    let done = daemon.book.reconfigure(Vec::new(), &BTreeSet::new()).await.unwrap();
    assert_eq!(done.removed, ["report"]);
    stopped(&daemon.registry, "report").await;
    for name in ["report", "digest"] {
        let refused = daemon.book.start_again(name).await.unwrap_err();
        assert_eq!(refused.to_string(), format!("there is no loop \"{name}\""));
    }
    assert_eq!(daemon.registry.running_count(), 0);
    // The file names them again: they run as configured loops do.
    daemon.book.reconfigure(both(), &BTreeSet::new()).await.unwrap();
    assert_eq!(daemon.registry.running_count(), 2);
    daemon.stop().await;
}
