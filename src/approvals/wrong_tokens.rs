//! The wrong-token rate limit: a sender who names too many tokens that do not
//! exist (or that they may not decide) within an hour has further token
//! answers refused unread, so tokens cannot be guessed by trying. The count
//! is kept in the store, so a restart does not reset it.

use super::record::Person;
use crate::store::Store;

const HOUR_MS: u64 = 3_600_000;

pub struct WrongTokens {
    per_hour: u32,
    store: Store,
}

impl WrongTokens {
    pub fn new(store: Store, per_hour: u32) -> Self {
        Self { per_hour, store }
    }

    /// Whether `person` used up their wrong tokens for now. A count that
    /// cannot be read counts as used up: a guesser gains nothing from a
    /// failing store.
    pub fn is_limited(&self, person: &Person, now_ms: u64) -> bool {
        match self.store.guesses(&person.to_string(), now_ms, HOUR_MS) {
            Ok(guesses) => guesses >= self.per_hour as usize,
            Err(error) => {
                tracing::error!(%error, "cannot read the count of wrong tokens; refusing token answers");
                true
            }
        }
    }

    /// `person` named a token that does not exist, or that they may not decide.
    pub fn record(&self, person: &Person, now_ms: u64) {
        if let Err(error) = self.store.record_guess(&person.to_string(), now_ms, HOUR_MS) {
            tracing::error!(%error, "cannot count a wrong token");
        }
    }
}
