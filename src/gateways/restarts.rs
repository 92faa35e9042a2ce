//! How many times each gateway's listening half failed and was restarted by
//! its supervisor since the daemon started, for `status` and `/metrics`: a
//! gateway that keeps reconnecting is up most of the time and would not show
//! in its state alone.

use std::collections::BTreeMap;
use std::sync::Mutex;

use passepartout_gateway::GatewayId;

/// The restarts counted, by gateway. A restart is rare, so a short lock is
/// no cost worth avoiding.
#[derive(Default)]
pub struct Restarts(Mutex<BTreeMap<GatewayId, u64>>);

impl Restarts {
    /// Counts one restart of `gateway`.
    pub fn count(&self, gateway: &GatewayId) {
        let mut counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *counts.entry(gateway.clone()).or_default() += 1;
    }

    /// How many times `gateway` was restarted.
    pub fn of(&self, gateway: &GatewayId) -> u64 {
        let counts = self.0.lock().unwrap_or_else(|p| p.into_inner());
        counts.get(gateway).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_gateway_has_its_own_count() {
        let restarts = Restarts::default();
        let id = |name: &str| GatewayId::new(name).expect("a valid id");
        let (signal, web) = (id("signal"), id("web"));
        restarts.count(&signal);
        restarts.count(&signal);
        assert_eq!(restarts.of(&signal), 2);
        assert_eq!(restarts.of(&web), 0);
    }
}
