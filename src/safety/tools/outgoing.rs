//! Files a turn sends to its conversation: `send_file` stages them here, and
//! they are committed with the turn's replies, so they reach the outbox (and
//! the person) exactly when the turn's answer does, and never for a turn
//! that failed to commit.

use std::sync::{Arc, Mutex, PoisonError};

use passepartout_gateway::OutboundFile;

/// One turn's staged files. Clones share them.
#[derive(Clone, Debug, Default)]
pub struct Outgoing {
    staged: Arc<Mutex<Vec<OutboundFile>>>,
}

impl Outgoing {
    /// Adds `file` to what the turn sends.
    pub fn stage(&self, file: OutboundFile) {
        self.staged.lock().unwrap_or_else(PoisonError::into_inner).push(file);
    }

    /// What was staged, in order; nothing is left staged.
    pub fn take(&self) -> Vec<OutboundFile> {
        std::mem::take(&mut *self.staged.lock().unwrap_or_else(PoisonError::into_inner))
    }
}
