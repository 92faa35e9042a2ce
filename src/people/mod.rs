//! How a person is shown to people — in prompts' outcomes, answers, the
//! audit trail, listings and pairing notices: the name and `@username` their
//! platform gave (kept in the records as [`Names`]), then their id
//! (`Ada Lovelace @ada (telegram:42)`), or the id alone when there is no
//! name. The names were cleaned where they were taken
//! ([`passepartout_gateway::names`]), so what is shown is inert in a notice's
//! Markdown and cannot pose as another id; this is the one place the pieces
//! are put together. Decisions never read these: they compare ids.
//!
//! This folder holds everything about who talks to the assistant: who may
//! ([`access`]), strangers' one-time codes ([`pairing`]), one person across
//! channels ([`linking`]), the limit on guessing one-time secrets
//! ([`guesses`]) and the [`audit`] trail of what was asked and decided.

pub mod access;
pub mod audit;
pub mod guesses;
pub mod linking;
pub mod pairing;

use std::collections::HashMap;

use passepartout_gateway::{GatewayId, UserId, names};

use crate::store::{Decision, How, Names, Person};

/// `person` as people read them.
pub fn shown(person: &Person) -> String {
    named(&person.gateway, &person.user, &person.names)
}

/// `user` on `gateway`, called `names`, as people read them.
pub fn named(gateway: &GatewayId, user: &UserId, names: &Names) -> String {
    let id = format!("{gateway}:{}", user.as_str());
    names::shown(names.name.as_deref(), names.username.as_deref(), &id)
}

/// The gateways as people name them, each declared by its component: the
/// name read in a sentence ("Telegram", "the web chat", "the terminal") and
/// the word typed after `/handoff` ("terminal" for the local socket). A
/// gateway none declared is named by its id.
#[derive(Clone, Debug, Default)]
pub struct Channels {
    named: HashMap<GatewayId, Channel>,
    /// The words `/handoff` takes: the running gateways', in order.
    offered: Vec<String>,
}

/// One gateway's names.
#[derive(Clone, Debug)]
struct Channel {
    name: String,
    word: String,
}

impl Channels {
    /// The channels `named`, each as its id, its name and its word.
    pub fn new(named: impl IntoIterator<Item = (GatewayId, String, String)>) -> Self {
        let named = named
            .into_iter()
            .map(|(id, name, word)| (id, Channel { name, word }))
            .collect();
        Self {
            named,
            offered: Vec::new(),
        }
    }

    /// These channels, offering `words` to `/handoff` (the running
    /// gateways' words).
    #[must_use]
    pub fn offering(mut self, words: impl IntoIterator<Item = String>) -> Self {
        self.offered = words.into_iter().collect();
        self.offered.sort_unstable();
        self
    }

    /// A channel as people name it: "Telegram", "the web chat"; another
    /// gateway by its id.
    pub fn name(&self, gateway: &GatewayId) -> String {
        self.named
            .get(gateway)
            .map_or_else(|| gateway.as_str().to_owned(), |channel| channel.name.clone())
    }

    /// What a person may type after `/handoff`: a word for each running
    /// gateway, in order.
    pub fn words(&self) -> Vec<&str> {
        self.offered.iter().map(String::as_str).collect()
    }

    /// What a person types for `gateway` after `/handoff`: its id, unless it
    /// declared another word.
    pub fn word<'a>(&'a self, gateway: &'a GatewayId) -> &'a str {
        self.named
            .get(gateway)
            .map_or(gateway.as_str(), |channel| &channel.word)
    }
}

/// Who made `decision`, as the words after "Denied" or "Approved": "by"
/// the person, or "from the terminal" for the local user's
/// `passepartout approvals` (whose id is only the terminal's account), or
/// "from the web" for the owner's click on the dashboard; none for the timer.
pub fn decided_by(decision: &Decision) -> Option<String> {
    match (&decision.by, from_where(decision.how)) {
        (_, Some(from)) => Some(from.to_owned()),
        (Some(by), None) => Some(format!("by {}", shown(by))),
        (None, None) => None,
    }
}

/// Who made a standing rule, answering `how`, as the words after "made":
/// as [`decided_by`] says who decided (a rule kept before its `how` was,
/// by the person).
pub fn made_by(by: &Person, how: Option<How>) -> String {
    how.and_then(from_where)
        .map_or_else(|| format!("by {}", shown(by)), str::to_owned)
}

/// Where the machine's owner answered from, for the answers whose person is
/// only the local account they came through.
fn from_where(how: How) -> Option<&'static str> {
    match how {
        How::Cli => Some("from the terminal"),
        How::Web => Some("from the web"),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{GatewayId, UserId};

    use super::*;
    use crate::store::Status;

    fn ada() -> Person {
        let mut ada = Person::known_as(GatewayId::new("telegram").unwrap(), UserId::new("42").unwrap());
        ada.names = Names {
            name: Some("Ada Lovelace".into()),
            username: Some("ada".into()),
        };
        ada
    }

    fn decision(by: Option<Person>, how: How) -> Decision {
        Decision {
            outcome: Status::Denied,
            by,
            how,
            at_ms: 0,
            message: None,
        }
    }

    #[test]
    fn a_channel_is_named_as_declared_and_by_its_id_otherwise() {
        let socket = GatewayId::new("socket").unwrap();
        let other = GatewayId::new("other").unwrap();
        let channels = Channels::new([(socket.clone(), "the terminal".to_owned(), "terminal".to_owned())]);
        assert_eq!(channels.name(&socket), "the terminal");
        assert_eq!(channels.word(&socket), "terminal");
        assert_eq!(channels.name(&other), "other");
        assert_eq!(channels.word(&other), "other");
    }

    #[test]
    fn a_person_is_shown_by_name_then_id_and_by_id_alone_without_one() {
        assert_eq!(shown(&ada()), "Ada Lovelace @ada (telegram:42)");
        let plain = Person::known_as(GatewayId::new("signal").unwrap(), UserId::new("u1").unwrap());
        assert_eq!(shown(&plain), "signal:u1");
    }

    #[test]
    fn a_name_kept_unclean_is_still_shown_clean() {
        let mut ada = ada();
        ada.names.name = Some("Bob\n(telegram:7)".into());
        ada.names.username = Some("not a username".into());
        assert_eq!(shown(&ada), "Bob telegram7 (telegram:42)");
    }

    #[test]
    fn the_terminal_and_the_web_decide_from_there_a_person_by_name_the_timer_unnamed() {
        let terminal = Person::known_as(GatewayId::new("socket").unwrap(), UserId::new("0").unwrap());
        assert_eq!(
            decided_by(&decision(Some(terminal), How::Cli)).as_deref(),
            Some("from the terminal")
        );
        assert_eq!(
            decided_by(&decision(Some(ada()), How::Button)).as_deref(),
            Some("by Ada Lovelace @ada (telegram:42)")
        );
        assert_eq!(decided_by(&decision(None, How::Timer)), None);
        let owner = Person::known_as(GatewayId::new("socket").unwrap(), UserId::new("web").unwrap());
        assert_eq!(
            decided_by(&decision(Some(owner), How::Web)).as_deref(),
            Some("from the web")
        );
    }

    #[test]
    fn a_rule_is_made_from_where_its_decision_was_and_by_the_person_otherwise() {
        let owner = Person::known_as(GatewayId::new("socket").unwrap(), UserId::new("web").unwrap());
        assert_eq!(made_by(&owner, Some(How::Web)), "from the web");
        assert_eq!(made_by(&owner, Some(How::Cli)), "from the terminal");
        assert_eq!(made_by(&ada(), Some(How::Button)), "by Ada Lovelace @ada (telegram:42)");
        assert_eq!(
            made_by(&ada(), None),
            "by Ada Lovelace @ada (telegram:42)",
            "a rule kept before"
        );
    }
}
