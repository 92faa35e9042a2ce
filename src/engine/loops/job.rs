//! A loop's iteration, run by its output conversation's worker as an
//! [`Errand`] so that it keeps the conversation's order and history like
//! any turn: a reminder's
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

use async_trait::async_trait;
use passepartout_gateway::ReplyKind;
use passepartout_gateway::markup::code;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::engine::conversations::{Errand, InWorker};
use crate::engine::loops::prompt::LoopPrompt;
use crate::engine::loops::schedules::Schedules;
use crate::engine::loops::spec::LoopName;
use crate::engine::pipeline::{Cost, TurnOutput, TurnRecord};
use crate::foundation::clock::schedule::Schedule;
use crate::model::llm::{ChatMessage, Note};

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
    /// The schedule this iteration ran by: a loop of the name started
    /// since with another is not given this one's next run.
    pub schedule: Schedule,
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

#[async_trait]
impl Errand for LoopJob {
    async fn run(self: Box<Self>, worker: &mut InWorker<'_>) {
        let LoopJob {
            work,
            cancel,
            next_run,
            done,
        } = *self;
        let key = worker.conversation();
        if cancel.is_cancelled() || done.is_closed() {
            tracing::debug!(conversation = %key, "a loop's iteration was called off before it started");
            return;
        }
        let result = iterate(worker, work, next_run).await;
        if let Err(LoopFailed(error)) = &result {
            tracing::warn!(conversation = %key, %error, "a loop's iteration failed");
        }
        // The loop may have been stopped meanwhile; nobody to tell then.
        let _ = done.send(result);
    }
}

async fn iterate(worker: &mut InWorker<'_>, work: LoopWork, next_run: Option<NextRun>) -> Result<LoopDone, LoopFailed> {
    let (output, next_sleep) = match work {
        LoopWork::Say { name, text } => (said(&name, text), None),
        LoopWork::Task(prompt) => {
            // From the loop (`loop:NAME`): the loop's own memory.
            let output = worker
                .run_background(prompt.turn())
                .await
                .map_err(|failed| LoopFailed(failed.to_string()))?;
            if let (Some(unanswered), None) = (&output.unanswered, &output.record) {
                return Err(LoopFailed(unanswered.clone()));
            }
            (output, prompt.turn.chosen())
        }
    };
    let cost = output.cost.clone();
    let loop_record = match &next_run {
        Some(NextRun {
            book,
            name,
            schedule,
            at_ms,
        }) => book
            .next_run_write(name, schedule, *at_ms)
            .map_err(|error| LoopFailed(format!("cannot read the loop's record: {error}")))?,
        None => None,
    };
    worker
        .commit(output, loop_record)
        .await
        .map_err(|error| LoopFailed(format!("the store refused the iteration: {error}")))?;
    Ok(LoopDone { cost, next_sleep })
}

/// A reminder's turn: its text, kept in the history as said by the loop.
fn said(name: &LoopName, text: String) -> TurnOutput {
    TurnOutput {
        record: Some(TurnRecord {
            messages: vec![
                ChatMessage::noted(
                    format!("[Reminder \"{name}\" is due.]"),
                    Note::event(format!("Reminder {} was due", code(&name.to_string()))),
                ),
                ChatMessage::assistant(text.clone()),
            ],
            at_ms: None,
            by: None,
        }),
        replies: vec![(ReplyKind::Notice, text)],
        ..TurnOutput::default()
    }
}
