//! The registry and the loop runtime under paused time, with a fake
//! [`Iterate`] that hands every call to the test and seeded randomness.

use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::{mpsc, oneshot};
use tokio::time::{Instant, timeout};
use tokio_util::sync::CancellationToken;

use super::*;
use crate::engine::loops::iterate::{IterateError, Iteration, Report};
use crate::engine::loops::sleep::SleepBounds;
use crate::engine::loops::spec::{Retrigger, Start, Supervisor};
use crate::engine::loops::status::Outcome;

/// Long enough for anything a test waits for; time is paused, so it costs nothing.
const PATIENCE: Duration = Duration::from_secs(365 * 24 * 3600);

/// One call to the fake: the iteration, when it came, and where to answer.
struct Call {
    iteration: Iteration,
    at: Instant,
    reply: oneshot::Sender<Result<Report, IterateError>>,
}

impl Call {
    fn answer(self, result: Result<Report, IterateError>) {
        let _ = self.reply.send(result);
    }
}

/// Hands every call to the test and waits for its answer; gives up when
/// cancelled, unless its loop's name starts with "stubborn".
struct Fake {
    calls: mpsc::UnboundedSender<Call>,
}

#[async_trait]
impl Iterate for Fake {
    async fn iterate(&self, iteration: Iteration) -> Result<Report, IterateError> {
        let (reply, answer) = oneshot::channel();
        let cancel = iteration.cancel.clone();
        let stubborn = iteration.spec.name.as_str().starts_with("stubborn");
        let _ = self.calls.send(Call {
            iteration,
            at: Instant::now(),
            reply,
        });
        if stubborn {
            return answer.await.unwrap_or(Err(IterateError::Cancelled));
        }
        tokio::select! {
            answer = answer => answer.unwrap_or(Err(IterateError::Cancelled)),
            _ = cancel.cancelled() => Err(IterateError::Cancelled),
        }
    }
}

fn registry(max_loops: usize) -> (Registry, mpsc::UnboundedReceiver<Call>) {
    let (calls, receiver) = mpsc::unbounded_channel();
    let registry = Registry::new(
        Arc::new(Fake { calls }),
        max_loops,
        Clock::at(1_000_000),
        &CancellationToken::new(),
    )
    .seeded(42);
    (registry, receiver)
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

fn spec(name: &str, min: u64, default: u64, max: u64, jitter: f64) -> LoopSpec {
    let mut spec = LoopSpec::task(LoopName::new(name).unwrap(), "look around");
    spec.output = Some(crate::store::tests_support::conversation("loops"));
    spec.sleep = SleepBounds {
        min: secs(min),
        max: secs(max),
        default: secs(default),
    };
    spec.jitter = jitter;
    spec
}

fn triggered(name: &str, mode: Retrigger) -> LoopSpec {
    let mut spec = spec(name, 10, 60, 600, 0.2);
    spec.start = Start::OnTrigger(mode);
    spec
}

fn ok() -> Result<Report, IterateError> {
    Ok(Report {
        tokens_in: 100,
        tokens_out: 10,
        model: Some("small".into()),
        next_sleep: None,
    })
}

fn failure() -> Result<Report, IterateError> {
    Err(IterateError::failed("the model is down"))
}

async fn next_call(calls: &mut mpsc::UnboundedReceiver<Call>) -> Call {
    timeout(PATIENCE, calls.recv())
        .await
        .expect("no call in time")
        .expect("the fake is gone")
}

/// Fails if a call comes within an hour.
async fn no_call_for_an_hour(calls: &mut mpsc::UnboundedReceiver<Call>) {
    if let Ok(call) = timeout(secs(3600), calls.recv()).await {
        panic!("unexpected call: attempt {:?}", call.map(|c| c.iteration.attempt));
    }
}

async fn until(registry: &Registry, name: &str, done: impl FnMut(&LoopStatus) -> bool) -> LoopStatus {
    let mut status = registry.watch(name).expect("no such loop");
    let seen = timeout(PATIENCE, status.wait_for(done)).await;
    seen.expect("not in time").expect("status gone").clone()
}

fn gaps(times: &[Instant]) -> Vec<Duration> {
    times.windows(2).map(|pair| pair[1] - pair[0]).collect()
}

#[tokio::test(start_paused = true)]
async fn sleeps_stay_within_bounds_with_jitter() {
    let (registry, mut calls) = registry(4);
    // 90 s ± 50 %: the jitter would leave [10 s, 100 s] above but for the clamp.
    registry.spawn(spec("jittery", 10, 90, 100, 0.5)).unwrap();
    let mut times = Vec::new();
    for _ in 0..300 {
        let call = next_call(&mut calls).await;
        times.push(call.at);
        call.answer(ok());
    }
    let gaps = gaps(&times);
    assert!(gaps.iter().all(|gap| (secs(10)..=secs(100)).contains(gap)), "{gaps:?}");
    assert!(gaps.contains(&secs(100)), "the top is clamped");
    assert!(gaps.iter().any(|gap| *gap < secs(50)), "the jitter spreads below");
    let distinct: std::collections::BTreeSet<_> = gaps.iter().collect();
    assert!(distinct.len() > 100, "only {} distinct sleeps", distinct.len());
}

#[tokio::test(start_paused = true)]
async fn max_attempts_stop_a_loop_and_count_failures() {
    let (registry, mut calls) = registry(4);
    let mut limited = spec("limited", 10, 60, 600, 0.2);
    limited.max_attempts = Some(3);
    registry.spawn(limited).unwrap();
    for result in [ok(), failure(), ok()] {
        next_call(&mut calls).await.answer(result);
    }
    let status = until(&registry, "limited", |s| s.state == State::Stopped).await;
    assert_eq!(status.stop_reason, Some(StopReason::MaxAttempts));
    assert_eq!((status.attempts, status.iterations), (3, 2));
    no_call_for_an_hour(&mut calls).await;
}

#[tokio::test(start_paused = true)]
async fn max_duration_stops_a_loop_and_cancels_its_iteration() {
    let (registry, mut calls) = registry(4);
    let mut limited = spec("limited", 10, 60, 600, 0.0);
    limited.max_duration = Some(secs(270));
    let start = Instant::now();
    registry.spawn(limited).unwrap();
    // Iterations at 0, 60, 120, 180, 240 s; the last one never answered.
    for _ in 0..4 {
        next_call(&mut calls).await.answer(ok());
    }
    let last = next_call(&mut calls).await;
    assert_eq!(last.at - start, secs(240));
    let status = until(&registry, "limited", |s| s.state == State::Stopped).await;
    assert_eq!(Instant::now() - start, secs(270), "cancelled at the deadline");
    assert!(last.iteration.cancel.is_cancelled());
    assert_eq!(status.stop_reason, Some(StopReason::MaxDuration));
    assert_eq!((status.attempts, status.iterations), (5, 4));
    assert_eq!(status.recent[0].outcome, Outcome::Cancelled);
    assert_eq!(status.consecutive_errors, 0, "being cut short is no failure");
    no_call_for_an_hour(&mut calls).await;
}

#[tokio::test(start_paused = true)]
async fn supervisor_iterations_come_at_their_rate_with_the_other_model() {
    let (registry, mut calls) = registry(4);
    let mut supervised = spec("supervised", 1, 1, 1, 0.0);
    supervised.max_attempts = Some(1000);
    supervised.supervisor = Some(Supervisor {
        probability: 0.1,
        model: "strong".into(),
        review: "review the last week".into(),
    });
    registry.spawn(supervised).unwrap();
    let mut count = 0;
    for _ in 0..1000 {
        let call = next_call(&mut calls).await;
        match call.iteration.supervisor() {
            Some(supervisor) => {
                assert!(call.iteration.supervised);
                assert_eq!(supervisor.model, "strong");
                assert_eq!(supervisor.review, "review the last week");
                count += 1;
            }
            None => assert!(!call.iteration.supervised),
        }
        call.answer(ok());
    }
    assert!((70..=130).contains(&count), "{count} supervisor iterations in 1000");
    let status = until(&registry, "supervised", |s| s.state == State::Stopped).await;
    assert_eq!(status.supervisor_iterations, count);
    let recorded = status.recent.iter().filter(|r| r.supervisor).count() as u64;
    assert!(recorded <= count.min(10));
}

#[tokio::test(start_paused = true)]
async fn a_failing_loop_backs_off_and_recovers() {
    let (registry, mut calls) = registry(4);
    registry.spawn(spec("flaky", 10, 60, 3600, 0.2)).unwrap();
    let mut times = Vec::new();
    for _ in 0..5 {
        let call = next_call(&mut calls).await;
        times.push(call.at);
        call.answer(failure());
    }
    let status = until(&registry, "flaky", |s| s.state == State::Error).await;
    assert_eq!(status.consecutive_errors, 5);
    assert_eq!(status.last_error.as_deref(), Some("the model is down"));
    assert!(status.next_wake_ms.is_some());
    // Two successes: the sleep after the first is back to the default.
    for _ in 0..2 {
        let call = next_call(&mut calls).await;
        times.push(call.at);
        call.answer(ok());
    }
    let gaps = gaps(&times);
    // Backoff 10, 20, 40, 80, 160 s, each ± 20 %.
    for (k, gap) in gaps[..5].iter().enumerate() {
        let base = 10.0 * f64::from(1 << k);
        assert!(
            (base * 0.8..=base * 1.2).contains(&gap.as_secs_f64()),
            "gap {k}: {gap:?}"
        );
    }
    assert!(gaps[..5].windows(2).all(|pair| pair[0] < pair[1]), "{gaps:?}");
    assert!(
        (secs(48)..=secs(72)).contains(&gaps[5]),
        "after a success: {:?}",
        gaps[5]
    );
    let status = until(&registry, "flaky", |s| s.state == State::Sleeping).await;
    assert_eq!(status.consecutive_errors, 0);
    assert_eq!((status.attempts, status.iterations), (7, 2));
}

#[tokio::test(start_paused = true)]
async fn the_limit_refuses_the_next_loop_clearly() {
    let (registry, _calls) = registry(2);
    for name in ["a", "b"] {
        registry.spawn(triggered(name, Retrigger::Ignore)).unwrap();
    }
    let refused = registry.spawn(triggered("c", Retrigger::Ignore)).unwrap_err();
    assert!(matches!(refused, SpawnError::Full { running: 2, .. }));
    assert_eq!(
        refused.to_string(),
        "cannot start loop \"c\": 2 loops run already (loops.max)"
    );
    let duplicate = registry.spawn(triggered("a", Retrigger::Ignore)).unwrap_err();
    assert_eq!(
        duplicate.to_string(),
        "cannot start loop \"a\": a loop of that name runs already"
    );
    let invalid = registry.spawn(spec("d", 100, 60, 10, 0.2)).unwrap_err();
    assert!(matches!(invalid, SpawnError::Invalid(_)), "{invalid}");

    registry.stop("a").unwrap();
    let stopped = until(&registry, "a", |s| s.state == State::Stopped).await;
    assert_eq!(stopped.stop_reason, Some(StopReason::Requested));
    assert_eq!(registry.stop("a"), Err(LoopError::NotRunning { name: "a".into() }));
    assert_eq!(registry.trigger("zz"), Err(LoopError::Unknown { name: "zz".into() }));
    registry.spawn(triggered("c", Retrigger::Ignore)).unwrap();
    assert_eq!(registry.running_count(), 2);
    let names: Vec<_> = registry.list().into_iter().map(|s| s.name.to_string()).collect();
    assert_eq!(names, ["a", "b", "c"]);
}

#[tokio::test(start_paused = true)]
async fn shutdown_stops_all_and_aborts_the_stubborn_at_the_deadline() {
    let (registry, mut calls) = registry(4);
    registry.spawn(spec("sleeper", 10, 60, 600, 0.2)).unwrap();
    next_call(&mut calls).await.answer(ok());
    until(&registry, "sleeper", |s| s.state == State::Sleeping).await;
    registry.spawn(spec("busy", 10, 60, 600, 0.2)).unwrap();
    registry.spawn(spec("stubborn", 10, 60, 600, 0.2)).unwrap();
    // Both in an iteration, never answered.
    let in_flight = [next_call(&mut calls).await, next_call(&mut calls).await];

    let start = Instant::now();
    let drained = registry.shutdown(secs(5)).await;
    assert_eq!(drained, Drained { stopped: 2, aborted: 1 });
    assert_eq!(Instant::now() - start, secs(5), "waited for the deadline, no longer");
    assert!(in_flight.iter().all(|call| call.iteration.cancel.is_cancelled()));
    let reasons: Vec<_> = registry.list().into_iter().map(|s| (s.state, s.stop_reason)).collect();
    assert_eq!(
        reasons,
        [
            (State::Stopped, Some(StopReason::Shutdown)),
            (State::Stopped, Some(StopReason::Shutdown)),
            (State::Stopped, Some(StopReason::Aborted)),
        ]
    );
    assert_eq!(registry.status("busy").unwrap().recent[0].outcome, Outcome::Cancelled);
    assert_eq!(registry.running_count(), 0);
    let refused = registry.spawn(spec("late", 10, 60, 600, 0.2)).unwrap_err();
    assert!(matches!(refused, SpawnError::ShuttingDown { .. }));
}

#[tokio::test(start_paused = true)]
async fn shutdown_without_stubborn_loops_is_immediate() {
    let (registry, mut calls) = registry(4);
    registry.spawn(spec("busy", 10, 60, 600, 0.2)).unwrap();
    let _call = next_call(&mut calls).await;
    let start = Instant::now();
    assert_eq!(registry.shutdown(secs(5)).await, Drained { stopped: 1, aborted: 0 });
    assert_eq!(Instant::now(), start);
}

#[tokio::test(start_paused = true)]
async fn a_triggered_loop_waits_and_ignores_triggers_while_busy() {
    let (registry, mut calls) = registry(4);
    registry.spawn(triggered("ignoring", Retrigger::Ignore)).unwrap();
    until(&registry, "ignoring", |s| s.state == State::Waiting).await;
    no_call_for_an_hour(&mut calls).await;

    registry.trigger("ignoring").unwrap();
    let call = next_call(&mut calls).await;
    assert!(call.iteration.triggered);
    registry.trigger("ignoring").unwrap();
    registry.trigger("ignoring").unwrap();
    call.answer(ok());
    until(&registry, "ignoring", |s| s.state == State::Waiting && s.attempts == 1).await;
    no_call_for_an_hour(&mut calls).await;

    registry.trigger("ignoring").unwrap();
    next_call(&mut calls).await.answer(ok());
    let status = until(&registry, "ignoring", |s| s.state == State::Waiting && s.attempts == 2).await;
    assert_eq!(status.iterations, 2);
}

#[tokio::test(start_paused = true)]
async fn a_triggered_loop_queues_one_more_run() {
    let (registry, mut calls) = registry(4);
    registry.spawn(triggered("queueing", Retrigger::Queue)).unwrap();
    registry.trigger("queueing").unwrap();
    let first = next_call(&mut calls).await;
    registry.trigger("queueing").unwrap();
    registry.trigger("queueing").unwrap();
    first.answer(ok());
    let second = next_call(&mut calls).await;
    assert_eq!(second.iteration.attempt, 2);
    second.answer(ok());
    let status = until(&registry, "queueing", |s| s.state == State::Waiting && s.attempts == 2).await;
    assert_eq!(status.iterations, 2);
    no_call_for_an_hour(&mut calls).await;
}

#[tokio::test(start_paused = true)]
async fn a_triggered_loop_restarts_its_iteration() {
    let (registry, mut calls) = registry(4);
    registry.spawn(triggered("restarting", Retrigger::Restart)).unwrap();
    registry.trigger("restarting").unwrap();
    let first = next_call(&mut calls).await;
    registry.trigger("restarting").unwrap();
    timeout(PATIENCE, first.iteration.cancel.cancelled())
        .await
        .expect("not cancelled");
    let second = next_call(&mut calls).await;
    assert!(!second.iteration.cancel.is_cancelled());
    second.answer(ok());
    let status = until(&registry, "restarting", |s| {
        s.state == State::Waiting && s.attempts == 2
    })
    .await;
    assert_eq!(status.iterations, 1);
    assert_eq!(status.consecutive_errors, 0, "a restart is no failure");
    let outcomes: Vec<_> = status.recent.iter().map(|r| r.outcome.clone()).collect();
    assert_eq!(outcomes, [Outcome::Done, Outcome::Restarted]);
    no_call_for_an_hour(&mut calls).await;
}

#[tokio::test(start_paused = true)]
async fn a_trigger_wakes_a_sleeping_loop() {
    let (registry, mut calls) = registry(4);
    registry.spawn(spec("sleeper", 10, 600, 600, 0.0)).unwrap();
    next_call(&mut calls).await.answer(ok());
    until(&registry, "sleeper", |s| s.state == State::Sleeping).await;
    let start = Instant::now();
    registry.trigger("sleeper").unwrap();
    let call = next_call(&mut calls).await;
    assert!(call.iteration.triggered);
    assert_eq!(call.at, start);
}

#[tokio::test(start_paused = true)]
async fn the_chosen_sleep_is_clamped_and_kept() {
    let (registry, mut calls) = registry(4);
    registry.spawn(spec("chooser", 10, 60, 100, 0.0)).unwrap();
    let chosen = [Some(secs(3600)), Some(Duration::ZERO), Some(secs(42)), None, None];
    let (mut times, mut sleeps) = (Vec::new(), Vec::new());
    for (n, next_sleep) in (1..).zip(chosen) {
        let call = next_call(&mut calls).await;
        times.push(call.at);
        call.answer(Ok(Report {
            next_sleep,
            ..Report::default()
        }));
        let status = until(&registry, "chooser", |s| s.state == State::Sleeping && s.attempts == n).await;
        sleeps.push(status.sleep_ms);
    }
    assert_eq!(gaps(&times), [secs(100), secs(10), secs(42), secs(42)]);
    assert_eq!(sleeps, [100_000, 10_000, 42_000, 42_000, 42_000]);
}

#[tokio::test(start_paused = true)]
async fn the_chosen_sleep_is_jittered_after_clamping() {
    let (registry, mut calls) = registry(4);
    registry.spawn(spec("chooser", 10, 60, 100, 0.5)).unwrap();
    let mut times = Vec::new();
    for _ in 0..50 {
        let call = next_call(&mut calls).await;
        times.push(call.at);
        call.answer(Ok(Report {
            next_sleep: Some(secs(3600)),
            ..Report::default()
        }));
    }
    // 100 s ± 50 %, clamped: between 50 s and 100 s, not always 100 s.
    let gaps = gaps(&times);
    assert!(gaps.iter().all(|gap| (secs(50)..=secs(100)).contains(gap)), "{gaps:?}");
    assert!(gaps.iter().filter(|gap| **gap < secs(90)).count() > 10, "{gaps:?}");
}

#[tokio::test(start_paused = true)]
async fn a_failing_triggered_loop_retries_without_a_trigger() {
    let (registry, mut calls) = registry(4);
    registry.spawn(triggered("retrying", Retrigger::Ignore)).unwrap();
    registry.trigger("retrying").unwrap();
    let first = next_call(&mut calls).await;
    let failed_at = first.at;
    first.answer(failure());
    let retry = next_call(&mut calls).await;
    assert!((secs(8)..=secs(12)).contains(&(retry.at - failed_at)));
    retry.answer(ok());
    until(&registry, "retrying", |s| s.state == State::Waiting && s.attempts == 2).await;
    no_call_for_an_hour(&mut calls).await;
}

#[tokio::test(start_paused = true)]
async fn a_loop_may_start_after_a_first_sleep() {
    let (registry, mut calls) = registry(4);
    let mut patient = spec("patient", 10, 60, 600, 0.0);
    patient.start = Start::AfterSleep;
    let start = Instant::now();
    registry.spawn(patient).unwrap();
    let status = until(&registry, "patient", |s| s.state == State::Sleeping).await;
    assert_eq!(status.next_wake_ms, Some(1_000_000 + 60_000));
    assert_eq!(next_call(&mut calls).await.at - start, secs(60));
}

fn every(seconds: u64) -> crate::foundation::clock::schedule::Schedule {
    let zone = crate::foundation::clock::schedule::Zone::utc();
    crate::foundation::clock::schedule::Schedule::parse(&format!("every {seconds} seconds"), &zone, 0).unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_scheduled_loop_runs_at_its_slots_without_jitter() {
    let (registry, mut calls) = registry(4);
    // The clock reads 1 000 000 ms: the first 5-minute slot is at 1 200 000.
    let mut scheduled = spec("slots", 10, 60, 600, 0.5);
    scheduled.schedule = Some(every(300));
    let started = Instant::now();
    registry.spawn(scheduled).unwrap();
    let mut times = Vec::new();
    for slot in [1_200_000, 1_500_000, 1_800_000] {
        let call = next_call(&mut calls).await;
        assert_eq!(
            call.iteration.next_run_ms,
            Some(slot + 300_000),
            "the slot after this one"
        );
        times.push(call.at);
        let mut report = ok().unwrap();
        report.next_sleep = Some(secs(10));
        call.answer(Ok(report));
    }
    assert_eq!(times[0] - started, secs(200));
    assert_eq!(
        gaps(&times),
        [secs(300), secs(300)],
        "the model's sleep does not move a schedule"
    );
}

#[tokio::test(start_paused = true)]
async fn a_one_shot_runs_once_retrying_a_failure_then_is_spent() {
    let (registry, mut calls) = registry(4);
    let mut once = spec("once", 10, 60, 600, 0.0);
    let zone = crate::foundation::clock::schedule::Zone::utc();
    once.schedule =
        Some(crate::foundation::clock::schedule::Schedule::parse("in 20 minutes", &zone, 1_000_000).unwrap());
    let started = Instant::now();
    registry.spawn(once).unwrap();
    let call = next_call(&mut calls).await;
    assert_eq!(call.at - started, secs(1200), "not a moment early");
    assert_eq!(call.iteration.next_run_ms, None, "no slot after it");
    call.answer(failure());
    let retry = next_call(&mut calls).await;
    assert_eq!(
        retry.at - started,
        secs(1210),
        "a failure is retried after the shortest backoff"
    );
    retry.answer(ok());
    let stopped = until(&registry, "once", |s| s.state == State::Stopped).await;
    assert_eq!(stopped.stop_reason, Some(StopReason::Spent));
    assert_eq!(stopped.iterations, 1);
    no_call_for_an_hour(&mut calls).await;
}

#[tokio::test(start_paused = true)]
async fn a_stored_first_run_is_kept_and_a_past_one_runs_at_once() {
    let (registry, mut calls) = registry(4);
    let mut late = spec("late", 10, 60, 600, 0.0);
    late.schedule = Some(every(3600));
    late.first_run_ms = Some(900_000);
    let mut later = spec("later", 10, 60, 600, 0.0);
    later.schedule = Some(every(3600));
    later.first_run_ms = Some(1_060_000);
    let started = Instant::now();
    registry.spawn(late).unwrap();
    registry.spawn(later).unwrap();
    let first = next_call(&mut calls).await;
    assert_eq!(
        (first.iteration.spec.name.as_str(), first.at - started),
        ("late", Duration::ZERO)
    );
    first.answer(ok());
    let second = next_call(&mut calls).await;
    assert_eq!(
        (second.iteration.spec.name.as_str(), second.at - started),
        ("later", secs(60))
    );
    second.answer(ok());
    let third = next_call(&mut calls).await;
    assert_eq!(
        third.at - started,
        secs(3600 - 1000),
        "then the next slot: 3 600 000 ms"
    );
}

#[tokio::test(start_paused = true)]
async fn a_one_shot_run_early_on_request_does_not_run_again_at_its_time() {
    let (registry, mut calls) = registry(4);
    let mut once = spec("early", 10, 60, 600, 0.0);
    let zone = crate::foundation::clock::schedule::Zone::utc();
    once.schedule =
        Some(crate::foundation::clock::schedule::Schedule::parse("in 20 minutes", &zone, 1_000_000).unwrap());
    registry.spawn(once).unwrap();
    until(&registry, "early", |s| s.state == State::Sleeping).await;
    registry.trigger("early").unwrap();
    let call = next_call(&mut calls).await;
    assert!(call.iteration.triggered);
    assert_eq!(call.iteration.next_run_ms, None, "its one run is this one");
    call.answer(ok());
    let stopped = until(&registry, "early", |s| s.state == State::Stopped).await;
    assert_eq!(stopped.stop_reason, Some(StopReason::Spent));
    no_call_for_an_hour(&mut calls).await;
}

/// A loop whose status says it stopped may start again at once, even while
/// its task is still returning on another thread (as a reload restarting a
/// changed loop does). Real threads: the race needs them; the many rounds
/// make a lost one show.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loop_seen_stopped_starts_again_at_once() {
    let (registry, _calls) = registry(4);
    registry.spawn(triggered("again", Retrigger::Ignore)).unwrap();
    for round in 0..1000 {
        let mut status = registry.watch("again").unwrap();
        registry.stop("again").unwrap();
        let stopped = timeout(secs(10), status.wait_for(|s| s.state == State::Stopped))
            .await
            .is_ok_and(|seen| seen.is_ok());
        assert!(stopped, "round {round}: the loop did not stop");
        if let Err(error) = registry.spawn(triggered("again", Retrigger::Ignore)) {
            panic!("round {round}: {error}");
        }
    }
    assert_eq!(registry.running_count(), 1);
}
