//! A loop's iteration, run by its output conversation's worker so that it
//! keeps the conversation's order and history like any turn: a reminder's
//! text, or a task's turn through the pipeline. What it says goes through
//! the outbox. The loop hears back how it went; a failure (no model
//! answered, a panic, a timeout) is the loop's to retry, and nothing is
//! posted to the conversation about it.

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::{ConversationKey, ReplyKind};
use tokio::sync::oneshot;

use super::delivery;
use super::history::RecentHistory;
use super::worker::{commit_of, guarded};
use crate::core::Core;
use crate::llm::ChatMessage;
use crate::loops::spec::LoopName;
use crate::memory::MemorySession;
use crate::pipeline::{Cost, LoopPrompt, TurnOutput, TurnRecord};

/// What a loop asks of a conversation's worker.
#[derive(Debug)]
pub enum LoopWork {
    /// Send `text` as it is: a reminder.
    Say { name: LoopName, text: String },
    /// Run a task's prompt through the pipeline.
    Task(LoopPrompt),
}

/// How a loop's iteration went, as far as the loop is concerned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoopDone {
    pub cost: Cost,
    /// The sleep the model chose (`set_next_sleep`), within the bounds.
    pub next_sleep: Option<Duration>,
}

/// Why a loop's iteration did not finish; told to the loop, which backs off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct LoopFailed(pub String);

/// A loop's iteration and where to report on it.
#[derive(Debug)]
pub struct LoopJob {
    pub work: LoopWork,
    pub done: oneshot::Sender<Result<LoopDone, LoopFailed>>,
}

pub(super) async fn run(core: &Arc<Core>, key: &ConversationKey, recent: &mut RecentHistory, job: LoopJob) {
    let LoopJob { work, done } = job;
    let result = iterate(core, key, recent, work).await;
    if let Err(LoopFailed(error)) = &result {
        tracing::warn!(conversation = %key, %error, "a loop's iteration failed");
    }
    // The loop may have been stopped meanwhile; nobody to tell then.
    let _ = done.send(result);
}

async fn iterate(
    core: &Arc<Core>,
    key: &ConversationKey,
    recent: &mut RecentHistory,
    work: LoopWork,
) -> Result<LoopDone, LoopFailed> {
    let (output, next_sleep) = match work {
        LoopWork::Say { name, text } => (said(&name, text), None),
        LoopWork::Task(prompt) => {
            let history = recent
                .load(&core.store, key)
                .map_err(|error| LoopFailed(format!("cannot read the conversation's history: {error}")))?;
            let memory = MemorySession::with_limits(
                core.store.clone(),
                &key.gateway,
                &LoopPrompt::sender(&prompt.name),
                core.pipeline.memory_limits(),
            );
            let output = guarded(core, key, core.pipeline.run_loop(&prompt, history, memory))
                .await
                .map_err(LoopFailed)?;
            if let (Some(unanswered), None) = (&output.unanswered, &output.record) {
                return Err(LoopFailed(unanswered.clone()));
            }
            (output, prompt.turn.chosen())
        }
    };
    let cost = output.cost.clone();
    let (commit, record, followups) = commit_of(core, None, None, output);
    let committed = core.store.commit_turn_durably(key, commit).await;
    followups.run(core, committed.is_ok());
    match committed {
        Ok(_) => recent.committed(false, record),
        Err(error) => {
            recent.invalidate();
            return Err(LoopFailed(format!("the store refused the iteration: {error}")));
        }
    }
    delivery::deliver(core, key).await;
    Ok(LoopDone { cost, next_sleep })
}

/// A reminder's turn: its text, kept in the history as said by the loop.
fn said(name: &LoopName, text: String) -> TurnOutput {
    TurnOutput {
        record: Some(TurnRecord {
            messages: vec![
                ChatMessage::user(format!("[Reminder \"{name}\" is due.]")),
                ChatMessage::assistant(text.clone()),
            ],
        }),
        replies: vec![(ReplyKind::Notice, text)],
        ..TurnOutput::default()
    }
}
