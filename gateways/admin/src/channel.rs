//! The hand-off from an admin surface to the core: a bounded queue of
//! requests, each with a one-shot channel for its reply.
//!
//! [`Admin`] is the surface's end, cheap to clone; the core owns the
//! [`AdminQueue`] and answers every [`Asked`] it takes. When the core stops
//! serving (shutdown) every question, queued or new, is answered
//! [`AdminClosed`].

use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

use crate::reply::AdminReply;
use crate::request::AdminRequest;

/// A request as the core receives it, with where its answer goes.
#[derive(Debug)]
pub struct Asked {
    pub request: AdminRequest,
    pub reply: oneshot::Sender<AdminReply>,
}

/// The core no longer answers admin requests (it is shutting down).
#[derive(Debug, Error, Clone, Copy, PartialEq, Eq)]
#[error("the daemon is shutting down and answers no more requests")]
pub struct AdminClosed;

/// An admin surface's handle on the core. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Admin {
    tx: mpsc::Sender<Asked>,
}

/// The core's end of the admin queue.
pub type AdminQueue = mpsc::Receiver<Asked>;

impl Admin {
    /// A bounded admin queue: `capacity` requests wait at most; further
    /// askers wait for room.
    pub fn channel(capacity: usize) -> (Admin, AdminQueue) {
        let (tx, rx) = mpsc::channel(capacity);
        (Admin { tx }, rx)
    }

    /// Asks the core `request` and waits for its answer.
    pub async fn ask(&self, request: AdminRequest) -> Result<AdminReply, AdminClosed> {
        let (reply, answer) = oneshot::channel();
        self.tx.send(Asked { request, reply }).await.map_err(|_| AdminClosed)?;
        answer.await.map_err(|_| AdminClosed)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[tokio::test]
    async fn ask_waits_for_the_cores_answer() {
        let (admin, mut queue) = Admin::channel(1);
        let core = tokio::spawn(async move {
            let asked = queue.recv().await.expect("a request");
            assert_eq!(asked.request, AdminRequest::Status);
            asked.reply.send(AdminReply::Status(json!({"up": true}))).unwrap();
        });
        assert_eq!(
            admin.ask(AdminRequest::Status).await,
            Ok(AdminReply::Status(json!({"up": true})))
        );
        core.await.unwrap();
    }

    #[tokio::test]
    async fn a_request_the_core_dropped_is_answered_closed() {
        let (admin, mut queue) = Admin::channel(1);
        tokio::spawn(async move { drop(queue.recv().await) });
        assert_eq!(admin.ask(AdminRequest::Loops).await, Err(AdminClosed));
    }

    #[tokio::test]
    async fn a_core_that_stopped_serving_answers_closed() {
        let (admin, queue) = Admin::channel(1);
        drop(queue);
        assert_eq!(admin.ask(AdminRequest::Status).await, Err(AdminClosed));
    }
}
