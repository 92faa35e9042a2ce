//! Failed sign-ins per client address: past [`FAILURES_PER_WINDOW`] wrong
//! links or keys within a minute a client's wrong ones are answered 429
//! until the minute is over, and past [`ALL_FAILURES_PER_WINDOW`] from all
//! clients together everyone's are. All of loopback is one client. Only what is not valid is counted and held: a
//! valid link or key always passes, since behind a proxy every client has
//! the proxy's address, and someone trying wrong ones must not lock the
//! owner out. An IPv6 client is counted by its /64, the block one host
//! usually holds. Counting and deciding are one step, so a parallel burst
//! is held as a slow one is. Times are tokio's, so the window is tested
//! under paused time.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Mutex;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::http::request::Parts;
use tokio::time::Instant;

/// Wrong links a client may try per window.
pub const FAILURES_PER_WINDOW: u32 = 10;

/// How long a client's failures count.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Wrong links and keys taken from all clients together per window: past
/// it every wrong one is answered 429 until the window is over, however
/// many addresses they come from.
pub const ALL_FAILURES_PER_WINDOW: u32 = 100;

/// Clients remembered at most; past it the expired windows are forgotten,
/// and if all are live the oldest window goes, so memory stays bounded.
const MAX_CLIENTS: usize = 4096;

/// Failed sign-ins by client address.
#[derive(Default)]
pub struct Guesses {
    by_client: Mutex<HashMap<IpAddr, Window>>,
    all: Mutex<Option<Window>>,
}

#[derive(Clone, Copy)]
struct Window {
    started: Instant,
    failures: u32,
}

impl Guesses {
    /// Counts a wrong, used or expired link or key tried by `client`, and
    /// says whether it is past the window's failures (to be answered 429).
    pub fn failed(&self, client: IpAddr) -> bool {
        let client = counted_as(client);
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
        window.failures = window.failures.saturating_add(1);
        let held = window.failures > FAILURES_PER_WINDOW;
        drop(by_client);
        let all_held = Self::count(
            &mut self.all.lock().unwrap_or_else(|poisoned| poisoned.into_inner()),
            now,
        ) > ALL_FAILURES_PER_WINDOW;
        held || all_held
    }

    /// Counts one failure in `window`, begun again once it is over: the
    /// failures within it.
    fn count(window: &mut Option<Window>, now: Instant) -> u32 {
        let window = match window {
            Some(window) if now - window.started < WINDOW => window,
            _ => window.insert(Window {
                started: now,
                failures: 0,
            }),
        };
        window.failures = window.failures.saturating_add(1);
        window.failures
    }
}

/// The address a request came from (this machine's when the server was
/// not told, as in a test calling the router directly).
pub fn client(parts: &Parts) -> IpAddr {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::from([127, 0, 0, 1]), |ConnectInfo(address)| address.ip())
}

/// The address `client` is counted by: every loopback address (all of
/// 127.0.0.0/8 and ::1) as one, since one machine holds them all; an IPv6
/// address by its /64; an IPv4 one (also written as IPv6) as itself.
pub(crate) fn counted_as(client: IpAddr) -> IpAddr {
    let client = match client {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        },
        v4 => v4,
    };
    match client {
        loopback if loopback.is_loopback() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(v6.to_bits() & !u128::from(u64::MAX))),
        v4 => v4,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_client_is_held_after_the_failures_of_a_window_until_it_ends() {
        let guesses = Guesses::default();
        let (client, other): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        for _ in 0..FAILURES_PER_WINDOW {
            assert!(!guesses.failed(client));
        }
        assert!(guesses.failed(client), "held past {FAILURES_PER_WINDOW} failures");
        assert!(!guesses.failed(other), "another client is not");
        tokio::time::advance(WINDOW - Duration::from_secs(1)).await;
        assert!(guesses.failed(client));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!guesses.failed(client), "a new window counts from one");
    }

    #[tokio::test(start_paused = true)]
    async fn an_ipv6_client_is_counted_by_its_64_block() {
        let guesses = Guesses::default();
        for n in 0..FAILURES_PER_WINDOW {
            let address = format!("2001:db8:1:2::{n:x}").parse().unwrap();
            assert!(!guesses.failed(address));
        }
        let same_block: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        assert!(guesses.failed(same_block), "another address of the same /64");
        let next_block: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert!(!guesses.failed(next_block));
        let mapped: IpAddr = "::ffff:192.0.2.1".parse().unwrap();
        assert_eq!(counted_as(mapped), "192.0.2.1".parse::<IpAddr>().unwrap());
    }

    #[tokio::test(start_paused = true)]
    async fn every_loopback_address_is_one_client() {
        let guesses = Guesses::default();
        for n in 0..FAILURES_PER_WINDOW {
            let address = IpAddr::from([127, 0, (n / 256) as u8, (n % 256) as u8 + 1]);
            assert!(!guesses.failed(address));
        }
        assert!(guesses.failed("127.200.0.9".parse().unwrap()), "all of 127/8 together");
        assert!(guesses.failed("::1".parse().unwrap()));
        assert!(guesses.failed("::ffff:127.0.0.1".parse().unwrap()));
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_ceiling_of_all_clients_every_wrong_one_is_held() {
        let guesses = Guesses::default();
        for n in 0..ALL_FAILURES_PER_WINDOW {
            assert!(!guesses.failed(IpAddr::from((0xC000_0200 + n).to_be_bytes())));
        }
        assert!(
            guesses.failed("198.51.100.7".parse().unwrap()),
            "a new client, past the ceiling"
        );
        tokio::time::advance(WINDOW).await;
        assert!(
            !guesses.failed("198.51.100.7".parse().unwrap()),
            "until the window is over"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_clients_remembered_are_bounded() {
        let guesses = Guesses::default();
        for n in 0..(MAX_CLIENTS as u32 + 10) {
            guesses.failed(IpAddr::from((0x0A00_0000 + n).to_be_bytes()));
        }
        assert_eq!(guesses.by_client.lock().unwrap().len(), MAX_CLIENTS);
    }
}
