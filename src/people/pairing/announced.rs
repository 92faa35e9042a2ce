//! How often a gateway's owners hear of strangers asking to be let in: at
//! most [`PER_MINUTE`] requests of their own a minute per gateway. The next
//! stranger in that minute gets one folded notice instead ("more are
//! waiting; see `passepartout pair list`"), the rest none; they are counted,
//! and the gateway's next request after the minute says how many asked
//! meanwhile. A flood of throwaway accounts costs the owners a few
//! messages, and `pair list` and `pair clear` show and clear the queue.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use passepartout_gateway::GatewayId;

/// Requests of their own the owners of one gateway are sent in a minute.
pub const PER_MINUTE: u32 = 3;

const MINUTE_MS: u64 = 60_000;

/// What the owners are told of one more stranger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Announce {
    /// Who asks, and how many asked before without a message of their own.
    Tell { unannounced: u32 },
    /// That more are waiting than they are told of, once a minute.
    Fold,
    /// Nothing: counted, and said with the next request told.
    Hold,
}

/// The minute each gateway's owners were told in, and what was held.
#[derive(Debug, Default)]
pub struct Announced {
    gateways: Mutex<HashMap<GatewayId, Minute>>,
}

#[derive(Debug)]
struct Minute {
    started_ms: u64,
    told: u32,
    /// Strangers since the last request told, not told one by one.
    unannounced: u32,
}

impl Announced {
    /// What `gateway`'s owners are told of a stranger asking at `now_ms`.
    pub fn next(&self, gateway: &GatewayId, now_ms: u64) -> Announce {
        let mut gateways = self.gateways.lock().unwrap_or_else(PoisonError::into_inner);
        let minute = gateways.entry(gateway.clone()).or_insert(Minute {
            started_ms: now_ms,
            told: 0,
            unannounced: 0,
        });
        if now_ms.saturating_sub(minute.started_ms) >= MINUTE_MS {
            minute.started_ms = now_ms;
            minute.told = 0;
        }
        if minute.told < PER_MINUTE {
            minute.told += 1;
            let unannounced = std::mem::take(&mut minute.unannounced);
            return Announce::Tell { unannounced };
        }
        minute.unannounced += 1;
        if minute.told == PER_MINUTE {
            minute.told += 1;
            return Announce::Fold;
        }
        Announce::Hold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_few_a_minute_are_told_one_folded_the_rest_counted() {
        let announced = Announced::default();
        let telegram = GatewayId::new("telegram").unwrap();
        let signal = GatewayId::new("signal").unwrap();
        let at = 1_000_000;
        let first: Vec<Announce> = (0..6).map(|i| announced.next(&telegram, at + i)).collect();
        let tell = Announce::Tell { unannounced: 0 };
        assert_eq!(
            first,
            [tell, tell, tell, Announce::Fold, Announce::Hold, Announce::Hold]
        );
        assert_eq!(announced.next(&signal, at + 10), tell, "each gateway on its own");
        assert_eq!(announced.next(&telegram, at + MINUTE_MS - 1), Announce::Hold);
        assert_eq!(
            announced.next(&telegram, at + MINUTE_MS),
            Announce::Tell { unannounced: 4 },
            "a minute on: told again, with how many were not"
        );
        assert_eq!(announced.next(&telegram, at + MINUTE_MS + 1), tell);
    }
}
