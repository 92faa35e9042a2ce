//! What the admin path needs of the background loops ([`LoopDesk`]), so it
//! does not depend on where the daemon keeps them.

use async_trait::async_trait;

use crate::engine::loops::daemon::Loops;
use crate::engine::loops::schedules::{BookError, NextTime};
use crate::engine::loops::status::LoopStatus;

/// The loop operations the machine's owner may ask for.
#[async_trait]
pub trait LoopDesk: Send + Sync {
    /// Every loop's status, by name; none before the loops run.
    fn statuses(&self) -> Vec<LoopStatus>;
    /// Stops loop `name` until it is started again: a stored loop is
    /// forgotten too, so unless started again it does not come back at the
    /// next start.
    async fn stop(&self, name: &str) -> Result<(), BookError>;
    /// Starts loop `name` again, stopped on request, from its next time on.
    async fn start(&self, name: &str) -> Result<NextTime, BookError>;
    /// Runs loop `name` now: a sleeping loop wakes early, a loop waiting for
    /// a trigger runs.
    fn trigger(&self, name: &str) -> Result<(), BookError>;
}

#[async_trait]
impl LoopDesk for Loops {
    fn statuses(&self) -> Vec<LoopStatus> {
        Loops::statuses(self)
    }

    async fn stop(&self, name: &str) -> Result<(), BookError> {
        Loops::stop(self, name).await
    }

    async fn start(&self, name: &str) -> Result<NextTime, BookError> {
        Loops::start_again(self, name).await
    }

    fn trigger(&self, name: &str) -> Result<(), BookError> {
        Loops::trigger(self, name)
    }
}
