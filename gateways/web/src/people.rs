//! Who talks through the web gateway, and which conversations are theirs.
//! A person is the signed-in owner (a browser) or an API key; each has
//! conversations of their own, named `owner`, `key-<id>`, or those with a
//! name after a slash (`key-<id>/travel`; an API conversation the history
//! picks is `key-<id>/~<hex>`, see `api/route.rs`). Since a key's id has a fixed
//! length and no slash, no name a client picks reaches another person's
//! conversation: a key sees only its own.
//!
//! Who may answer approvals is the core's roster of [`OWNER`] and
//! [`APPROVER`]: a key made with `--approver` carries the second as an
//! alias, so it decides in its own conversations and no other key does.

use passepartout_gateway::{ChatId, Sender, UserId};

use crate::keys::Key;

/// The signed-in owner's id.
pub const OWNER: &str = "owner";

/// The alias an API key made with `--approver` is known by besides its id.
pub const APPROVER: &str = "approver";

/// The longest conversation name a client may pick.
pub const MAX_NAME: usize = 64;

/// One of the web gateway's people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Person {
    /// The machine's owner, signed in with a browser.
    Owner,
    /// An API key.
    Key(Key),
}

/// A conversation name that is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadName(pub String);

impl Person {
    /// The person as the core knows them.
    pub fn user(&self) -> UserId {
        UserId::new(self.prefix()).expect("a person's id is a valid user id")
    }

    /// The person as a message's sender: an approving key with the
    /// [`APPROVER`] alias.
    pub fn sender(&self) -> Sender {
        let mut sender = Sender::new(self.user());
        if let Person::Key(Key { approver: true, .. }) = self {
            sender
                .aliases
                .push(UserId::new(APPROVER).expect("the approver alias is a valid user id"));
        }
        sender
    }

    /// Their conversation `name`, or their default one.
    pub fn chat(&self, name: Option<&str>) -> Result<ChatId, BadName> {
        let id = match name {
            None => self.prefix(),
            Some(name) => {
                check_name(name)?;
                format!("{}/{name}", self.prefix())
            }
        };
        ChatId::new(id).map_err(|error| BadName(error.to_string()))
    }

    fn prefix(&self) -> String {
        match self {
            Person::Owner => OWNER.into(),
            Person::Key(key) => format!("key-{}", key.id),
        }
    }
}

fn check_name(name: &str) -> Result<(), BadName> {
    let fits = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':' | b'@'));
    if fits {
        Ok(())
    } else {
        Err(BadName(format!(
            "a conversation name is 1-{MAX_NAME} characters of A-Z, a-z, 0-9, '-', '_', '.', ':' or '@'"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: &str, approver: bool) -> Person {
        Person::Key(Key {
            id: id.into(),
            approver,
        })
    }

    #[test]
    fn only_an_approving_key_carries_the_approver_alias() {
        assert!(key("0123456789ab", true).sender().is(APPROVER));
        assert!(!key("0123456789ab", false).sender().is(APPROVER));
        assert!(!Person::Owner.sender().is(APPROVER));
        assert!(Person::Owner.sender().is(OWNER));
    }

    #[test]
    fn each_person_has_their_own_conversations() {
        let a = key("0123456789ab", false);
        assert_eq!(a.chat(None).unwrap().as_str(), "key-0123456789ab");
        assert_eq!(a.chat(Some("trip")).unwrap().as_str(), "key-0123456789ab/trip");
        assert_eq!(a.user().as_str(), "key-0123456789ab");
        assert_eq!(Person::Owner.chat(Some("x")).unwrap().as_str(), "owner/x");
    }

    #[test]
    fn a_name_cannot_reach_another_persons_conversation() {
        let a = key("0123456789ab", false);
        for bad in [
            "",
            "../key-ba9876543210",
            "a/b",
            "a b",
            "\u{1b}[2J",
            &"x".repeat(MAX_NAME + 1),
        ] {
            assert!(a.chat(Some(bad)).is_err(), "{bad:?}");
        }
        assert!(a.chat(Some("user@example.org")).is_ok());
    }
}
