//! `[pipeline]`: how a turn runs — its depth, history, timeout, queue and
//! worker limits, and the system prompt.

use serde::{Deserialize, Serialize};

use super::Problems;

pub const DEFAULT_MAX_DEPTH: u32 = 10;
pub const DEFAULT_HISTORY_TURNS: usize = 20;
pub const DEFAULT_TURN_TIMEOUT_S: u64 = 300;
pub const DEFAULT_QUEUE_CAPACITY: usize = 64;
pub const DEFAULT_IDLE_WORKER_S: u64 = 300;
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024;
pub const DEFAULT_SHUTDOWN_GRACE_S: u64 = 10;
pub const DEFAULT_SYSTEM_PROMPT: &str =
    "You are passepartout, a helpful personal assistant. Answer briefly and plainly.";

/// `[pipeline]`: how a turn runs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PipelineConfig {
    /// Most feedback steps (tool call → result → model) in one turn before it stops.
    pub max_depth: u32,
    /// Earlier turns of the conversation given to the model.
    pub history_turns: usize,
    /// A turn taking longer is abandoned with a message to the user.
    pub turn_timeout_s: u64,
    /// Messages waiting per conversation; more are refused as busy (not lost:
    /// the gateway retries or tells the sender).
    pub queue_capacity: usize,
    /// An idle conversation worker is stopped after this many seconds.
    pub idle_worker_s: u64,
    /// Largest inbound text accepted, in bytes.
    pub max_message_bytes: usize,
    /// On shutdown, running turns get this long to finish.
    pub shutdown_grace_s: u64,
    /// The system prompt that opens every request to the model.
    pub system_prompt: String,
    /// Show a reply while the model writes it, where the gateway can (a
    /// Telegram message edited as it grows, the socket's text as it comes);
    /// each gateway's own `stream` setting overrides it.
    pub stream: bool,
}

impl Default for PipelineConfig {
    fn default() -> Self {
        Self {
            max_depth: DEFAULT_MAX_DEPTH,
            history_turns: DEFAULT_HISTORY_TURNS,
            turn_timeout_s: DEFAULT_TURN_TIMEOUT_S,
            queue_capacity: DEFAULT_QUEUE_CAPACITY,
            idle_worker_s: DEFAULT_IDLE_WORKER_S,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            shutdown_grace_s: DEFAULT_SHUTDOWN_GRACE_S,
            system_prompt: DEFAULT_SYSTEM_PROMPT.to_owned(),
            stream: true,
        }
    }
}

impl PipelineConfig {
    /// Notes what is wrong with `[pipeline]`.
    pub fn check(&self, problems: &mut Problems) {
        problems.check(self.max_depth > 0, "pipeline.max_depth must be at least 1");
        problems.check(self.turn_timeout_s > 0, "pipeline.turn_timeout_s must be at least 1");
        problems.check(self.queue_capacity > 0, "pipeline.queue_capacity must be at least 1");
        problems.check(self.idle_worker_s > 0, "pipeline.idle_worker_s must be at least 1");
        problems.check(
            self.max_message_bytes >= 64,
            "pipeline.max_message_bytes must be at least 64",
        );
    }
}
