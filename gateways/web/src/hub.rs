//! The chat hub: who is waiting on which web conversation, and what the core
//! says there. Whatever talks to the assistant over the web (the
//! OpenAI-compatible API, a chat page) subscribes here *before* it hands its
//! message to the intake, then reads what the core delivers ([`Said`]) until
//! the message carrying [`TurnEnd`] comes.
//!
//! A subscription follows one conversation, either every message of it (a
//! page showing the whole chat) or only the replies to one message (an API
//! request waiting for its answer). The core's [`Deliver`](passepartout_gateway::Deliver)
//! and [`Draft`](passepartout_gateway::Draft) land in [`Hub::said`] and
//! [`Hub::drafted`], which hand a copy to every matching subscriber. Nobody
//! waiting is not a failure: the core has kept the turn in its history when
//! it committed it, so a client that went away finds it there, and the
//! outbox marks the reply delivered exactly once either way.
//!
//! An API request that ends while an approval it asked for still waits
//! asks the hub to keep what is said later in reply to its message and
//! heard by no one ([`Hub::keep_missed`]): the approval's outcome. The
//! client's next request in that conversation takes it
//! ([`Hub::take_missed`]) and its answer begins with it. Kept in memory
//! only, [`MISSED_PER_CHAT`] messages in at most [`MISSED_CHATS`]
//! conversations (the history keeps the outcome in any case).
//!
//! One short-held lock, never across `.await`; each subscriber has a bounded
//! queue, and one that stops reading for [`SEND_LIMIT`] is dropped rather
//! than hold up delivery to the others.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use passepartout_gateway::{ApprovalToken, ChatId, DraftText, MessageId, Outbound, OutboundBody, ReplyKind, TurnEnd};
use tokio::sync::mpsc;

/// Messages a subscriber may have unread before delivery waits for it.
const QUEUE: usize = 64;

/// How long delivery waits for a subscriber with a full queue before
/// dropping it.
pub const SEND_LIMIT: Duration = Duration::from_secs(5);

/// The most messages kept for a conversation nobody listened to.
pub const MISSED_PER_CHAT: usize = 32;

/// The most conversations messages are kept for; the one kept longest
/// gives way to a new one.
pub const MISSED_CHATS: usize = 256;

/// One thing the core said in a conversation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Heard {
    /// The message it answers, if any.
    pub in_reply_to: Option<MessageId>,
    /// What it said.
    pub said: Said,
    /// Set on the turn's last message.
    pub turn_end: Option<TurnEnd>,
}

/// What the core said.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Said {
    /// The reply being written: `text` is new since the last draft, or the
    /// whole draft again when `restart`.
    Draft {
        /// The text.
        text: String,
        /// The text replaces the draft.
        restart: bool,
    },
    /// A reply (Markdown), its kind saying whether it is the answer.
    Reply {
        /// The text.
        text: String,
        /// An answer, a notice or a failure.
        kind: ReplyKind,
    },
    /// An action waits for approval; `text` says how to answer.
    Approval {
        /// The token that answers it.
        token: ApprovalToken,
        /// The prompt.
        text: String,
    },
    /// A file from the assistant's workspace, by name; `outbound` is the
    /// id of the message that carries it.
    File {
        /// The file's name.
        name: String,
        /// What the assistant says of it.
        caption: Option<String>,
        /// The id of the message that carries it.
        outbound: String,
    },
    /// The turn was stopped; `partial` is what its draft showed.
    Stopped {
        /// What the draft showed.
        partial: String,
    },
    /// The turn ended with nothing to say.
    Nothing,
}

/// Who listens where.
#[derive(Default)]
pub struct Hub {
    inner: Arc<Mutex<Inner>>,
    next: AtomicU64,
}

#[derive(Default)]
struct Inner {
    by_chat: HashMap<ChatId, Vec<Subscriber>>,
    /// What was said in reply to a message, heard by no one, per
    /// conversation, with when the keeping began (to give way in order).
    missed: HashMap<ChatId, Missed>,
    /// Counts the keepings begun.
    kept: u64,
}

struct Missed {
    answering: MessageId,
    since: u64,
    heard: Vec<Heard>,
}

struct Subscriber {
    id: u64,
    /// Only replies to this message, or everything when none.
    answering: Option<MessageId>,
    queue: mpsc::Sender<Heard>,
}

/// A subscription: read it with [`Following::next`]; dropping it
/// unsubscribes.
pub struct Following {
    inner: Arc<Mutex<Inner>>,
    chat: ChatId,
    id: u64,
    queue: mpsc::Receiver<Heard>,
}

impl Following {
    /// The next thing said; none once the hub dropped this subscriber (it
    /// stopped reading) or the gateway closed.
    pub async fn next(&mut self) -> Option<Heard> {
        self.queue.recv().await
    }

    /// What was said and not yet read, without waiting.
    pub fn unread(&mut self) -> Vec<Heard> {
        std::iter::from_fn(|| self.queue.try_recv().ok()).collect()
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(subscribers) = inner.by_chat.get_mut(&self.chat) {
            subscribers.retain(|s| s.id != self.id);
            if subscribers.is_empty() {
                inner.by_chat.remove(&self.chat);
            }
        }
    }
}

impl Hub {
    /// Follows `chat`: every message of it, or only the replies to
    /// `answering`.
    pub fn follow(&self, chat: ChatId, answering: Option<MessageId>) -> Following {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let (queue, receiver) = mpsc::channel(QUEUE);
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner
            .by_chat
            .entry(chat.clone())
            .or_default()
            .push(Subscriber { id, answering, queue });
        Following {
            inner: self.inner.clone(),
            chat,
            id,
            queue: receiver,
        }
    }

    /// How many subscriptions are open.
    pub fn followers(&self) -> usize {
        let inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.by_chat.values().map(Vec::len).sum()
    }

    /// Hands `message` to whoever follows its conversation; how many took it.
    pub async fn said(&self, message: &Outbound) -> usize {
        let said = match &message.body {
            OutboundBody::Text { text, kind } => Said::Reply {
                text: text.clone(),
                kind: *kind,
            },
            OutboundBody::ApprovalPrompt { token, text, .. } => Said::Approval {
                token: token.clone(),
                text: text.clone(),
            },
            OutboundBody::File(file) => Said::File {
                name: file.name.clone(),
                caption: file.caption.clone(),
                outbound: message.id.clone(),
            },
            OutboundBody::Stopped { partial } => Said::Stopped {
                partial: partial.clone(),
            },
            OutboundBody::Withdraw => Said::Nothing,
            // The prompt it changes was shown as text; the outcome comes
            // in a message of its own.
            OutboundBody::ApprovalDecided { .. } => return 0,
            // Only relayed copies are edited, and the web chat is in no bridge.
            OutboundBody::Edit { .. } => return 0,
        };
        let heard = Heard {
            in_reply_to: message.in_reply_to.clone(),
            said,
            turn_end: message.turn_end,
        };
        self.tell(&message.conversation.chat, heard).await
    }

    /// Hands a draft to whoever follows `chat`.
    pub async fn drafted(&self, chat: &ChatId, draft: DraftText<'_>) -> usize {
        let (text, restart) = draft.news();
        let heard = Heard {
            in_reply_to: draft.in_reply_to.cloned(),
            said: Said::Draft {
                text: text.to_owned(),
                restart,
            },
            turn_end: None,
        };
        self.tell(chat, heard).await
    }

    /// Keeps what is said in `chat` in reply to `answering` and heard by
    /// no one, starting with `unread` (what a request read no more of),
    /// until [`Hub::take_missed`]; a later call for `chat` replaces it.
    pub fn keep_missed(&self, chat: ChatId, answering: MessageId, unread: Vec<Heard>) {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner.kept += 1;
        let since = inner.kept;
        if !inner.missed.contains_key(&chat)
            && inner.missed.len() >= MISSED_CHATS
            && let Some(oldest) = inner.missed.iter().min_by_key(|(_, m)| m.since).map(|(c, _)| c.clone())
        {
            inner.missed.remove(&oldest);
        }
        let mut heard = unread;
        heard.truncate(MISSED_PER_CHAT);
        inner.missed.insert(
            chat,
            Missed {
                answering,
                since,
                heard,
            },
        );
    }

    /// What was kept for `chat` since [`Hub::keep_missed`] or the last
    /// take, in order. The keeping goes on (an outcome may come in several
    /// messages, and later than the request that takes the first).
    pub fn take_missed(&self, chat: &ChatId) -> Vec<Heard> {
        let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        inner
            .missed
            .get_mut(chat)
            .map(|missed| std::mem::take(&mut missed.heard))
            .unwrap_or_default()
    }

    /// Ends every subscription (the gateway closes).
    pub fn close(&self) {
        self.inner
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .by_chat
            .clear();
    }

    async fn tell(&self, chat: &ChatId, heard: Heard) -> usize {
        let queues: Vec<(u64, mpsc::Sender<Heard>)> = {
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            let queues: Vec<_> = inner.by_chat.get(chat).map_or_else(Vec::new, |subscribers| {
                subscribers
                    .iter()
                    .filter(|s| s.answering.is_none() || s.answering == heard.in_reply_to)
                    .map(|s| (s.id, s.queue.clone()))
                    .collect()
            });
            if queues.is_empty() {
                if let Some(missed) = inner.missed.get_mut(chat)
                    && heard.in_reply_to.as_ref() == Some(&missed.answering)
                    && missed.heard.len() < MISSED_PER_CHAT
                {
                    missed.heard.push(heard);
                }
                return 0;
            }
            queues
        };
        // Every subscriber is offered the message at once, so stuck ones
        // hold delivery up for one `SEND_LIMIT` in all, not one each.
        let offers = queues.into_iter().map(|(id, queue)| {
            let heard = heard.clone();
            async move { (id, tokio::time::timeout(SEND_LIMIT, queue.send(heard)).await) }
        });
        let mut told = 0;
        let mut stuck = Vec::new();
        for (id, offered) in futures_util::future::join_all(offers).await {
            match offered {
                Ok(Ok(())) => told += 1,
                // Gone already: its drop unsubscribes it.
                Ok(Err(_)) => {}
                Err(_) => stuck.push(id),
            }
        }
        if !stuck.is_empty() {
            tracing::warn!(conversation = %chat, dropped = stuck.len(), "web subscribers that stopped reading were dropped");
            let mut inner = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(subscribers) = inner.by_chat.get_mut(chat) {
                subscribers.retain(|s| !stuck.contains(&s.id));
            }
        }
        told
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ConversationKey, GatewayId};

    use super::*;

    fn chat(name: &str) -> ChatId {
        ChatId::new(name).unwrap()
    }

    fn id(name: &str) -> MessageId {
        MessageId::new(name).unwrap()
    }

    fn reply(chat_name: &str, in_reply_to: &str, text: &str, end: bool) -> Outbound {
        Outbound {
            id: "1-0".into(),
            conversation: ConversationKey::new(GatewayId::new("web").unwrap(), chat(chat_name)),
            in_reply_to: Some(id(in_reply_to)),
            body: OutboundBody::Text {
                text: text.into(),
                kind: ReplyKind::Answer,
            },
            drafts: Vec::new(),
            turn_end: end.then_some(TurnEnd {
                tokens_in: 3,
                tokens_out: 2,
            }),
        }
    }

    #[tokio::test]
    async fn a_waiter_hears_only_the_replies_to_its_message_and_a_page_hears_all() {
        let hub = Hub::default();
        let mut waiter = hub.follow(chat("key-a"), Some(id("m1")));
        let mut page = hub.follow(chat("key-a"), None);
        let mut elsewhere = hub.follow(chat("key-b"), None);

        assert_eq!(hub.said(&reply("key-a", "m0", "old", true)).await, 1, "the page only");
        assert_eq!(hub.said(&reply("key-a", "m1", "hello", true)).await, 2);
        let heard = waiter.next().await.unwrap();
        assert_eq!(
            heard.said,
            Said::Reply {
                text: "hello".into(),
                kind: ReplyKind::Answer
            }
        );
        assert_eq!(heard.turn_end.unwrap().tokens_out, 2);
        assert!(matches!(page.next().await.unwrap().said, Said::Reply { text, .. } if text == "old"));
        assert!(matches!(page.next().await.unwrap().said, Said::Reply { text, .. } if text == "hello"));
        assert!(
            elsewhere.queue.try_recv().is_err(),
            "another conversation hears nothing"
        );
    }

    #[tokio::test]
    async fn drafts_carry_their_news_and_a_dropped_subscription_is_forgotten() {
        let hub = Hub::default();
        let mut waiter = hub.follow(chat("c"), Some(id("m1")));
        let answering = id("m1");
        let draft = DraftText {
            text: "Hello, world",
            grown_from: Some(5),
            in_reply_to: Some(&answering),
        };
        assert_eq!(hub.drafted(&chat("c"), draft).await, 1);
        assert_eq!(
            waiter.next().await.unwrap().said,
            Said::Draft {
                text: ", world".into(),
                restart: false
            }
        );
        drop(waiter);
        assert_eq!(hub.followers(), 0);
        assert_eq!(hub.said(&reply("c", "m1", "kept anyway", true)).await, 0);
    }

    #[tokio::test]
    async fn what_nobody_heard_in_reply_to_a_kept_message_waits_for_the_next_request() {
        let hub = Hub::default();
        let mut request = hub.follow(chat("c"), Some(id("m1")));
        hub.said(&reply("c", "m1", "needs approval", true)).await;
        hub.said(&reply("c", "m1", "read by no one", false)).await;
        request.next().await.unwrap();
        hub.keep_missed(chat("c"), id("m1"), request.unread());
        drop(request);
        assert_eq!(hub.said(&reply("c", "m1", "approved, and done", true)).await, 0);
        assert_eq!(hub.said(&reply("c", "m0", "another message's", true)).await, 0);
        let listening = hub.follow(chat("c"), None);
        assert_eq!(hub.said(&reply("c", "m1", "heard by a page", true)).await, 1);
        drop(listening);
        let missed: Vec<String> = hub
            .take_missed(&chat("c"))
            .into_iter()
            .map(|heard| match heard.said {
                Said::Reply { text, .. } => text,
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(missed, ["read by no one", "approved, and done"]);
        assert!(hub.take_missed(&chat("c")).is_empty(), "taken once");
        hub.said(&reply("c", "m1", "a later part", true)).await;
        assert_eq!(hub.take_missed(&chat("c")).len(), 1, "the keeping goes on");
        for n in 0..=MISSED_CHATS {
            hub.keep_missed(chat(&n.to_string()), id("m"), Vec::new());
        }
        assert_eq!(hub.inner.lock().unwrap().missed.len(), MISSED_CHATS);
        assert!(
            !hub.inner.lock().unwrap().missed.contains_key(&chat("0")),
            "the oldest gave way"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_subscriber_that_stops_reading_is_dropped_and_does_not_hold_up_the_others() {
        let hub = Hub::default();
        let mut stuck = hub.follow(chat("c"), None);
        for n in 0..QUEUE {
            hub.said(&reply("c", "m1", &n.to_string(), false)).await;
        }
        let mut fresh = hub.follow(chat("c"), None);
        assert_eq!(hub.said(&reply("c", "m1", "last", true)).await, 1, "only the fresh one");
        assert!(matches!(fresh.next().await.unwrap().said, Said::Reply { text, .. } if text == "last"));
        for _ in 0..QUEUE {
            stuck.next().await.unwrap();
        }
        assert_eq!(stuck.next().await, None, "dropped: its queue ends");
    }

    #[tokio::test(start_paused = true)]
    async fn many_stuck_subscribers_hold_delivery_up_once_not_each() {
        let hub = Hub::default();
        let stuck: Vec<Following> = (0..4).map(|_| hub.follow(chat("c"), None)).collect();
        for n in 0..QUEUE {
            hub.said(&reply("c", "m1", &n.to_string(), false)).await;
        }
        let started = tokio::time::Instant::now();
        assert_eq!(hub.said(&reply("c", "m1", "last", true)).await, 0);
        assert_eq!(started.elapsed(), SEND_LIMIT, "one wait for all four");
        assert_eq!(hub.followers(), 0, "all four dropped");
        drop(stuck);
    }
}
