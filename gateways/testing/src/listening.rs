//! A gateway's `listen` running in a task, with the intake queue it feeds
//! and a way to stop it that fails the test when it does not stop.

use std::sync::Arc;

use passepartout_gateway::{GatewayError, Intake, IntakeQueue, Listen};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::within;

/// A gateway listening in a task of its own.
pub struct Listening<G> {
    /// The gateway, shared with its task, for the test to deliver through or look at.
    pub gateway: Arc<G>,
    /// Cancelled to make `listen` return.
    pub shutdown: CancellationToken,
    /// The task running `listen`, ending with what it returned.
    pub task: JoinHandle<Result<(), GatewayError>>,
}

impl<G: Listen + 'static> Listening<G> {
    /// Starts `gateway` listening into an intake of `capacity`; the test
    /// serves the returned queue.
    pub fn start(gateway: Arc<G>, capacity: usize) -> (Self, IntakeQueue) {
        let (intake, queue) = Intake::channel(capacity);
        let shutdown = CancellationToken::new();
        let task = tokio::spawn({
            let gateway = Arc::clone(&gateway);
            let shutdown = shutdown.clone();
            async move { gateway.listen(intake, shutdown).await }
        });
        let listening = Self {
            gateway,
            shutdown,
            task,
        };
        (listening, queue)
    }

    /// Cancels the shutdown token and waits for `listen` to return.
    pub async fn stop(self) -> Result<(), GatewayError> {
        self.shutdown.cancel();
        within(self.task).await.expect("listen does not panic")
    }
}
