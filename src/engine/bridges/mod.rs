//! Bridges: group chats on different platforms joined into one
//! (`[[bridges]]`). What a person says in one appears in the others as
//! "**Ada** (Telegram): text", replying where they replied; the assistant,
//! asked there, answers on every side. Nothing but the configured chats is
//! ever relayed, and never what the assistant says for one person alone:
//! approval prompts and what follows once one is decided, command output,
//! pairing and link codes.
//!
//! Relaying goes through the journal and the outbox like everything else:
//! the source chat's worker commits the copies for the other chats in the
//! transaction that answers the message (see `relay`), so across a crash
//! each copy is in an outbox exactly once, in the order of its chat.

pub mod files;
pub mod relay;

use std::collections::HashMap;
use std::sync::Arc;

use passepartout_gateway::{ConversationKey, Inbound, InboundBody};

use crate::config::BridgeConfig;
use crate::people::Channels;
use crate::store::Relayed;
pub use files::Carrier;

/// One bridge: its name, and the chats it joins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bridge {
    pub name: String,
    pub chats: Vec<ConversationKey>,
}

impl Bridge {
    /// Its chats other than `chat`.
    pub fn others<'a>(&'a self, chat: &'a ConversationKey) -> impl Iterator<Item = &'a ConversationKey> {
        self.chats.iter().filter(move |other| *other != chat)
    }
}

/// Every bridge, found by any of its chats, and how files cross them.
#[derive(Default)]
pub struct Bridges {
    all: Vec<Arc<Bridge>>,
    by_chat: HashMap<ConversationKey, Arc<Bridge>>,
    /// None: files are named, not carried.
    carrier: Option<Carrier>,
    /// The gateways as people name them, in the copies' "(Telegram)".
    channels: Channels,
}

impl Bridges {
    /// The bridges `configured` (entries that do not read are left out:
    /// the configuration's check refuses them before the daemon starts).
    pub fn new(configured: &[BridgeConfig]) -> Self {
        let mut bridges = Self::default();
        for entry in configured {
            let Ok(chats) = entry.conversations() else {
                continue;
            };
            let bridge = Arc::new(Bridge {
                name: entry.name.clone(),
                chats,
            });
            for chat in &bridge.chats {
                bridges.by_chat.insert(chat.clone(), bridge.clone());
            }
            bridges.all.push(bridge);
        }
        bridges
    }

    /// Names the gateways in the copies as `channels` say.
    pub fn naming(self, channels: Channels) -> Self {
        Self { channels, ..self }
    }

    /// The gateways as people name them.
    pub fn channels(&self) -> &Channels {
        &self.channels
    }

    /// Carries files across by `carrier`.
    pub fn carrying(self, carrier: Carrier) -> Self {
        Self {
            carrier: Some(carrier),
            ..self
        }
    }

    /// The copies of the person's `inbound`, posted in `from`, for the
    /// other chats of its `bridge`: its photos and files carried, each
    /// within what the chat's platform takes.
    pub async fn copies(&self, bridge: &Bridge, from: &ConversationKey, inbound: &Inbound) -> Vec<Relayed> {
        let (Some(carrier), InboundBody::Media { attachments, caption }) = (&self.carrier, &inbound.body) else {
            return relay::person(bridge, from, inbound, &self.channels);
        };
        let to: Vec<ConversationKey> = bridge.others(from).cloned().collect();
        let who = relay::who(inbound, from, &self.channels);
        let relay = relay::relay_of(from, inbound);
        let mut copies = Vec::new();
        for (index, attachment) in attachments.iter().enumerate() {
            let caption = caption.as_deref().filter(|_| index == 0);
            let bodies = carrier.carry(from, attachment, &who, caption, &to).await;
            copies.extend(to.iter().zip(bodies).map(|(chat, body)| Relayed {
                to: chat.clone(),
                body,
                relay: relay.clone(),
            }));
        }
        copies
    }

    /// The bridge `chat` is in, if any.
    pub fn of(&self, chat: &ConversationKey) -> Option<&Bridge> {
        self.by_chat.get(chat).map(Arc::as_ref)
    }

    /// Every bridge, in the configuration's order.
    pub fn all(&self) -> impl Iterator<Item = &Bridge> {
        self.all.iter().map(Arc::as_ref)
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chat_finds_its_bridge_and_the_others() {
        let bridges = Bridges::new(&[BridgeConfig {
            name: "family".into(),
            chats: vec!["telegram:-100".into(), "signal:group:a=".into()],
        }]);
        let telegram = &bridges.all().next().unwrap().chats[0];
        let bridge = bridges.of(telegram).unwrap();
        assert_eq!(bridge.name, "family");
        let others: Vec<String> = bridge.others(telegram).map(ToString::to_string).collect();
        assert_eq!(others, ["signal:group:a="]);
        let elsewhere = ConversationKey::new(
            telegram.gateway.clone(),
            passepartout_gateway::ChatId::new("-200").unwrap(),
        );
        assert!(bridges.of(&elsewhere).is_none());
    }
}
