//! What is known of one server at each moment: whether it is connected,
//! the tools it offers, its last error and how often it was connected again.
//! The supervisor writes it; the tool box and the status read it. The lock
//! is held only to copy or replace, never across an `.await`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use crate::safety::tools::Tool;

/// Where a server stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Not connected yet.
    Starting,
    Connected,
    /// Down; connecting again after a wait.
    Failed,
    /// `enabled = false`: never started.
    Disabled,
}

/// A server's line in the status document.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerStatus {
    pub name: String,
    pub state: Phase,
    /// How many of its tools are offered.
    pub tools: usize,
    pub last_error: Option<String>,
    /// How often it was connected again after being down.
    pub restarts: u32,
}

/// One server, shared by its supervisor and the readers.
pub struct Server {
    name: String,
    live: Mutex<Live>,
    /// Counts every change of any server, for those waiting on one.
    changes: Arc<watch::Sender<u64>>,
}

struct Live {
    phase: Phase,
    tools: BTreeMap<String, Arc<dyn Tool>>,
    last_error: Option<String>,
    restarts: u32,
    /// Whether it was ever connected, so a new connection counts as a restart.
    was_up: bool,
}

impl Server {
    pub fn new(name: &str, enabled: bool, changes: Arc<watch::Sender<u64>>) -> Self {
        Self {
            name: name.to_owned(),
            changes,
            live: Mutex::new(Live {
                phase: if enabled { Phase::Starting } else { Phase::Disabled },
                tools: BTreeMap::new(),
                last_error: None,
                restarts: 0,
                was_up: false,
            }),
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Says that something changed, once the lock is released.
    fn changed(&self) {
        self.changes.send_modify(|count| *count += 1);
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        // A panic while holding this lock leaves plain data behind; read on.
        self.live.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Connected, offering `tools` (which replace any listed before).
    pub fn connected(&self, tools: BTreeMap<String, Arc<dyn Tool>>) {
        let mut live = self.live();
        if live.phase != Phase::Connected && live.was_up {
            live.restarts += 1;
        }
        live.was_up = true;
        live.phase = Phase::Connected;
        live.tools = tools;
        drop(live);
        self.changed();
    }

    /// Down because of `why`; its tools are no longer offered.
    pub fn failed(&self, why: String) {
        let mut live = self.live();
        live.phase = Phase::Failed;
        live.tools.clear();
        live.last_error = Some(why);
        drop(live);
        self.changed();
    }

    /// Still connected, but something went wrong.
    pub fn note_error(&self, why: String) {
        self.live().last_error = Some(why);
        self.changed();
    }

    pub fn tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.live().tools.get(name).cloned()
    }

    pub fn tools(&self) -> Vec<Arc<dyn Tool>> {
        self.live().tools.values().cloned().collect()
    }

    pub fn tool_count(&self) -> usize {
        self.live().tools.len()
    }

    pub fn status(&self) -> ServerStatus {
        let live = self.live();
        ServerStatus {
            name: self.name.clone(),
            state: live.phase,
            tools: live.tools.len(),
            last_error: live.last_error.clone(),
            restarts: live.restarts,
        }
    }
}
