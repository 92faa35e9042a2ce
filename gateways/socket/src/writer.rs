//! The task that owns a connection's write half.
//!
//! Everything bound for one client — answers to its frames and deliveries
//! from the core — goes through one bounded queue to this task, so frames
//! never interleave and a slow client is noticed in one place: a write that
//! does not finish within [`WRITE_TIMEOUT`] ends the connection.

use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::protocol::{ServerFrame, encode_line};

/// How long one frame may take to write before the client counts as gone.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

/// How many frames may wait for one connection's writer.
pub(crate) const OUTBOX_CAPACITY: usize = 64;

/// A frame to write, and whom to tell once it is written and flushed.
#[derive(Debug)]
pub(crate) struct Outgoing {
    pub frame: ServerFrame,
    pub written: Option<oneshot::Sender<()>>,
}

impl Outgoing {
    pub fn frame(frame: ServerFrame) -> Self {
        Self { frame, written: None }
    }

    /// A frame and the receiver that resolves once it is written; it is
    /// dropped unresolved when the connection fails first.
    pub fn confirmed(frame: ServerFrame) -> (Self, oneshot::Receiver<()>) {
        let (tx, rx) = oneshot::channel();
        (
            Self {
                frame,
                written: Some(tx),
            },
            rx,
        )
    }
}

/// Writes queued frames until the queue closes (the reader ended: what is
/// queued is still written) or `done` fires (the connection is torn down).
/// Cancels `done` on the way out so the reader stops too.
pub(crate) async fn write_loop(
    mut half: OwnedWriteHalf,
    mut outbox: mpsc::Receiver<Outgoing>,
    done: CancellationToken,
) {
    loop {
        let next = tokio::select! {
            biased;
            () = done.cancelled() => break,
            next = outbox.recv() => next,
        };
        let Some(Outgoing { frame, written }) = next else {
            break;
        };
        let line = match encode_line(&frame) {
            Ok(line) => line,
            Err(error) => {
                tracing::error!(%error, "cannot encode a frame; dropping it");
                continue;
            }
        };
        let write = async {
            half.write_all(&line).await?;
            half.flush().await
        };
        let outcome = tokio::select! {
            biased;
            () = done.cancelled() => break,
            outcome = tokio::time::timeout(WRITE_TIMEOUT, write) => outcome,
        };
        match outcome {
            Ok(Ok(())) => {
                if let Some(written) = written {
                    let _ = written.send(());
                }
            }
            Ok(Err(error)) => {
                tracing::debug!(%error, "socket client went away");
                break;
            }
            Err(_) => {
                tracing::warn!(
                    timeout_s = WRITE_TIMEOUT.as_secs(),
                    "socket client stopped reading; closing it"
                );
                break;
            }
        }
    }
    done.cancel();
}
