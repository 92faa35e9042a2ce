//! Failed sign-ins per client address: after [`FAILURES_PER_WINDOW`] wrong
//! links within a minute a client is answered 429 until the minute is over,
//! so a sign-in link (32 random bytes) cannot be found by guessing even
//! slowly. Times are tokio's, so the window is tested under paused time.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// Wrong links a client may try per window.
pub const FAILURES_PER_WINDOW: u32 = 10;

/// How long a client's failures count.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Clients remembered at most; past it the expired windows are forgotten,
/// and if all are live the oldest window goes, so memory stays bounded.
const MAX_CLIENTS: usize = 4096;

/// Failed sign-ins by client address.
#[derive(Default)]
pub struct Guesses {
    by_client: Mutex<HashMap<IpAddr, Window>>,
}

#[derive(Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

impl Guesses {
    /// Whether `client` may try a link now.
    pub fn allowed(&self, client: IpAddr) -> bool {
        let now = Instant::now();
        let by_client = self.by_client.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        by_client
            .get(&client)
            .is_none_or(|w| now - w.started >= WINDOW || w.failures < FAILURES_PER_WINDOW)
    }

    /// Counts a wrong, used or expired link tried by `client`.
    pub fn failed(&self, client: IpAddr) {
        let now = Instant::now();
        let mut by_client = self.by_client.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if by_client.len() >= MAX_CLIENTS && !by_client.contains_key(&client) {
            by_client.retain(|_, w| now - w.started < WINDOW);
            if by_client.len() >= MAX_CLIENTS
                && let Some(oldest) = by_client.iter().min_by_key(|(_, w)| w.started).map(|(ip, _)| *ip)
            {
                by_client.remove(&oldest);
            }
        }
        let window = by_client.entry(client).or_insert(Window {
            started: now,
            failures: 0,
        });
        if now - window.started >= WINDOW {
            *window = Window {
                started: now,
                failures: 0,
            };
        }
        window.failures += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_client_is_held_after_the_failures_of_a_window_until_it_ends() {
        let guesses = Guesses::default();
        let (client, other): (IpAddr, IpAddr) = ("127.0.0.1".parse().unwrap(), "127.0.0.2".parse().unwrap());
        for _ in 0..FAILURES_PER_WINDOW {
            assert!(guesses.allowed(client));
            guesses.failed(client);
        }
        assert!(!guesses.allowed(client), "held after {FAILURES_PER_WINDOW} failures");
        assert!(guesses.allowed(other), "another client is not");
        tokio::time::advance(WINDOW - Duration::from_secs(1)).await;
        assert!(!guesses.allowed(client));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(guesses.allowed(client), "let go when the window is over");
        guesses.failed(client);
        assert!(guesses.allowed(client), "a new window counts from one");
    }

    #[tokio::test(start_paused = true)]
    async fn the_clients_remembered_are_bounded() {
        let guesses = Guesses::default();
        for n in 0..(MAX_CLIENTS as u32 + 10) {
            guesses.failed(IpAddr::from(n.to_be_bytes()));
        }
        assert_eq!(guesses.by_client.lock().unwrap().len(), MAX_CLIENTS);
    }
}
