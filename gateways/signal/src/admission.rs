//! On a person's own account, which messages reach the core at all.
//!
//! A dedicated number hands the core everything it can read, and the core
//! decides: an allowed sender is answered, a stranger refused or offered a
//! pairing code. On a person's own account that would be a disaster: their
//! friends, family and groups write to that account, and none of them must
//! ever reach a model, nor get a refusal or a pairing code from the
//! person's number. So there, the gateway itself lets through only the
//! Note-to-Self conversation and the senders and groups the configuration
//! names ([`Admitted`]), and drops everything else before the core sees it,
//! without a word back; only a link code overheard anywhere is let through,
//! which the core voids and answers nothing.

use std::collections::HashSet;

use passepartout_gateway::{Inbound, InboundBody};

use crate::normalize::{GROUP_PREFIX, note_to_self_chat};
use crate::settings::{Admitted, SignalSettings};

/// The gateway's filter in front of the core.
#[derive(Clone, Debug)]
pub enum Admission {
    /// A dedicated number: the core decides about everything.
    Everything,
    /// A person's own account: only these reach the core.
    Only {
        /// The Note-to-Self conversation's chat.
        note_to_self: String,
        /// Senders, by UUID or number (matched against the sender's id and aliases).
        senders: HashSet<String>,
        /// Conversations of the groups listed, as chats (`group:ID`).
        groups: HashSet<String>,
    },
}

impl Admission {
    /// The filter `settings` ask for.
    pub fn of(settings: &SignalSettings) -> Self {
        if !settings.note_to_self {
            return Self::Everything;
        }
        let Admitted { senders, groups } = &settings.admitted;
        Self::Only {
            note_to_self: note_to_self_chat(&settings.account),
            senders: senders.iter().cloned().collect(),
            groups: groups.iter().map(|group| format!("{GROUP_PREFIX}{group}")).collect(),
        }
    }

    /// Whether `inbound` may be handed to the core.
    pub fn admits(&self, inbound: &Inbound) -> bool {
        match self {
            Self::Everything => true,
            Self::Only {
                note_to_self,
                senders,
                groups,
            } => {
                if names_a_link_code(inbound) {
                    // Only for the core to void the code: nothing answers it.
                    return true;
                }
                let chat = inbound.conversation.chat.as_str();
                if chat.starts_with(GROUP_PREFIX) {
                    return groups.contains(chat);
                }
                chat == note_to_self || inbound.sender.ids().any(|id| senders.contains(id.as_str()))
            }
        }
    }

    /// Whether people who are not let in are to be told so: only on a
    /// dedicated number.
    pub fn tells_strangers(&self) -> bool {
        matches!(self, Self::Everything)
    }
}

/// Whether `inbound` is a link code overheard where others read it.
fn names_a_link_code(inbound: &Inbound) -> bool {
    let InboundBody::Text { text } = &inbound.body else {
        return false;
    };
    inbound.overheard && passepartout_gateway::names_a_link_code(text)
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{ChatId, ConversationKey, GatewayId, InboundBody, MessageId, Sender, UserId};

    use super::*;

    const ACCOUNT: &str = "+15550000001";

    fn from(chat: &str, sender: &str, alias: Option<&str>) -> Inbound {
        let mut from = Sender::new(UserId::new(sender).unwrap());
        from.aliases = alias.map(|a| UserId::new(a).unwrap()).into_iter().collect();
        Inbound {
            conversation: ConversationKey::new(GatewayId::new("signal").unwrap(), ChatId::new(chat).unwrap()),
            sender: from,
            message_id: MessageId::new("1").unwrap(),
            reply_to: None,
            body: InboundBody::Text { text: "hi".into() },
            received_at_ms: 0,
            overheard: false,
            by_reply_only: false,
            client: None,
        }
    }

    fn personal() -> Admission {
        let mut settings = SignalSettings::new("unix:/run/s".parse().unwrap(), ACCOUNT);
        settings.note_to_self = true;
        settings.admitted = Admitted {
            senders: vec!["+15550000042".into(), "friend-uuid".into()],
            groups: vec!["R1JPVVA=".into()],
        };
        Admission::of(&settings)
    }

    #[test]
    fn a_dedicated_number_hands_everything_to_the_core() {
        let settings = SignalSettings::new("unix:/run/s".parse().unwrap(), ACCOUNT);
        let admission = Admission::of(&settings);
        assert!(admission.admits(&from("stranger-uuid", "stranger-uuid", None)));
        assert!(admission.tells_strangers());
    }

    #[test]
    fn a_personal_account_lets_through_note_to_self_and_the_listed_only() {
        let admission = personal();
        assert!(!admission.tells_strangers());
        assert!(
            admission.admits(&from(ACCOUNT, "own-uuid", Some(ACCOUNT))),
            "note to self"
        );
        assert!(
            admission.admits(&from("friend-uuid", "friend-uuid", None)),
            "listed by UUID"
        );
        assert!(
            admission.admits(&from("other-uuid", "other-uuid", Some("+15550000042"))),
            "listed by number"
        );
        assert!(
            admission.admits(&from("group:R1JPVVA=", "anyone", None)),
            "a listed group"
        );
        assert!(
            !admission.admits(&from("stranger-uuid", "stranger-uuid", None)),
            "a stranger"
        );
        assert!(
            !admission.admits(&from("group:T1RIRVI=", "friend-uuid", None)),
            "a listed sender in a group that is not listed"
        );
    }

    #[test]
    fn a_link_code_overheard_anywhere_reaches_the_core_to_be_voided() {
        let admission = personal();
        let mut said = from("group:T1RIRVI=", "own-uuid", Some(ACCOUNT));
        said.body = InboundBody::Text {
            text: "/link ABCD2345".into(),
        };
        assert!(!admission.admits(&said), "addressed, it is an ordinary message");
        said.overheard = true;
        assert!(admission.admits(&said));
    }
}
