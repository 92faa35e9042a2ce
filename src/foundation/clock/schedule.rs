//! When something runs next: the pure scheduling core behind `[[loops.entries]]`
//! and the `schedule` tool. A [`Schedule`] says which instants are *slots*;
//! [`Schedule::next_after`] finds the next one and [`Schedule::resume`] decides
//! what to do after a restart. Nothing here reads the clock or the machine's
//! time zone: callers pass `now` and a zone, so every rule is testable.
//! Instants are milliseconds since the Unix epoch, as elsewhere in the daemon.
//!
//! # The four forms
//!
//! * [`Schedule::Every`] — every N seconds (at least [`MIN_INTERVAL_S`]), on a
//!   grid counted from the Unix epoch: "every 15 minutes" runs at :00, :15, :30
//!   and :45, whenever it was created. The slots are thus a property of the
//!   schedule alone, which is what lets a restart tell whether one was missed.
//!   An interval that does not divide a day drifts against the wall clock; use
//!   the daily or cron form to pin runs to local times.
//! * [`Schedule::Daily`] — every day at a wall-clock `HH:MM` in a zone. Across
//!   daylight-saving changes it follows jiff's `compatible` disambiguation (the
//!   RFC 5545 rule): a time that does not exist that day (the spring-forward
//!   gap) is moved forward by the length of the gap — 02:30 in Paris on the
//!   last Sunday of March runs at 03:30 — and a time that happens twice (the
//!   autumn fold) runs once, at the earlier instant.
//! * [`Schedule::Cron`] — a standard five-field cron expression ([`CronExpr`])
//!   evaluated in a zone by the `croner` crate, which follows vixie cron and
//!   the Open Cron Pattern Specification across daylight-saving changes: a
//!   fixed time inside the gap runs at the first minute after it (`30 2 * * *`
//!   runs at 03:00 that day, unlike the daily form), a fixed time inside the
//!   fold runs once, at its first occurrence, and wildcard or step fields skip
//!   the missing hour and run in both passes of a repeated one.
//! * [`Schedule::Once`] — a one-shot reminder at an instant; it has no slot
//!   after that instant.
//!
//! # What people write ([`Schedule::parse`])
//!
//! Words are separated by spaces and keywords are case-insensitive. `N` is a
//! positive whole number, or `a`/`an` for one. A unit is `second(s)`/`sec(s)`/
//! `s`, `minute(s)`/`min(s)`/`m`, `hour(s)`/`hr(s)`/`h` or `day(s)`/`d`.
//!
//! | text                                       | schedule                           |
//! |--------------------------------------------|------------------------------------|
//! | `every 15 minutes`, `every hour`           | `Every`                            |
//! | `daily at 7:30`, `every day at 07:30`      | `Daily`                            |
//! | `cron 0 7 * * 1-5`                         | `Cron`                             |
//! | `in 20 minutes`, `in an hour`              | `Once`, that long after now        |
//! | `at 09:00`                                 | `Once`, at the next 09:00          |
//! | `at 2026-11-23 09:00`                      | `Once`, at that wall-clock time    |
//!
//! The daily, cron and `at` forms may end with an IANA zone name (`daily at
//! 07:30 America/New_York`); otherwise the default zone (from the config) is
//! used. Anything else is refused with a [`ScheduleError`] that names the part
//! it could not read. There is deliberately no natural-language parser: models
//! are told this grammar, and a typed error tells them what to fix.
//!
//! # Restarts
//!
//! The store keeps each schedule with its next run. At start,
//! [`Schedule::resume`] compares that stored time with now: if it has passed,
//! one or more slots were missed while the daemon was down, and the loop runs
//! *once* now — never once per missed slot — and then waits for the first slot
//! after now. After a run, a loop should ask for `next_after(now)` rather than
//! `next_after(slot)`, so that a run longer than the interval does not queue a
//! backlog either.

mod error;
mod parse;
mod parts;

use std::fmt;

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

pub use error::ScheduleError;
pub use parts::{CronExpr, Interval, MIN_INTERVAL_S, TimeOfDay, Zone};

/// When a loop runs; stored in the store as JSON tagged by `kind`, e.g.
/// `{"kind":"daily","at":"07:30","tz":"Europe/Paris"}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Schedule {
    /// Every `interval_s` seconds, on a grid counted from the Unix epoch.
    Every { interval_s: Interval },
    /// Every day at `at`, wall-clock time in `tz`.
    Daily { at: TimeOfDay, tz: Zone },
    /// Whenever `expr` matches, wall-clock time in `tz`.
    Cron { expr: CronExpr, tz: Zone },
    /// Once, at `at_ms`; `tz` is the zone it was written in, used to show it.
    Once { at_ms: u64, tz: Zone },
}

/// What a loop does at start, given its stored next run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resume {
    /// Nothing was missed: wait until the stored next run.
    Wait { until_ms: u64 },
    /// At least one slot passed while the daemon was down: run once now, then
    /// wait for `next_ms`, the first slot after now (`None`: the schedule is
    /// spent, as a one-shot reminder is once it has run).
    RunNow { next_ms: Option<u64> },
}

impl Schedule {
    /// Reads what a person, a model or the config wrote (see the module docs
    /// for the grammar). `default_tz` is used when the text names no zone;
    /// `now_ms` anchors relative reminders ("in 20 minutes") and rules out
    /// schedules that would never run again.
    pub fn parse(text: &str, default_tz: &Zone, now_ms: u64) -> Result<Self, ScheduleError> {
        parse::parse(text, default_tz, now_ms)
    }

    /// Whether it has one slot only (a reminder).
    pub fn is_once(&self) -> bool {
        matches!(self, Self::Once { .. })
    }

    /// The first slot strictly after `after_ms`; `None` when there is none (a
    /// one-shot already past, or an instant beyond what jiff can represent).
    pub fn next_after(&self, after_ms: u64) -> Option<u64> {
        match self {
            Self::Every { interval_s } => {
                let step = interval_s.millis();
                (after_ms / step).checked_add(1)?.checked_mul(step)
            }
            Self::Daily { at, tz } => daily_after(*at, tz, after_ms),
            Self::Cron { expr, tz } => {
                let after = timestamp(after_ms)?.to_zoned(tz.time_zone().clone());
                let next = expr.cron().find_next_occurrence(&after, false).ok()?;
                millis(next.timestamp()).filter(|&next| next > after_ms)
            }
            Self::Once { at_ms, .. } => (*at_ms > after_ms).then_some(*at_ms),
        }
    }

    /// The restart rule: what to do at `now_ms` for a loop whose stored next
    /// run is `next_run_ms`. A stored time that has come (or passed) means at
    /// least one slot was missed, and it is made up by exactly one run now.
    /// A stored time still ahead is honoured as it is, even if the schedule
    /// alone would run sooner: the loop may have pushed it back on purpose.
    pub fn resume(&self, next_run_ms: u64, now_ms: u64) -> Resume {
        if next_run_ms <= now_ms {
            Resume::RunNow {
                next_ms: self.next_after(now_ms),
            }
        } else {
            Resume::Wait { until_ms: next_run_ms }
        }
    }
}

impl fmt::Display for Schedule {
    /// "every 15 minutes", "daily at 07:30 Europe/Paris",
    /// "cron `0 7 * * 1-5` (UTC)", "once at 2026-11-23 09:00 CET".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Every { interval_s } => write!(f, "every {interval_s}"),
            Self::Daily { at, tz } => write!(f, "daily at {at} {tz}"),
            Self::Cron { expr, tz } => write!(f, "cron `{expr}` ({tz})"),
            Self::Once { at_ms, tz } => match timestamp(*at_ms) {
                Some(at) => {
                    let at = at.to_zoned(tz.time_zone().clone());
                    write!(f, "once at {}", at.strftime("%Y-%m-%d %H:%M %Z"))
                }
                None => write!(f, "once at {at_ms} ms after the epoch"),
            },
        }
    }
}

/// The first instant strictly after `after_ms` at which the wall clock in
/// `zone` reads `at`, gaps and folds resolved the `compatible` way.
fn daily_after(at: TimeOfDay, zone: &Zone, after_ms: u64) -> Option<u64> {
    let after = timestamp(after_ms)?;
    let mut day = after.to_zoned(zone.time_zone().clone()).date();
    // Today's slot may have passed; tomorrow's is always later. The third
    // day is slack for zones whose history skipped a whole day.
    for _ in 0..3 {
        let wall = day.to_datetime(at.civil());
        let slot = zone.time_zone().to_ambiguous_timestamp(wall).compatible().ok()?;
        if slot > after {
            return millis(slot);
        }
        day = day.tomorrow().ok()?;
    }
    None
}

fn timestamp(ms: u64) -> Option<Timestamp> {
    Timestamp::from_millisecond(i64::try_from(ms).ok()?).ok()
}

fn millis(at: Timestamp) -> Option<u64> {
    u64::try_from(at.as_millisecond()).ok()
}

#[cfg(test)]
#[path = "schedule_tests.rs"]
mod tests;
