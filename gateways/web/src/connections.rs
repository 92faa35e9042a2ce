//! How many connections the dashboard holds: at most [`MAX_CONNECTIONS`]
//! in all and [`MAX_PER_CLIENT`] from one client (counted as the wrong
//! guesses are: all of loopback as one, an IPv6 client by its /64), so
//! idle or half-sent connections cannot use up the daemon's file
//! descriptors and starve the other gateways or a tool's spawn.
//!
//! A connection past a limit does not simply wait: the oldest connection
//! of that client (or, past the total, of anyone) that has not yet sent a
//! whole request is closed to make room, since that is what a flood of
//! half-sent requests is made of, and a browser that has been answered is
//! not touched. Only when every connection in the way is being answered is
//! the new one refused. Idle connections end on their own too: the server
//! closes one that sends no whole request head within its timeout.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio_util::sync::CancellationToken;

use crate::rate_limit::counted_as;

/// Connections held at most, in all.
pub const MAX_CONNECTIONS: usize = 256;

/// Connections held at most from one client.
pub const MAX_PER_CLIENT: usize = 128;

/// The connections held, by client.
#[derive(Default)]
pub struct Connections {
    held: Mutex<Held>,
}

#[derive(Default)]
struct Held {
    next_id: u64,
    total: usize,
    by_client: HashMap<IpAddr, Vec<Entry>>,
}

struct Entry {
    id: u64,
    answered: Arc<AtomicBool>,
    evict: CancellationToken,
}

/// A connection's place: freed when dropped. Its `evict` token is
/// cancelled when a newer connection needs the place; `answered` is set
/// once it has sent a whole request.
pub struct Place {
    connections: Arc<Connections>,
    client: IpAddr,
    id: u64,
    pub answered: Arc<AtomicBool>,
    pub evict: CancellationToken,
}

impl Connections {
    /// A place for a new connection from `client`, making room by evicting
    /// a connection that never sent a request if it must; none when every
    /// connection in the way is being answered.
    pub fn admit(self: &Arc<Self>, client: IpAddr) -> Option<Place> {
        let client = counted_as(client);
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let mine = held.by_client.get(&client).map_or(0, Vec::len);
        if mine >= MAX_PER_CLIENT && !held.evict_from(Some(client)) {
            return None;
        }
        if held.total >= MAX_CONNECTIONS && !held.evict_from(None) {
            return None;
        }
        held.next_id += 1;
        held.total += 1;
        let id = held.next_id;
        let answered = Arc::new(AtomicBool::new(false));
        let evict = CancellationToken::new();
        held.by_client.entry(client).or_default().push(Entry {
            id,
            answered: answered.clone(),
            evict: evict.clone(),
        });
        Some(Place {
            connections: self.clone(),
            client,
            id,
            answered,
            evict,
        })
    }

    /// The connections held, in all.
    #[cfg(test)]
    fn total(&self) -> usize {
        self.held.lock().unwrap_or_else(PoisonError::into_inner).total
    }

    fn free(&self, client: IpAddr, id: u64) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(entries) = held.by_client.get_mut(&client) else {
            return;
        };
        let before = entries.len();
        entries.retain(|entry| entry.id != id);
        let freed = before - entries.len();
        if entries.is_empty() {
            held.by_client.remove(&client);
        }
        held.total -= freed;
    }
}

impl Held {
    /// Evicts the oldest connection of `client` (of anyone, when none)
    /// that has not sent a whole request: it leaves the count at once.
    fn evict_from(&mut self, client: Option<IpAddr>) -> bool {
        let unanswered = |entry: &Entry| !entry.answered.load(Ordering::Acquire);
        let oldest = self
            .by_client
            .iter()
            .filter(|(ip, _)| client.is_none_or(|client| **ip == client))
            .filter_map(|(ip, entries)| entries.iter().find(|e| unanswered(e)).map(|e| (*ip, e.id)))
            .min_by_key(|(_, id)| *id);
        let Some((ip, id)) = oldest else {
            return false;
        };
        let entries = self.by_client.get_mut(&ip).expect("the client just found");
        let at = entries.iter().position(|e| e.id == id).expect("the entry just found");
        entries.remove(at).evict.cancel();
        if entries.is_empty() {
            self.by_client.remove(&ip);
        }
        self.total -= 1;
        true
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.connections.free(self.client, self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    #[test]
    fn a_clients_unanswered_connections_make_room_for_its_new_ones() {
        let connections = Arc::new(Connections::default());
        let mut places: Vec<Place> = (0..MAX_PER_CLIENT)
            .map(|_| connections.admit(ip("127.0.0.1")).unwrap())
            .collect();
        let newest = connections.admit(ip("127.0.0.2")).expect("loopback is one client");
        assert!(places[0].evict.is_cancelled(), "the oldest unanswered went");
        assert!(!places[1].evict.is_cancelled());
        assert_eq!(connections.total(), MAX_PER_CLIENT);
        // Answered ones stay: once all are, the new one is refused.
        for place in &places {
            place.answered.store(true, Ordering::Release);
        }
        newest.answered.store(true, Ordering::Release);
        assert!(connections.admit(ip("127.0.0.1")).is_none());
        assert!(
            connections.admit(ip("192.0.2.1")).is_some(),
            "another client is not held"
        );
        // A place evicted left the count already; dropping it changes nothing.
        drop(places.remove(0));
        assert_eq!(connections.total(), MAX_PER_CLIENT);
        drop(places);
        drop(newest);
        assert_eq!(connections.total(), 0);
    }

    #[test]
    fn past_the_total_the_oldest_unanswered_of_anyone_goes() {
        let connections = Arc::new(Connections::default());
        let places: Vec<Place> = (0..MAX_CONNECTIONS)
            .map(|n| connections.admit(IpAddr::from([192, 0, 2, (n % 200) as u8])).unwrap())
            .collect();
        assert_eq!(connections.total(), MAX_CONNECTIONS);
        let _new = connections.admit(ip("198.51.100.1")).unwrap();
        assert!(places[0].evict.is_cancelled());
        assert_eq!(connections.total(), MAX_CONNECTIONS);
    }
}
