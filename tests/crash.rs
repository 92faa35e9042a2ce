//! Crash test: the real binary under load, killed with SIGKILL at a random
//! moment, several times over. Every message the daemon accepted must be
//! answered exactly once — one reply id per message; a reply whose delivery
//! was cut short may arrive again with the same id (at-least-once delivery,
//! deduplicated by the client) — and the store must open every time.

mod support;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use passepartout_gateway::ChatId;
use passepartout_socket::{Client, ServerFrame};
use rand::{Rng, SeedableRng};
use support::fake_llm::FakeLlm;
use support::harness::WAIT;
use support::process::{Running, socket_path, write_config};
use tokio::sync::Notify;

const CHATS: usize = 4;
const PER_CHAT: usize = 50;
const KILLS: usize = 6;

#[derive(Default)]
struct Ledger {
    accepted: HashSet<String>,
    /// message id → the distinct reply ids seen for it, and their texts.
    replies: HashMap<String, HashMap<String, String>>,
}

struct Shared {
    ledger: Mutex<Ledger>,
    acks: AtomicUsize,
    acked: Notify,
}

fn message_id(chat: usize, n: usize) -> String {
    format!("c{chat}-m{n}")
}

/// One chat's client for one daemon lifetime: sends what is not accepted yet,
/// records every reply, and returns when all of its chat's messages are
/// answered or the connection dies.
async fn client_run(shared: Arc<Shared>, socket: PathBuf, chat: usize) {
    let Ok(mut client) = Client::connect(&socket, Some(ChatId::new(format!("chat{chat}")).unwrap())).await else {
        return;
    };
    for n in 0..PER_CHAT {
        let id = message_id(chat, n);
        if shared.ledger.lock().unwrap().accepted.contains(&id) {
            continue;
        }
        match client.send(Some(id.clone()), &id, None).await {
            Ok(_) => {
                shared.ledger.lock().unwrap().accepted.insert(id);
                shared.acks.fetch_add(1, Ordering::SeqCst);
                shared.acked.notify_waiters();
            }
            Err(_) => return drain(client, &shared).await, // killed
        }
    }
    loop {
        let done = {
            let ledger = shared.ledger.lock().unwrap();
            (0..PER_CHAT).all(|n| ledger.replies.contains_key(&message_id(chat, n)))
        };
        if done {
            return;
        }
        match client.next_event().await {
            Ok(frame) => record(frame, &shared),
            Err(_) => return,
        }
    }
}

/// The daemon died: whatever it wrote before is still readable; keep it.
async fn drain(mut client: Client, shared: &Shared) {
    while let Ok(frame) = client.next_event().await {
        record(frame, shared);
    }
}

fn record(frame: ServerFrame, shared: &Shared) {
    if let ServerFrame::Reply {
        id,
        in_reply_to: Some(answered),
        text,
        ..
    } = frame
    {
        shared
            .ledger
            .lock()
            .unwrap()
            .replies
            .entry(answered)
            .or_default()
            .insert(id, text);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_under_load_loses_nothing_and_answers_once() {
    let seed: u64 = rand::random();
    eprintln!("crash test seed {seed}");
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let socket = socket_path(dir.path());
    let shared = Arc::new(Shared {
        ledger: Mutex::default(),
        acks: AtomicUsize::new(0),
        acked: Notify::new(),
    });

    for round in 0..KILLS {
        let daemon = Running::start(&config).await;
        let already = shared.acks.load(Ordering::SeqCst);
        let kill_after = already + rng.random_range(5..40);
        let clients: Vec<_> = (0..CHATS)
            .map(|chat| tokio::spawn(client_run(shared.clone(), socket.clone(), chat)))
            .collect();
        // Kill once enough new messages were accepted, or when the clients are done.
        let all_done = futures_all(clients);
        tokio::pin!(all_done);
        let reached = async {
            loop {
                let waiting = shared.acked.notified();
                if shared.acks.load(Ordering::SeqCst) >= kill_after {
                    return;
                }
                waiting.await;
            }
        };
        tokio::select! {
            _ = reached => {}
            _ = &mut all_done => {}
        }
        daemon.kill().await;
        let _ = tokio::time::timeout(WAIT, all_done).await;
        eprintln!(
            "round {round}: killed after {} accepted",
            shared.acks.load(Ordering::SeqCst)
        );
    }

    // Last lifetime: no kill; everything must get done.
    let daemon = Running::start(&config).await;
    let clients: Vec<_> = (0..CHATS)
        .map(|chat| tokio::spawn(client_run(shared.clone(), socket.clone(), chat)))
        .collect();
    if tokio::time::timeout(WAIT * 3, futures_all(clients)).await.is_err() {
        let ledger = shared.ledger.lock().unwrap();
        let missing: Vec<_> = (0..CHATS)
            .flat_map(|c| (0..PER_CHAT).map(move |n| message_id(c, n)))
            .filter(|id| !ledger.replies.contains_key(id))
            .collect();
        panic!("not all answered after the last restart; missing {missing:?}");
    }
    let status = daemon.terminate().await;
    assert!(status.success(), "clean exit after SIGTERM: {status:?}");
    assert!(!socket.exists(), "socket removed at shutdown");

    let ledger = shared.ledger.lock().unwrap();
    assert_eq!(
        ledger.accepted.len(),
        CHATS * PER_CHAT,
        "every message was eventually accepted"
    );
    for chat in 0..CHATS {
        for n in 0..PER_CHAT {
            let id = message_id(chat, n);
            let replies = ledger
                .replies
                .get(&id)
                .unwrap_or_else(|| panic!("{id} was never answered"));
            assert_eq!(replies.len(), 1, "{id} answered more than once: {replies:?}");
            assert_eq!(replies.values().next().unwrap(), &format!("echo: {id}"));
        }
    }
    // Each message reached the model at most once per lifetime it was pending in.
    assert!(llm.requests().len() >= CHATS * PER_CHAT);
}

async fn futures_all(handles: Vec<tokio::task::JoinHandle<()>>) {
    for handle in handles {
        let _ = handle.await;
    }
}
