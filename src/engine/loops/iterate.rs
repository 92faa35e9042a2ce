//! The seam between the loop runtime and the rest of the daemon: the runtime
//! decides *when* an iteration runs and *whether* it is a supervisor
//! iteration; an [`Iterate`] implementation runs it — a task through the
//! pipeline, a built-in handler directly — and reports what it cost.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use super::spec::{LoopSpec, Supervisor};

/// Runs one iteration of a loop.
#[async_trait]
pub trait Iterate: Send + Sync {
    /// Runs `iteration` to the end. Should return soon after
    /// `iteration.cancel` fires (with [`IterateError::Cancelled`] if it did
    /// not finish); at shutdown, an iteration still running at the deadline
    /// is aborted.
    async fn iterate(&self, iteration: Iteration) -> Result<Report, IterateError>;
}

/// One iteration, as the runtime asks for it.
#[derive(Clone, Debug)]
pub struct Iteration {
    /// The loop's definition: its name, body and output target.
    pub spec: Arc<LoopSpec>,
    /// The loop's attempt number, from 1.
    pub attempt: u64,
    /// Whether this is a supervisor iteration (see [`Iteration::supervisor`]).
    pub supervised: bool,
    /// Whether a trigger, rather than a timer, started this iteration.
    pub triggered: bool,
    /// For a scheduled loop, the slot after this iteration (`None` when the
    /// schedule is spent): what to store as its next run once it succeeds.
    pub next_run_ms: Option<u64>,
    /// Fires when the loop stops, reaches its maximum duration, or (in
    /// [`Retrigger::Restart`](super::spec::Retrigger::Restart) mode) is
    /// triggered again.
    pub cancel: CancellationToken,
}

impl Iteration {
    /// The supervisor settings — the model to use and the review prompt to
    /// add — if this is a supervisor iteration.
    pub fn supervisor(&self) -> Option<&Supervisor> {
        self.spec.supervisor.as_ref().filter(|_| self.supervised)
    }
}

/// What a finished iteration cost, and what the model asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub tokens_in: u64,
    pub tokens_out: u64,
    /// The model that answered; `None` for a built-in handler.
    pub model: Option<String>,
    /// The sleep the model chose for itself (the `set_next_sleep` tool).
    /// Clamped to the loop's bounds, it replaces the default sleep from now
    /// on; the jitter still applies.
    pub next_sleep: Option<Duration>,
}

/// Why an iteration did not finish. Either way it counts as an attempt.
#[derive(Debug, thiserror::Error)]
pub enum IterateError {
    /// It failed: the loop backs off and tries again.
    #[error(transparent)]
    Failed(Box<dyn std::error::Error + Send + Sync>),
    /// It gave up because `cancel` fired. If nobody cancelled it, this is
    /// a failure like any other.
    #[error("the iteration was cancelled")]
    Cancelled,
}

impl IterateError {
    pub fn failed(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self::Failed(error.into())
    }
}
