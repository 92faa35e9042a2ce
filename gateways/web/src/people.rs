//! Who talks through the web gateway, and which conversations are theirs.
//! A person is the signed-in owner (a browser) or an API key; each has
//! conversations of their own, named `owner`, `key-<id>`, or those with a
//! name after a slash (`key-<id>/travel`). Since a key's id has a fixed
//! length and no slash, no name a client picks reaches another person's
//! conversation: a key sees only its own.

use passepartout_gateway::{ChatId, UserId};

/// The longest conversation name a client may pick.
pub const MAX_NAME: usize = 64;

/// One of the web gateway's people.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Person {
    /// The machine's owner, signed in with a browser.
    Owner,
    /// An API key, by its id.
    Key(String),
}

/// A conversation name that is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadName(pub String);

impl Person {
    /// The person as the core knows them.
    pub fn user(&self) -> UserId {
        UserId::new(self.prefix()).expect("a person's id is a valid user id")
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
            Person::Owner => "owner".into(),
            Person::Key(id) => format!("key-{id}"),
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

    #[test]
    fn each_person_has_their_own_conversations() {
        let a = Person::Key("0123456789ab".into());
        assert_eq!(a.chat(None).unwrap().as_str(), "key-0123456789ab");
        assert_eq!(a.chat(Some("trip")).unwrap().as_str(), "key-0123456789ab/trip");
        assert_eq!(a.user().as_str(), "key-0123456789ab");
        assert_eq!(Person::Owner.chat(Some("x")).unwrap().as_str(), "owner/x");
    }

    #[test]
    fn a_name_cannot_reach_another_persons_conversation() {
        let a = Person::Key("0123456789ab".into());
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
