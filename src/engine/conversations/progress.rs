//! Recording a split reply's parts as they go out, so that a retry or a
//! restart resumes at the first part not delivered.
//!
//! The gateway tells the [`PartRecorder`] of each part it sent; the recorder
//! writes the count and the part's platform id into the outbox entry and
//! waits until that is on disk before the gateway sends the next part. A
//! crash between two parts thus leaves the entry saying exactly which parts
//! the person has; only a crash between the platform's confirmation of a
//! part and its record can still show that one part twice.

use std::sync::{Mutex, PoisonError};

use async_trait::async_trait;
use passepartout_gateway::{GatewayError, MessageId, Progress};

use crate::store::{OutboxEntry, Store};

/// The progress of one outbox entry's delivery.
pub(super) struct PartRecorder<'a> {
    store: &'a Store,
    /// The entry as stored now.
    entry: Mutex<OutboxEntry>,
}

impl<'a> PartRecorder<'a> {
    pub(super) fn new(store: &'a Store, entry: OutboxEntry) -> Self {
        Self {
            store,
            entry: Mutex::new(entry),
        }
    }

    /// The entry with the progress recorded so far.
    pub(super) fn into_entry(self) -> OutboxEntry {
        self.entry.into_inner().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl Progress for PartRecorder<'_> {
    async fn part_sent(&self, index: u32, id: Option<&MessageId>) -> Result<(), GatewayError> {
        let current = self.entry.lock().unwrap_or_else(PoisonError::into_inner).clone();
        let recorded = self.store.outbox_part_sent(&current, index, id);
        let updated = recorded.map_err(|error| {
            tracing::error!(id = %current.outbound.id, index, %error, "cannot record a part sent; stopping");
            GatewayError::Closed
        })?;
        *self.entry.lock().unwrap_or_else(PoisonError::into_inner) = updated;
        self.store.durable().await.map_err(|error| {
            tracing::error!(id = %current.outbound.id, index, %error, "cannot keep a part sent on disk; stopping");
            GatewayError::Closed
        })
    }
}
