//! A scripted gateway for the media tests: the test hands it messages
//! (media by reference, as a real gateway journals them), it submits each to
//! the daemon's intake and reports the ack, fetches the files it was given
//! through the contract's `Fetch`, and records every reply delivered. It is
//! plugged into a real daemon as an extension, beside the socket.
#![allow(dead_code)] // every including target uses a different part of it

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use passepartout::Extensions;
use passepartout::gateways::{BuildContext, BuildError, Built, Checked, GatewayComponent, Roster, SecretPlaces};
use passepartout_gateway::{
    Ack, Attachment, ChatId, ConversationKey, Deliver, Delivered, Fetch, Fetched, FileRef, GatewayError, GatewayId,
    Inbound, InboundBody, Intake, Listen, MediaKind, MessageId, Outbound, OutboundBody, ReplyKind, Sender, UserId,
};
use tokio::sync::{Notify, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// The gateway's id.
pub const GATEWAY: &str = "scripted";

type Handed = (Inbound, oneshot::Sender<Ack>);

/// The gateway; clones share it.
#[derive(Clone)]
pub struct MediaGateway {
    inner: Arc<Inner>,
}

struct Inner {
    hand: mpsc::Sender<Handed>,
    queue: tokio::sync::Mutex<mpsc::Receiver<Handed>>,
    files: Mutex<HashMap<String, Vec<u8>>>,
    fetched: Mutex<Vec<String>>,
    delivered: Mutex<Vec<Outbound>>,
    arrived: Notify,
    next_id: Mutex<u64>,
}

impl Default for MediaGateway {
    fn default() -> Self {
        let (hand, queue) = mpsc::channel(16);
        Self {
            inner: Arc::new(Inner {
                hand,
                queue: tokio::sync::Mutex::new(queue),
                files: Mutex::default(),
                fetched: Mutex::default(),
                delivered: Mutex::default(),
                arrived: Notify::new(),
                next_id: Mutex::new(0),
            }),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl MediaGateway {
    /// The daemon's extensions: this gateway and its fetcher.
    pub fn extensions(&self) -> Extensions {
        Extensions {
            gateways: vec![Box::new(Component(self.clone()))],
            ..Extensions::default()
        }
    }

    /// Puts a file on the "platform" under `file`.
    pub fn put_file(&self, file: &str, bytes: impl Into<Vec<u8>>) {
        lock(&self.inner.files).insert(file.to_owned(), bytes.into());
    }

    /// The files fetched so far, by reference.
    pub fn fetched(&self) -> Vec<String> {
        lock(&self.inner.fetched).clone()
    }

    /// Hands `attachments` with `caption` in, as a person in chat `chat`;
    /// returns the message id once the daemon acknowledged it.
    pub async fn send_media(&self, chat: &str, attachments: Vec<Attachment>, caption: Option<&str>) -> MessageId {
        let body = InboundBody::Media {
            attachments,
            caption: caption.map(str::to_owned),
        };
        self.send(chat, body).await
    }

    /// Hands a text in.
    pub async fn send_text(&self, chat: &str, text: &str) -> MessageId {
        self.send(chat, InboundBody::Text { text: text.into() }).await
    }

    /// Hands media in and returns the daemon's answer, whatever it is.
    pub async fn offer_media(&self, chat: &str, attachments: Vec<Attachment>, caption: Option<&str>) -> Ack {
        let body = InboundBody::Media {
            attachments,
            caption: caption.map(str::to_owned),
        };
        self.hand_in(chat, body).await.1
    }

    async fn send(&self, chat: &str, body: InboundBody) -> MessageId {
        let (message_id, ack) = self.hand_in(chat, body).await;
        assert_eq!(ack, Ack::Accepted);
        message_id
    }

    async fn hand_in(&self, chat: &str, body: InboundBody) -> (MessageId, Ack) {
        let number = {
            let mut next = lock(&self.inner.next_id);
            *next += 1;
            *next
        };
        let message_id = MessageId::new(format!("m{number}")).unwrap();
        let inbound = Inbound {
            conversation: ConversationKey::new(id(), ChatId::new(chat).unwrap()),
            sender: Sender::new(UserId::new("person").unwrap()),
            message_id: message_id.clone(),
            reply_to: None,
            body,
            received_at_ms: passepartout_gateway::unix_ms(),
            overheard: false,
            by_reply_only: false,
            client: None,
        };
        let (ack, acked) = oneshot::channel();
        self.inner.hand.send((inbound, ack)).await.expect("the gateway listens");
        let ack = tokio::time::timeout(Duration::from_secs(20), acked)
            .await
            .expect("acknowledged in time")
            .expect("the gateway reports the ack");
        (message_id, ack)
    }

    /// Every reply to `message` up to the first that is not a notice.
    pub async fn replies(&self, message: &MessageId) -> Vec<(ReplyKind, String)> {
        self.replies_when(message, "no final reply", |replies| {
            let last = replies.iter().position(|(kind, _)| *kind != ReplyKind::Notice)?;
            Some(replies[..=last].to_vec())
        })
        .await
    }

    /// Every reply to `message` delivered once `count` of them arrived.
    pub async fn replies_counted(&self, message: &MessageId, count: usize) -> Vec<(ReplyKind, String)> {
        let what = format!("fewer than {count} replies");
        self.replies_when(message, &what, |replies| {
            (replies.len() >= count).then(|| replies.to_vec())
        })
        .await
    }

    /// What `done` makes of the text replies to `message` so far, waiting
    /// for each delivery until it makes something; fails the test as `what`
    /// after 20 s.
    async fn replies_when(
        &self,
        message: &MessageId,
        what: &str,
        done: impl Fn(&[(ReplyKind, String)]) -> Option<Vec<(ReplyKind, String)>>,
    ) -> Vec<(ReplyKind, String)> {
        let wait = async {
            loop {
                let arrived = self.inner.arrived.notified();
                let replies: Vec<(ReplyKind, String)> = lock(&self.inner.delivered)
                    .iter()
                    .filter(|out| out.in_reply_to.as_ref() == Some(message))
                    .filter_map(|out| match &out.body {
                        OutboundBody::Text { text, kind } => Some((*kind, text.clone())),
                        _ => None,
                    })
                    .collect();
                if let Some(found) = done(&replies) {
                    return found;
                }
                arrived.await;
            }
        };
        tokio::time::timeout(Duration::from_secs(20), wait)
            .await
            .unwrap_or_else(|_| panic!("{what} to {message} within 20 s"))
    }
}

/// An attachment of `kind` fetched as `file`.
pub fn attachment(kind: MediaKind, file: &str) -> Attachment {
    Attachment {
        kind,
        file: FileRef(file.into()),
        mime: None,
        size: None,
        name: None,
        duration_s: None,
    }
}

pub fn id() -> GatewayId {
    GatewayId::new(GATEWAY).unwrap()
}

#[async_trait]
impl Listen for MediaGateway {
    fn id(&self) -> GatewayId {
        id()
    }

    async fn listen(&self, intake: Intake, shutdown: CancellationToken) -> Result<(), GatewayError> {
        let mut queue = self.inner.queue.lock().await;
        loop {
            let (inbound, ack) = tokio::select! {
                _ = shutdown.cancelled() => return Ok(()),
                handed = queue.recv() => match handed {
                    Some(handed) => handed,
                    None => return Ok(()),
                },
            };
            let answer = intake.submit(inbound).await.map_err(|_| GatewayError::Closed)?;
            let _ = ack.send(answer);
        }
    }
}

#[async_trait]
impl Deliver for MediaGateway {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        lock(&self.inner.delivered).push(message.clone());
        self.inner.arrived.notify_waiters();
        Ok(Delivered::default())
    }
}

#[async_trait]
impl Fetch for MediaGateway {
    async fn fetch(&self, file: &FileRef, max_bytes: u64) -> Result<Fetched, GatewayError> {
        lock(&self.inner.fetched).push(file.0.clone());
        let Some(bytes) = lock(&self.inner.files).get(&file.0).cloned() else {
            return Err(GatewayError::Transient {
                reason: format!("no file {}", file.0),
            });
        };
        if bytes.len() as u64 > max_bytes {
            return Err(GatewayError::TooLarge {
                size: Some(bytes.len() as u64),
                limit: max_bytes,
            });
        }
        Ok(Fetched { bytes, mime: None })
    }
}

/// The gateway as a daemon component: everyone may talk and approve.
struct Component(MediaGateway);

#[async_trait]
impl GatewayComponent for Component {
    fn id(&self) -> GatewayId {
        id()
    }

    fn enabled(&self) -> bool {
        true
    }

    fn talkers(&self) -> Roster {
        Roster::Everyone
    }

    fn deciders(&self) -> Roster {
        Roster::Everyone
    }

    fn surface(&self) -> passepartout_gateway::Surface {
        passepartout_gateway::Surface::TEXT
    }

    fn secrets(&self) -> SecretPlaces {
        SecretPlaces::default()
    }

    async fn build(&self, _with: &BuildContext) -> Result<Built, BuildError> {
        Ok(Built {
            listen: Arc::new(self.0.clone()),
            deliver: Arc::new(self.0.clone()),
            fetch: Some(Arc::new(self.0.clone())),
            local_path: None,
            draft: None,
        })
    }

    async fn check(&self) -> Option<Checked> {
        None
    }
}
