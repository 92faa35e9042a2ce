//! Crash test: the real binary under load, killed with SIGKILL at a random
//! moment, several times over. Every message the daemon accepted must be
//! answered exactly once — one reply id per message; a reply whose delivery
//! was cut short may arrive again with the same id (at-least-once delivery,
//! deduplicated by the client) — and the store must open every time.
//! The moments come from a seed, printed (and so shown when the test fails);
//! `CRASH_SEED=N` repeats a run.

use crate::support;

use rand::{Rng, SeedableRng};
use support::fake_llm::FakeLlm;
use support::harness::WAIT;
use support::process::{Running, socket_path, write_config};
use support::socket_load::{SocketLoad, join_all};

const CHATS: usize = 4;
const PER_CHAT: usize = 50;
const KILLS: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_nothing_and_answers_once() {
    let seed: u64 = std::env::var("CRASH_SEED")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("crash test seed {seed} (CRASH_SEED={seed} repeats this run)");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let socket = socket_path(dir.path());
    let load = SocketLoad::new("", CHATS, PER_CHAT);

    for round in 0..KILLS {
        let daemon = Running::start(&config).await;
        let kill_after = load.acks.get() + rng.random_range(5..40);
        // Kill once enough new messages were accepted, or when the clients are done.
        let all_done = join_all(load.spawn_clients(&socket));
        tokio::pin!(all_done);
        let finished = tokio::select! {
            _ = load.acks.reached(kill_after) => false,
            _ = &mut all_done => true,
        };
        daemon.kill().await;
        // Clients cut off by the kill end on their own; a finished wait is
        // not polled again.
        if !finished {
            let _ = tokio::time::timeout(WAIT, all_done).await;
        }
        eprintln!("round {round}: killed after {} accepted", load.acks.get());
    }

    // Last lifetime: no kill; everything must get done.
    let daemon = Running::start(&config).await;
    if tokio::time::timeout(WAIT * 3, join_all(load.spawn_clients(&socket)))
        .await
        .is_err()
    {
        let ledger = load.ledger.lock().unwrap();
        let missing: Vec<_> = load
            .message_ids()
            .into_iter()
            .filter(|id| !ledger.replies.contains_key(id))
            .collect();
        panic!("not all answered after the last restart; missing {missing:?}");
    }
    let status = daemon.terminate().await;
    assert!(status.success(), "clean exit after SIGTERM: {status:?}");
    assert!(!socket.exists(), "socket removed at shutdown");

    for (id, text) in load.assert_answered_once() {
        assert_eq!(text, format!("echo: {id}"));
    }
    // Each message reached the model at most once per lifetime it was pending in.
    assert!(llm.requests().len() >= CHATS * PER_CHAT);
}
