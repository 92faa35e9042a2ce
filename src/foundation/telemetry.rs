//! Executions, total time and failures, counted per name — for tools and for
//! skills' gates (the seeds' per-skill telemetry). `status` shows them. A leaf
//! of its own, so the skills count their gates without reaching into the tools.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde::Serialize;

/// What one name has done since the daemon started.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct UsageStats {
    pub executions: u64,
    pub total_ms: u64,
    pub failures: u64,
}

/// Counters by name; cheap to update from any task.
#[derive(Debug, Default)]
pub struct Telemetry {
    by_name: Mutex<BTreeMap<String, UsageStats>>,
}

impl Telemetry {
    /// Counts one execution of `name` that took `elapsed`.
    pub fn record(&self, name: &str, elapsed: Duration, failed: bool) {
        let Ok(mut by_name) = self.by_name.lock() else {
            return;
        };
        let stats = match by_name.get_mut(name) {
            Some(stats) => stats,
            None => by_name.entry(name.to_owned()).or_default(),
        };
        stats.executions += 1;
        stats.total_ms += elapsed.as_millis() as u64;
        stats.failures += u64::from(failed);
    }

    /// A copy of every counter, by name.
    pub fn snapshot(&self) -> BTreeMap<String, UsageStats> {
        self.by_name.lock().map(|m| m.clone()).unwrap_or_default()
    }
}
