//! Load on the daemon's socket that survives the daemon: a few chats, each
//! sending its numbered messages and recording every reply, through any
//! number of daemon lifetimes. What was accepted (acked) and every reply seen
//! stay in a [`Ledger`] that outlives the connections, so a test that kills
//! the daemon can check afterwards that nothing accepted was lost or
//! answered twice.
#![allow(dead_code)] // every including target uses a different part of it

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use passepartout_gateway::ChatId;
use passepartout_socket::{Client, ServerFrame};
use tokio::sync::Notify;

/// A count that tasks bump and others wait on.
#[derive(Default)]
pub struct Progress {
    count: AtomicUsize,
    changed: Notify,
}

impl Progress {
    pub fn bump(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        self.changed.notify_waiters();
    }

    pub fn get(&self) -> usize {
        self.count.load(Ordering::SeqCst)
    }

    /// Returns once the count is at least `n`.
    pub async fn reached(&self, n: usize) {
        loop {
            let changed = self.changed.notified();
            if self.get() >= n {
                return;
            }
            changed.await;
        }
    }
}

/// What the clients saw, across every daemon lifetime.
#[derive(Default)]
pub struct Ledger {
    pub accepted: HashSet<String>,
    /// message id → the distinct reply ids seen for it, and their texts.
    pub replies: HashMap<String, HashMap<String, String>>,
}

/// `chats` socket chats sending `per_chat` messages each, ids `<prefix>c<chat>-m<n>`.
pub struct SocketLoad {
    pub chats: usize,
    pub per_chat: usize,
    prefix: &'static str,
    pub ledger: Mutex<Ledger>,
    /// Bumped on every message the daemon accepted.
    pub acks: Progress,
}

impl SocketLoad {
    pub fn new(prefix: &'static str, chats: usize, per_chat: usize) -> Arc<SocketLoad> {
        Arc::new(SocketLoad {
            chats,
            per_chat,
            prefix,
            ledger: Mutex::default(),
            acks: Progress::default(),
        })
    }

    pub fn message_id(&self, chat: usize, n: usize) -> String {
        format!("{}c{chat}-m{n}", self.prefix)
    }

    /// Every message id, chat by chat.
    pub fn message_ids(&self) -> Vec<String> {
        (0..self.chats)
            .flat_map(|chat| (0..self.per_chat).map(move |n| (chat, n)))
            .map(|(chat, n)| self.message_id(chat, n))
            .collect()
    }

    /// One client per chat for one daemon lifetime; each ends when its
    /// chat's messages are all answered or the connection dies.
    pub fn spawn_clients(self: &Arc<Self>, socket: &Path) -> Vec<tokio::task::JoinHandle<()>> {
        (0..self.chats)
            .map(|chat| tokio::spawn(self.clone().client_run(socket.to_path_buf(), chat)))
            .collect()
    }

    /// Fails the test unless every message was accepted and answered by
    /// exactly one reply id; returns every reply text per message.
    pub fn assert_answered_once(&self) -> HashMap<String, String> {
        let ledger = self.ledger.lock().unwrap();
        assert_eq!(
            ledger.accepted.len(),
            self.chats * self.per_chat,
            "every socket message was eventually accepted"
        );
        self.message_ids()
            .into_iter()
            .map(|id| {
                let replies = ledger
                    .replies
                    .get(&id)
                    .unwrap_or_else(|| panic!("socket: {id} was never answered"));
                assert_eq!(replies.len(), 1, "socket: {id} answered more than once: {replies:?}");
                let text = replies.values().next().unwrap().clone();
                (id, text)
            })
            .collect()
    }

    async fn client_run(self: Arc<Self>, socket: PathBuf, chat: usize) {
        let Ok(mut client) = Client::connect(
            &socket,
            Some(ChatId::new(format!("{}chat{chat}", self.prefix)).unwrap()),
        )
        .await
        else {
            return;
        };
        for n in 0..self.per_chat {
            let id = self.message_id(chat, n);
            if self.ledger.lock().unwrap().accepted.contains(&id) {
                continue;
            }
            match client.send(Some(id.clone()), &id, None).await {
                Ok(_) => {
                    self.ledger.lock().unwrap().accepted.insert(id);
                    self.acks.bump();
                }
                Err(_) => return self.drain(client).await, // killed
            }
        }
        loop {
            let done = {
                let ledger = self.ledger.lock().unwrap();
                (0..self.per_chat).all(|n| ledger.replies.contains_key(&self.message_id(chat, n)))
            };
            if done {
                return;
            }
            match client.next_event().await {
                Ok(frame) => self.record(frame),
                Err(_) => return,
            }
        }
    }

    /// The daemon died: whatever it wrote before is still readable; keep it.
    async fn drain(&self, mut client: Client) {
        while let Ok(frame) = client.next_event().await {
            self.record(frame);
        }
    }

    fn record(&self, frame: ServerFrame) {
        if let ServerFrame::Reply {
            id,
            in_reply_to: Some(answered),
            text,
            ..
        } = frame
        {
            self.ledger
                .lock()
                .unwrap()
                .replies
                .entry(answered)
                .or_default()
                .insert(id, text);
        }
    }
}

/// Waits for every handle; a task that panicked has already failed the test.
pub async fn join_all(handles: Vec<tokio::task::JoinHandle<()>>) {
    for handle in handles {
        let _ = handle.await;
    }
}
