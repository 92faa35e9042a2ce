//! The daemon's lifecycle: the one [`TaskTracker`] every task it spawns is
//! tracked by, so shutdown can wait for them, and the drain token, cancelled
//! when shutdown reaches the running work, which each task watches to
//! finish what it is doing and stop.
//!
//! The daemon builds one [`Lifecycle`] and hands a clone to each part that
//! spawns tasks or watches for the drain (the conversations' workers and
//! deliveries, the intake, the loops, the background tasks); only the
//! daemon [`drain`](Lifecycle::drain)s it. It sits at the bottom of the core
//! and imports nothing of it.

use std::future::Future;
use std::time::Duration;

use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The tracker of the daemon's tasks and its drain token; clones share both.
#[derive(Clone, Default)]
pub struct Lifecycle {
    /// Every task the daemon spawns, so shutdown can wait for them.
    tracker: TaskTracker,
    /// Cancelled at shutdown: tasks finish their current work and stop.
    draining: CancellationToken,
}

impl Lifecycle {
    pub fn new() -> Self {
        Self::default()
    }

    /// Spawns `task`, tracked: [`Lifecycle::drain`] waits for it.
    pub fn spawn<F>(&self, task: F) -> JoinHandle<F::Output>
    where
        F: Future + Send + 'static,
        F::Output: Send + 'static,
    {
        self.tracker.spawn(task)
    }

    /// The tracker itself, for a part that spawns on it in other ways (on
    /// the blocking pool, say).
    pub fn tracker(&self) -> &TaskTracker {
        &self.tracker
    }

    /// The drain token, for a task to wait on (or for a part to make child
    /// tokens of).
    pub fn draining(&self) -> &CancellationToken {
        &self.draining
    }

    /// Whether the daemon is draining: no new work should start.
    pub fn is_draining(&self) -> bool {
        self.draining.is_cancelled()
    }

    /// Tells every task to finish and stop, and waits up to `grace` for them
    /// all to end; whether they did. Tasks spawned while it waits are waited
    /// for too.
    #[must_use = "tasks still running after the grace period are worth a warning"]
    pub async fn drain(&self, grace: Duration) -> bool {
        self.draining.cancel();
        self.tracker.close();
        tokio::time::timeout(grace, self.tracker.wait()).await.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_drain_waits_for_the_tasks_that_watch_it() {
        let lifecycle = Lifecycle::new();
        let watching = lifecycle.clone();
        let finished = lifecycle.spawn(async move {
            watching.draining().cancelled().await;
            // Finishing its work takes a while, within the grace period.
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
        assert!(!lifecycle.is_draining());
        assert!(lifecycle.drain(Duration::from_secs(10)).await, "the task ended in time");
        assert!(lifecycle.is_draining());
        assert!(finished.is_finished());
    }

    #[tokio::test(start_paused = true)]
    async fn a_drain_gives_up_on_a_task_after_the_grace_period() {
        let lifecycle = Lifecycle::new();
        let stuck = lifecycle.spawn(std::future::pending::<()>());
        assert!(!lifecycle.drain(Duration::from_secs(10)).await, "the task never ends");
        assert!(!stuck.is_finished());
        stuck.abort();
    }
}
