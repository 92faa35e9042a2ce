//! The limit on guessing one-time secrets: someone who names too many
//! approval tokens, pairing codes or link codes that do not exist (or that
//! they may not use) within an hour has further ones refused unread, so a
//! secret cannot be found by trying. The count is kept in the store, so a
//! restart does not reset it; each kind of secret is counted apart.

use crate::store::{Person, Store};

const HOUR_MS: u64 = 3_600_000;

/// The kind of secret a count is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Secret {
    /// Approval tokens (and answers naming one the person may not decide).
    Token,
    /// Pairing codes named by an owner.
    PairingCode,
    /// Link codes named by a person.
    LinkCode,
}

impl Secret {
    /// Where the store counts `person`'s wrong ones.
    fn key(self, person: &Person) -> String {
        match self {
            Secret::Token => person.to_string(),
            Secret::PairingCode => format!("pairing:{person}"),
            Secret::LinkCode => format!("link:{person}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Secret::Token => "approval token",
            Secret::PairingCode => "pairing code",
            Secret::LinkCode => "link code",
        }
    }
}

/// One kind of secret's wrong guesses, per person.
pub struct Guesses {
    secret: Secret,
    per_hour: u32,
    store: Store,
}

impl Guesses {
    /// At most `per_hour` wrong `secret`s per person in an hour.
    pub fn new(store: Store, secret: Secret, per_hour: u32) -> Self {
        Self {
            secret,
            per_hour,
            store,
        }
    }

    /// Whether `person` used up their wrong guesses for now. A count that
    /// cannot be read counts as used up: a guesser gains nothing from a
    /// failing store.
    pub fn is_limited(&self, person: &Person, now_ms: u64) -> bool {
        match self.store.guesses(&self.secret.key(person), now_ms, HOUR_MS) {
            Ok(guesses) => guesses >= self.per_hour as usize,
            Err(error) => {
                let secret = self.secret.name();
                tracing::error!(%error, secret, "cannot read the count of wrong guesses; refusing them");
                true
            }
        }
    }

    /// `person` named a secret that does not exist, or that they may not use.
    pub fn record(&self, person: &Person, now_ms: u64) {
        if let Err(error) = self.store.record_guess(&self.secret.key(person), now_ms, HOUR_MS) {
            let secret = self.secret.name();
            tracing::error!(%error, secret, "cannot count a wrong guess");
        }
    }
}

#[cfg(test)]
mod tests {
    use passepartout_gateway::{GatewayId, UserId};

    use super::*;
    use crate::store::tests_support::open_temp;

    #[test]
    fn each_kind_of_secret_is_counted_apart_per_person_within_the_hour() {
        let (_dir, store) = open_temp();
        let ada = Person::known_as(GatewayId::new("telegram").unwrap(), UserId::new("42").unwrap());
        let bob = Person::known_as(GatewayId::new("telegram").unwrap(), UserId::new("43").unwrap());
        let tokens = Guesses::new(store.clone(), Secret::Token, 2);
        let links = Guesses::new(store.clone(), Secret::LinkCode, 2);
        tokens.record(&ada, 0);
        tokens.record(&ada, 1);
        assert!(tokens.is_limited(&ada, 2));
        assert!(!tokens.is_limited(&bob, 2), "per person");
        assert!(!links.is_limited(&ada, 2), "per kind of secret");
        assert!(!tokens.is_limited(&ada, HOUR_MS + 1), "within the hour");
        assert_eq!(
            store.guesses("telegram:42", 2, HOUR_MS).unwrap(),
            2,
            "tokens keep their stored key"
        );
    }
}
