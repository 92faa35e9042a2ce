//! A loop's iteration, run by its output conversation's worker so that it
//! keeps the conversation's order and history like any turn: a reminder's
//! text, or a task's turn through the pipeline. What it says goes through
//! the outbox. The loop hears back how it went; a failure (no model
//! answered, a panic, a timeout) is the loop's to retry, and nothing is
//! posted to the conversation about it.
//!
//! A job the loop no longer waits for (it was stopped or restarted while
//! the job was queued) is skipped. Once started, a job runs to the end —
//! the daemon's shutdown included — and stores the loop's next run in its
//! own commit, so a run that was kept is never made up again at a start.

use std::sync::Arc;
use std::time::Duration;

use passepartout_gateway::{ConversationKey, ReplyKind};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::Conversations;
use super::delivery;
use super::history::RecentHistory;
use super::worker::{commit_of, guarded};
use crate::llm::ChatMessage;
use crate::loops::schedules::Schedules;
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

/// Where a scheduled loop's next run is stored once an iteration committed.
pub struct NextRun {
    pub book: Arc<Schedules>,
    pub name: LoopName,
    /// The slot after this iteration; none when the schedule is spent.
    pub at_ms: Option<u64>,
}

impl std::fmt::Debug for NextRun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NextRun")
            .field("name", &self.name)
            .field("at_ms", &self.at_ms)
            .finish_non_exhaustive()
    }
}

/// A loop's iteration and where to report on it.
#[derive(Debug)]
pub struct LoopJob {
    pub work: LoopWork,
    /// Fires when the loop no longer wants this iteration.
    pub cancel: CancellationToken,
    /// For a scheduled loop: where its next run goes.
    pub next_run: Option<NextRun>,
    pub done: oneshot::Sender<Result<LoopDone, LoopFailed>>,
}

pub(super) async fn run(cx: &Arc<Conversations>, key: &ConversationKey, recent: &mut RecentHistory, job: LoopJob) {
    let LoopJob {
        work,
        cancel,
        next_run,
        done,
    } = job;
    if cancel.is_cancelled() || done.is_closed() {
        tracing::debug!(conversation = %key, "a loop's iteration was called off before it started");
        return;
    }
    let result = iterate(cx, key, recent, work, next_run).await;
    if let Err(LoopFailed(error)) = &result {
        tracing::warn!(conversation = %key, %error, "a loop's iteration failed");
    }
    // The loop may have been stopped meanwhile; nobody to tell then.
    let _ = done.send(result);
}

async fn iterate(
    cx: &Arc<Conversations>,
    key: &ConversationKey,
    recent: &mut RecentHistory,
    work: LoopWork,
    next_run: Option<NextRun>,
) -> Result<LoopDone, LoopFailed> {
    let (output, next_sleep) = match work {
        LoopWork::Say { name, text } => (said(&name, text), None),
        LoopWork::Task(prompt) => {
            let history = recent
                .load(&cx.store, key)
                .map_err(|error| LoopFailed(format!("cannot read the conversation's history: {error}")))?;
            let memory = MemorySession::with_limits(
                cx.store.clone(),
                &key.gateway,
                &LoopPrompt::sender(&prompt.name),
                cx.pipeline.memory_limits(),
            );
            let output = guarded(cx, key, cx.pipeline.run_loop(&prompt, history, memory))
                .await
                .map_err(LoopFailed)?;
            if let (Some(unanswered), None) = (&output.unanswered, &output.record) {
                return Err(LoopFailed(unanswered.clone()));
            }
            (output, prompt.turn.chosen())
        }
    };
    let cost = output.cost.clone();
    let (mut commit, record, followups) = commit_of(cx, None, None, output);
    if let Some(NextRun { book, name, at_ms }) = &next_run {
        commit.loop_record = book
            .next_run_write(name, *at_ms)
            .map_err(|error| LoopFailed(format!("cannot read the loop's record: {error}")))?;
    }
    let committed = cx.store.commit_turn_durably(key, commit).await;
    followups.run(cx, committed.is_ok());
    match committed {
        Ok(_) => recent.committed(false, record),
        Err(error) => {
            recent.invalidate();
            return Err(LoopFailed(format!("the store refused the iteration: {error}")));
        }
    }
    delivery::deliver(cx, key).await;
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
