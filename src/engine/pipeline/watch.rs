//! What the worker running a turn may watch of it while it runs: the
//! models' text as they write it (for a draft of the reply), and the rounds
//! of tool calls it has finished, which a `/stop` keeps.

use std::sync::{Arc, Mutex, PoisonError};

use crate::model::llm::{ChatMessage, Role, TextSink};
use crate::people::audit::AuditEvent;
use crate::store::MemoryWrite;

/// The watchers of one turn; none by default.
#[derive(Clone, Default)]
pub struct TurnWatch {
    /// Where the models' text goes as it is written.
    pub sink: Option<Arc<dyn TextSink>>,
    /// Kept up to date with the rounds the turn has finished.
    pub finished: Option<Arc<FinishedRounds>>,
}

impl TurnWatch {
    /// The turn has finished another round (or is about to start its
    /// first): `turn` is its transcript so far, `audit` and `memory` what
    /// its calls did. Kept only when someone watches.
    pub(super) fn finished_round(
        &self,
        turn: &[ChatMessage],
        audit: &[AuditEvent],
        memory: impl FnOnce() -> Vec<MemoryWrite>,
    ) {
        let Some(finished) = &self.finished else {
            return;
        };
        finished.record(Finished {
            messages: turn.iter().cloned().map(super::without_image_bytes).collect(),
            audit: audit.to_vec(),
            memory: memory(),
            calls: turn.iter().filter(|message| message.role == Role::Tool).count(),
        });
    }
}

/// The turn as far as its last finished round of tool calls: each call
/// answered by its result, so the transcript is whole, and what those calls
/// did (their audit events, the facts they remembered or forgot).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Finished {
    pub messages: Vec<ChatMessage>,
    pub audit: Vec<AuditEvent>,
    pub memory: Vec<MemoryWrite>,
    /// How many tool calls were answered (ran, or were refused by a gate).
    pub calls: usize,
}

/// The latest [`Finished`] of a running turn.
#[derive(Debug, Default)]
pub struct FinishedRounds(Mutex<Option<Finished>>);

impl FinishedRounds {
    /// The turn has finished another round; this is all it did so far.
    pub(super) fn record(&self, finished: Finished) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(finished);
    }

    /// What the turn had finished, if anything.
    pub fn take(&self) -> Option<Finished> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }
}
