//! `[loops]`: the background loops — how many may run at once, how often the
//! built-in heartbeat beats, how long loops get to stop at shutdown, the
//! zone of schedules, and the loops defined in the config
//! ([`LoopEntry`], `[[loops.entries]]`).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use super::{LlmConfig, LoopEntry, Problems, StoreConfig};
use crate::foundation::clock::schedule::{ScheduleError, Zone};

pub const DEFAULT_MAX_LOOPS: usize = 16;
pub const DEFAULT_HEARTBEAT_S: u64 = 60;
pub const DEFAULT_LOOPS_SHUTDOWN_GRACE_S: u64 = 5;
/// The longest heartbeat interval accepted: a day.
pub const MAX_HEARTBEAT_S: u64 = 24 * 3600;
/// The name of the built-in heartbeat's loop, which no entry may take.
pub const HEARTBEAT_LOOP: &str = "heartbeat";

/// `[loops]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LoopsConfig {
    /// Most loops running at once (the heartbeat included); more are refused.
    pub max: usize,
    /// Seconds between two heartbeats (the approvals expiry sweep, due
    /// backups); 0 turns the heartbeat, and with it periodic backups, off.
    pub heartbeat_s: u64,
    /// On shutdown, loops get this long to stop; then they are aborted.
    pub shutdown_grace_s: u64,
    /// The IANA time zone of schedules that name none ("daily at 07:30");
    /// empty means the machine's own zone.
    pub time_zone: String,
    /// Loops defined here, `[[loops.entries]]` (TOML has no room for both
    /// `[loops]` and `[[loops]]`); none by default.
    pub entries: Vec<LoopEntry>,
}

impl LoopsConfig {
    /// The zone of schedules that name none.
    pub fn zone(&self) -> Result<Zone, ScheduleError> {
        if self.time_zone.is_empty() {
            Ok(Zone::system())
        } else {
            Zone::new(&self.time_zone)
        }
    }
}

impl Default for LoopsConfig {
    fn default() -> Self {
        Self {
            max: DEFAULT_MAX_LOOPS,
            heartbeat_s: DEFAULT_HEARTBEAT_S,
            shutdown_grace_s: DEFAULT_LOOPS_SHUTDOWN_GRACE_S,
            time_zone: String::new(),
            entries: Vec::new(),
        }
    }
}

impl LoopsConfig {
    /// Notes what is wrong with `[loops]` and each of its entries. The
    /// store's `backup_every_s` needs the heartbeat, and a supervisor names
    /// one of the `llm` providers; `now_ms` rules out schedules that would
    /// never run again.
    pub fn check(&self, problems: &mut Problems, store: &StoreConfig, llm: &LlmConfig, now_ms: u64) {
        problems.check(self.max > 0, "loops.max must be at least 1");
        problems.check(
            self.heartbeat_s <= MAX_HEARTBEAT_S,
            format!("loops.heartbeat_s must be at most {MAX_HEARTBEAT_S} (a day), or 0 to turn the heartbeat off"),
        );
        problems.check(self.shutdown_grace_s > 0, "loops.shutdown_grace_s must be at least 1");
        problems.check(
            !(self.heartbeat_s == 0 && store.backup_every_s > 0),
            "store.backup_every_s needs the heartbeat: set loops.heartbeat_s above 0, or store.backup_every_s = 0",
        );
        let zone = self.zone().unwrap_or_else(|error| {
            problems.push(format!("loops.time_zone: {error}"));
            Zone::utc()
        });
        let mut names = HashSet::new();
        for (index, entry) in self.entries.iter().enumerate() {
            let at = format!("loops.entries[{index}]");
            problems.check(
                entry.name != HEARTBEAT_LOOP,
                format!("{at}.name \"{HEARTBEAT_LOOP}\" is the built-in heartbeat's; choose another"),
            );
            problems.check(
                names.insert(entry.name.as_str()),
                format!("{at}.name {:?} is used twice", entry.name),
            );
            for problem in entry.problems(&zone, now_ms) {
                problems.push(format!("{at}.{problem}"));
            }
            if let Some(supervisor) = &entry.supervisor {
                problems.check(
                    llm.has_provider(&supervisor.model),
                    format!(
                        "{at}.supervisor.model {:?} names no [[llm.providers]] entry (by its name)",
                        supervisor.model
                    ),
                );
            }
        }
    }
}
