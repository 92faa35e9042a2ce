use tokio_util::sync::CancellationToken;

use super::*;
use crate::foundation::clock::Clock;
use crate::foundation::clock::schedule::Zone;
use crate::safety::approvals::Approvals;
use crate::store::tests_support::open_temp;

/// The loops of a daemon that is shutting down: its lifecycle drains.
fn daemon_loops(store: &crate::store::Store) -> DaemonLoops {
    let config = Config::default();
    let policy = crate::gateways::policy(&config);
    let clock = Clock::start();
    let approvals = Arc::new(Approvals::new(store.clone(), policy, clock, &config.approvals));
    let schedules = Arc::new(Schedules::new(store.clone(), clock, Zone::utc()));
    let lifecycle = Lifecycle::new();
    let conversations =
        crate::engine::conversations::testing::on_store(store.clone(), config.pipeline.clone(), lifecycle.clone());
    lifecycle.draining().cancel();
    let heartbeat = Heartbeat::new(approvals, store.clone(), clock, None);
    DaemonLoops::new(conversations, lifecycle, clock, heartbeat, schedules)
}

fn iteration(spec: LoopSpec) -> Iteration {
    Iteration {
        spec: Arc::new(spec),
        attempt: 1,
        supervised: false,
        triggered: false,
        next_run_ms: None,
        cancel: CancellationToken::new(),
    }
}

async fn error_of(spec: LoopSpec) -> String {
    let (_dir, store) = open_temp();
    match daemon_loops(&store).iterate(iteration(spec)).await {
        Err(IterateError::Failed(error)) => error.to_string(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

#[tokio::test]
async fn every_kind_of_loop_fails_cleanly_once_the_daemon_is_gone() {
    let task = LoopSpec::task(LoopName::new("inbox").unwrap(), "check the mail");
    assert!(error_of(task).await.contains("the daemon is gone"));
    let handler = LoopSpec::handler(LoopName::new("x").unwrap(), "frobnicate");
    assert!(error_of(handler).await.contains("the daemon is gone"));
    let heartbeat = heartbeat_spec(Duration::from_secs(1)).unwrap();
    assert!(error_of(heartbeat).await.contains("the daemon is gone"));
}

#[test]
fn the_heartbeat_spec_is_valid_and_unjittered() {
    let spec = heartbeat_spec(Duration::from_secs(60)).unwrap();
    assert_eq!(spec.validate(), Ok(()));
    assert_eq!(spec.jitter, 0.0);
    assert_eq!(spec.sleep.min, spec.sleep.max);
    assert_eq!(spec.body, Body::Handler { name: HEARTBEAT.into() });
    assert_eq!(Handler::parse(HEARTBEAT), Some(Handler::Heartbeat));
    assert_eq!(Handler::parse("frobnicate"), None);
}
