//! How many API requests are being answered at once: at most [`PER_KEY`]
//! for one key and [`IN_ALL`] in all. A request takes its place before its
//! body is read and holds it until its answer is sent (a streamed one, until
//! the stream ends or the client goes), so one client cannot make the
//! server hold many bodies or follow many conversations, and a key at its
//! limit does not hold up the others. A request past a limit is answered
//! 429, which OpenAI's clients retry after a pause.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Requests one key may have being answered at once: a chat front end
/// asks for a title or tags beside the answer, rarely more.
pub const PER_KEY: usize = 8;

/// Requests being answered at once, every key together.
pub const IN_ALL: usize = 32;

/// The requests being answered, per key.
#[derive(Default)]
pub struct InFlight {
    counts: Mutex<Counts>,
}

#[derive(Default)]
struct Counts {
    total: usize,
    by_key: HashMap<String, usize>,
}

/// Which limit a request met.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Full {
    /// Its key has [`PER_KEY`] requests being answered.
    Key,
    /// The API has [`IN_ALL`].
    All,
}

/// A request's place among those being answered, given back when dropped.
pub struct Place {
    flights: Arc<InFlight>,
    key: String,
}

impl InFlight {
    /// A place for a request of `key`, unless a limit is met.
    pub fn take(self: &Arc<Self>, key: &str) -> Result<Place, Full> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let of_key = counts.by_key.get(key).copied().unwrap_or(0);
        if of_key >= PER_KEY {
            return Err(Full::Key);
        }
        if counts.total >= IN_ALL {
            return Err(Full::All);
        }
        counts.total += 1;
        counts.by_key.insert(key.to_owned(), of_key + 1);
        Ok(Place {
            flights: self.clone(),
            key: key.to_owned(),
        })
    }

    /// How many requests are being answered.
    #[cfg(test)]
    fn total(&self) -> usize {
        self.counts.lock().unwrap_or_else(PoisonError::into_inner).total
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut counts = self.flights.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.total = counts.total.saturating_sub(1);
        if let Some(of_key) = counts.by_key.get_mut(&self.key) {
            *of_key = of_key.saturating_sub(1);
            if *of_key == 0 {
                counts.by_key.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_at_its_limit_is_refused_and_others_still_pass() {
        let flights = Arc::new(InFlight::default());
        let held: Vec<Place> = (0..PER_KEY).map(|_| flights.take("a").unwrap()).collect();
        assert_eq!(flights.take("a").err(), Some(Full::Key));
        let other = flights.take("b").expect("another key is not held up");
        drop(other);
        drop(held);
        assert_eq!(flights.total(), 0);
        assert!(flights.take("a").is_ok(), "a place given back is taken again");
    }

    #[test]
    fn every_key_together_is_held_at_the_total() {
        let flights = Arc::new(InFlight::default());
        let held: Vec<Place> = (0..IN_ALL)
            .map(|n| flights.take(&format!("key-{}", n % (IN_ALL / PER_KEY + 1))).unwrap())
            .collect();
        assert_eq!(flights.take("fresh").err(), Some(Full::All));
        drop(held);
        assert!(flights.take("fresh").is_ok());
        assert!(
            flights.counts.lock().unwrap().by_key.len() <= 1,
            "keys with nothing in flight are forgotten"
        );
    }
}
