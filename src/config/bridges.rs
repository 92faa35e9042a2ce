//! `[[bridges]]`: group chats on different platforms joined into one, so
//! that a family or a team split between a Telegram group and a Signal group
//! can talk across. Each entry names two or more conversations
//! (`gateway:chat`, as `passepartout` names them everywhere) on at least
//! two gateways; nothing else is ever relayed. A chat is in one bridge at
//! most. Whether each chat may talk on its gateway at all is checked with
//! the gateways' rosters (`gateways::problems`), which know them.
//!
//! A change waits for a restart: the gateways are started knowing which of
//! their chats are bridged.

use std::collections::HashSet;

use passepartout_gateway::{ChatId, ConversationKey, GatewayId};
use serde::{Deserialize, Serialize};

use super::Problems;

/// One `[[bridges]]` entry.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BridgeConfig {
    /// Shown in `status` and the web overview.
    pub name: String,
    /// The conversations joined: `telegram:-100…`, `signal:group:…`.
    pub chats: Vec<String>,
}

impl BridgeConfig {
    /// The conversations joined, or why `chat` names none.
    pub fn conversations(&self) -> Result<Vec<ConversationKey>, String> {
        self.chats.iter().map(|chat| conversation(chat)).collect()
    }
}

/// The chats on `gateway` that `bridges` join to others (entries that do
/// not read are left out: the configuration's check names them).
pub fn bridged_on(bridges: &[BridgeConfig], gateway: &str) -> Vec<ChatId> {
    bridges
        .iter()
        .filter_map(|bridge| bridge.conversations().ok())
        .flatten()
        .filter(|conversation| conversation.gateway.as_str() == gateway)
        .map(|conversation| conversation.chat)
        .collect()
}

/// `gateway:chat` as a conversation.
fn conversation(text: &str) -> Result<ConversationKey, String> {
    let (gateway, chat) = text
        .split_once(':')
        .ok_or_else(|| format!("\"{text}\" is not gateway:chat (e.g. telegram:-1001234567890)"))?;
    let gateway = GatewayId::new(gateway).map_err(|error| format!("\"{text}\": {error}"))?;
    let chat = ChatId::new(chat).map_err(|error| format!("\"{text}\": {error}"))?;
    Ok(ConversationKey::new(gateway, chat))
}

/// Notes what is wrong with the `[[bridges]]` entries by themselves.
pub fn check(bridges: &[BridgeConfig], problems: &mut Problems) {
    let mut names = HashSet::new();
    let mut taken = HashSet::new();
    for (index, bridge) in bridges.iter().enumerate() {
        let label = if bridge.name.trim().is_empty() {
            problems.push(format!("bridges[{index}].name must not be empty"));
            format!("bridges[{index}]")
        } else {
            if !names.insert(bridge.name.as_str()) {
                problems.push(format!("bridges: the name \"{}\" is used twice", bridge.name));
            }
            format!("bridge \"{}\"", bridge.name)
        };
        let conversations = match bridge.conversations() {
            Ok(conversations) => conversations,
            Err(error) => {
                problems.push(format!("{label}: {error}"));
                continue;
            }
        };
        let gateways: HashSet<&GatewayId> = conversations.iter().map(|c| &c.gateway).collect();
        problems.check(
            conversations.len() >= 2 && gateways.len() >= 2,
            format!(
                "{label} must join chats on two gateways at least (it names {} on {})",
                conversations.len(),
                gateways.len()
            ),
        );
        for conversation in &conversations {
            if !taken.insert(conversation.clone()) {
                problems.push(format!(
                    "{label}: {conversation} is in another bridge already (or twice in this one)"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bridge(name: &str, chats: &[&str]) -> BridgeConfig {
        BridgeConfig {
            name: name.into(),
            chats: chats.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    fn problems(bridges: &[BridgeConfig]) -> Vec<String> {
        let mut problems = Problems::default();
        check(bridges, &mut problems);
        problems.into_vec()
    }

    #[test]
    fn a_bridge_of_two_gateways_is_fine() {
        let family = bridge("family", &["telegram:-100123", "signal:group:abc="]);
        assert!(problems(std::slice::from_ref(&family)).is_empty());
        let chats = family.conversations().unwrap();
        assert_eq!(chats[1].chat.as_str(), "group:abc=");
    }

    #[test]
    fn each_mistake_is_named() {
        let found = problems(&[
            bridge("", &["telegram:-1", "signal:group:a"]),
            bridge("same", &["telegram:-1", "telegram:-2"]),
            bridge("same", &["nothing"]),
            bridge("alone", &["telegram:-3"]),
        ]);
        assert_eq!(
            found,
            [
                "bridges[0].name must not be empty",
                "bridge \"same\" must join chats on two gateways at least (it names 2 on 1)",
                "bridge \"same\": telegram:-1 is in another bridge already (or twice in this one)",
                "bridges: the name \"same\" is used twice",
                "bridge \"same\": \"nothing\" is not gateway:chat (e.g. telegram:-1001234567890)",
                "bridge \"alone\" must join chats on two gateways at least (it names 1 on 1)",
            ]
        );
    }
}
