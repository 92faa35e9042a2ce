//! The hand-off from an admin surface to the core: a bounded queue of
//! requests, each with a one-shot channel for its reply.
//!
//! [`Admin`] is the surface's end, cheap to clone; a surface that always
//! asks as one user holds it bound to that [`Asker`] as an [`AdminAs`].
//! The core owns the [`AdminQueue`] and answers every [`Asked`] it takes.
//! When the core stops serving (shutdown) every question, queued or new, is
//! answered [`AdminClosed`].

use thiserror::Error;
use tokio::sync::{mpsc, oneshot};

use crate::asker::Asker;
use crate::reply::AdminReply;
use crate::request::AdminRequest;

/// A request as the core receives it, with who asks and where its answer goes.
#[derive(Debug)]
pub struct Asked {
    /// What is asked.
    pub request: AdminRequest,
    /// Who asks, and from where.
    pub asker: Asker,
    /// Where the answer goes.
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

    /// Asks the core `request` as `asker` and waits for its answer.
    pub async fn ask(&self, asker: &Asker, request: AdminRequest) -> Result<AdminReply, AdminClosed> {
        let (reply, answer) = oneshot::channel();
        let asked = Asked {
            request,
            asker: asker.clone(),
            reply,
        };
        self.tx.send(asked).await.map_err(|_| AdminClosed)?;
        answer.await.map_err(|_| AdminClosed)
    }

    /// This handle, asking always as `asker`.
    pub fn asking_as(&self, asker: Asker) -> AdminAs {
        AdminAs {
            admin: self.clone(),
            asker,
        }
    }
}

/// An admin handle bound to the one user its surface asks as. Cheap to clone.
#[derive(Clone, Debug)]
pub struct AdminAs {
    admin: Admin,
    asker: Asker,
}

impl AdminAs {
    /// Asks the core `request` and waits for its answer.
    pub async fn ask(&self, request: AdminRequest) -> Result<AdminReply, AdminClosed> {
        self.admin.ask(&self.asker, request).await
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, UserId};
    use serde_json::json;

    use super::*;
    use crate::Via;

    fn owner() -> Asker {
        Asker {
            by: UserId::new("1000").unwrap(),
            via: Via::Terminal,
            conversation: ConversationKey::new(GatewayId::new("socket").unwrap(), ChatId::new("work").unwrap()),
        }
    }

    #[tokio::test]
    async fn ask_waits_for_the_cores_answer() {
        let (admin, mut queue) = Admin::channel(1);
        let core = tokio::spawn(async move {
            let asked = queue.recv().await.expect("a request");
            assert_eq!(asked.request, AdminRequest::Status);
            assert_eq!(asked.asker, owner());
            asked.reply.send(AdminReply::Status(json!({"up": true}))).unwrap();
        });
        assert_eq!(
            admin.asking_as(owner()).ask(AdminRequest::Status).await,
            Ok(AdminReply::Status(json!({"up": true})))
        );
        core.await.unwrap();
    }

    #[tokio::test]
    async fn a_request_the_core_dropped_is_answered_closed() {
        let (admin, mut queue) = Admin::channel(1);
        tokio::spawn(async move { drop(queue.recv().await) });
        assert_eq!(admin.ask(&owner(), AdminRequest::Loops).await, Err(AdminClosed));
    }

    #[tokio::test]
    async fn a_core_that_stopped_serving_answers_closed() {
        let (admin, queue) = Admin::channel(1);
        drop(queue);
        assert_eq!(admin.ask(&owner(), AdminRequest::Status).await, Err(AdminClosed));
    }
}
