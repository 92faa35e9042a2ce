//! Every kind of turn ends the same way: a hand-off carried over, which
//! once never delivered what went elsewhere, does now as a message's turn
//! does; and a message's turn delivers its answer here itself.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use passepartout_gateway::{
    ChatId, ConversationKey, Deliver, Delivered, GatewayError, GatewayId, Inbound, InboundBody, MessageId, Outbound,
    OutboundBody, ReplyKind, Sender, UserId,
};
use tokio::sync::Notify;

use super::{Answering, Ending, Extras, Said};
use crate::config::{PipelineConfig, StoreConfig};
use crate::engine::conversations::history::RecentHistory;
use crate::engine::conversations::{Conversations, Outlets, testing};
use crate::engine::pipeline::TurnOutput;
use crate::foundation::clock::testing::within_patience;
use crate::foundation::lifecycle::Lifecycle;
use crate::safety::approvals::Person;
use crate::store::{Accepted, AuditEvent, Audited, HandoffWrite, Identity, Store};

/// A gateway that takes everything, and records the texts it delivered.
#[derive(Default)]
struct Door {
    sent: Mutex<Vec<String>>,
    changed: Notify,
}

#[async_trait]
impl Deliver for Door {
    async fn deliver(&self, message: &Outbound) -> Result<Delivered, GatewayError> {
        let OutboundBody::Text { text, .. } = &message.body else {
            panic!("not a text: {:?}", message.body);
        };
        let mut sent = self.sent.lock().unwrap();
        let id = MessageId::new(format!("p{}", sent.len())).unwrap();
        sent.push(text.clone());
        self.changed.notify_waiters();
        Ok(Delivered { message_ids: vec![id] })
    }
}

impl Door {
    /// Waits until something was delivered; returns what was.
    async fn delivered(&self) -> Vec<String> {
        within_patience("delivery", async {
            loop {
                let changed = self.changed.notified();
                let sent = self.sent.lock().unwrap().clone();
                if !sent.is_empty() {
                    return sent;
                }
                changed.await;
            }
        })
        .await
    }
}

fn chat(gateway: &str, chat: &str) -> ConversationKey {
    ConversationKey::new(GatewayId::new(gateway).unwrap(), ChatId::new(chat).unwrap())
}

fn identity(gateway: &str, user: &str) -> Identity {
    Identity {
        gateway: GatewayId::new(gateway).unwrap(),
        user: UserId::new(user).unwrap(),
        aliases: Vec::new(),
        conversation: chat(gateway, user),
        at_ms: 1,
        names: Default::default(),
    }
}

/// Links the person's private chats on the socket and on Telegram, and
/// has what comes unasked go to Telegram.
fn link_to_telegram(store: &Store) {
    let (desk, phone) = (identity("socket", "1000"), identity("telegram", "9"));
    let said = Inbound {
        conversation: phone.conversation.clone(),
        sender: Sender::new(phone.user.clone()),
        message_id: MessageId::new("link").unwrap(),
        reply_to: None,
        body: InboundBody::Text { text: "link".into() },
        received_at_ms: 1,
        overheard: false,
        by_reply_only: false,
        client: None,
    };
    let event = |person| AuditEvent {
        at_ms: 1,
        conversation: phone.conversation.clone(),
        what: Audited::Linked {
            person,
            by: Person::of(&said),
            with: desk.label(),
        },
    };
    store.link("ABCDEFGH", &desk, &phone, event, &[]).unwrap();
    let person = store.linked_in(&desk.conversation).unwrap().expect("linked");
    store
        .prefer(person.id, &phone.conversation)
        .unwrap()
        .expect("preferred");
}

/// Conversations on a store in `dir` delivering through `socket` and
/// `telegram`.
fn conversations(dir: &std::path::Path, socket: &Arc<Door>, telegram: &Arc<Door>) -> Arc<Conversations> {
    let store = Store::open(&dir.join("store"), &StoreConfig::default()).unwrap();
    let deliver = [
        (GatewayId::new("socket").unwrap(), socket.clone() as Arc<dyn Deliver>),
        (
            GatewayId::new("telegram").unwrap(),
            telegram.clone() as Arc<dyn Deliver>,
        ),
    ];
    let outlets = Outlets {
        deliver: deliver.into(),
        ..Outlets::default()
    };
    testing::with_outlets(store, PipelineConfig::default(), Lifecycle::new(), outlets)
}

fn notice(text: &str) -> Said {
    Said::Output(Box::new(TurnOutput {
        replies: vec![(ReplyKind::Notice, text.to_owned())],
        ..TurnOutput::default()
    }))
}

#[tokio::test]
async fn a_hand_off_carried_over_delivers_what_follows_the_person_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, telegram) = (Arc::new(Door::default()), Arc::new(Door::default()));
    let cx = conversations(dir.path(), &socket, &telegram);
    link_to_telegram(&cx.store);
    let desk = chat("socket", "1000");
    let mut recent = RecentHistory::new(10, false);

    let ending = Ending {
        answering: Answering::Nothing,
        said: notice("carried over"),
        extras: Extras {
            handoff: Some(HandoffWrite::Done {
                to: desk.clone(),
                at_ms: 1,
            }),
            follows: true,
            ..Extras::default()
        },
    };
    ending.finish(&cx, &desk, &mut recent).await.unwrap();
    assert_eq!(telegram.delivered().await, ["carried over"], "it followed the person");
    assert!(socket.sent.lock().unwrap().is_empty(), "nothing stayed at the desk");
}

#[tokio::test]
async fn a_message_s_turn_delivers_its_answer_here_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let (socket, telegram) = (Arc::new(Door::default()), Arc::new(Door::default()));
    let cx = conversations(dir.path(), &socket, &telegram);
    let here = chat("socket", "alone");
    let inbound = Inbound {
        conversation: here.clone(),
        sender: Sender::new(UserId::new("1000").unwrap()),
        message_id: MessageId::new("m1").unwrap(),
        reply_to: None,
        body: InboundBody::Text { text: "hi".into() },
        received_at_ms: 1,
        overheard: false,
        by_reply_only: false,
        client: None,
    };
    let Accepted::New(seq) = cx.store.journal_accept(&inbound, 1).unwrap() else {
        panic!("journaled once");
    };
    let entry = cx.store.journal_entry(seq).unwrap().expect("journaled");
    let mut recent = RecentHistory::new(10, false);

    let ending = Ending {
        answering: Answering::Message(&entry),
        said: notice("hello"),
        extras: Extras::default(),
    };
    ending.finish(&cx, &here, &mut recent).await.unwrap();
    // Delivered before the tail returned: the worker waits for its own chat.
    assert_eq!(*socket.sent.lock().unwrap(), ["hello"]);
    assert!(cx.store.pending_for(&here).unwrap().is_empty(), "answered");
    assert!(telegram.sent.lock().unwrap().is_empty());
}
