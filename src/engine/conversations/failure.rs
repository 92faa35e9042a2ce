//! Why a turn produced nothing, and the guard that turns a panic or a
//! timeout into that answer. A turn that fails is rolled back by
//! construction (the pipeline writes nothing itself); what the person is
//! told carries an error id that is also logged.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use passepartout_gateway::ConversationKey;

use super::Conversations;
use crate::engine::pipeline::TurnOutput;
use crate::store::StoreError;

/// Why a turn produced nothing.
#[derive(Debug, thiserror::Error)]
pub enum TurnFailed {
    /// The conversation's history, which the turn is given, could not be read.
    #[error("cannot read the conversation's history: {0}")]
    History(#[source] StoreError),
    /// The turn panicked; `id` is in the log line that says where.
    #[error("Something went wrong on my side (error id {id}). Nothing from that attempt was kept.")]
    Panicked { id: String },
    /// The turn ran past the turn timeout, `limit_s` seconds.
    #[error("That took longer than {limit_s} s, so I stopped (error id {id}). Nothing from that attempt was kept.")]
    TimedOut { limit_s: u64, id: String },
}

/// Runs `turn` under the turn timeout, catching panics.
pub(super) async fn guarded(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    turn: impl Future<Output = TurnOutput>,
) -> Result<TurnOutput, TurnFailed> {
    let limit = Duration::from_secs(cx.settings.turn_timeout_s);
    let turn = AssertUnwindSafe(turn).catch_unwind();
    match tokio::time::timeout(limit, turn).await {
        Ok(Ok(output)) => Ok(output),
        Ok(Err(panic)) => {
            let id = error_id();
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            tracing::error!(conversation = %key, error_id = %id, panic = %message, "turn panicked; rolled back");
            Err(TurnFailed::Panicked { id })
        }
        Err(_) => {
            let id = error_id();
            let limit_s = limit.as_secs();
            tracing::error!(conversation = %key, error_id = %id, limit_s, "turn timed out");
            Err(TurnFailed::TimedOut { limit_s, id })
        }
    }
}

/// A short id that ties an apology to its log line.
pub(super) fn error_id() -> String {
    format!("E{:06X}", rand::random::<u32>() & 0xFF_FFFF)
}
