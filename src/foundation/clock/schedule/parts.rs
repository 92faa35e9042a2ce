//! The validated pieces a [`Schedule`](super::Schedule) is made of: an
//! interval, a time of day, a time zone and a cron expression. Each is checked
//! in its constructor and again when read back from the store, so a schedule
//! that exists can always compute its next run.

use std::fmt;
use std::str::FromStr;

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::tz::TimeZone;
use serde::{Deserialize, Serialize};

use super::error::ScheduleError;

/// The shortest interval an `every` schedule may have. Every run may cost a
/// model call, and standard cron has no finer grain either.
pub const MIN_INTERVAL_S: u64 = 60;

/// The time between two runs of an `every` schedule: at least
/// [`MIN_INTERVAL_S`] seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "u64", into = "u64")]
pub struct Interval(u64);

impl Interval {
    /// An interval of `secs` seconds, refused below [`MIN_INTERVAL_S`].
    pub fn from_secs(secs: u64) -> Result<Self, ScheduleError> {
        if secs < MIN_INTERVAL_S {
            return Err(ScheduleError::IntervalTooShort { secs });
        }
        if secs.checked_mul(1_000).is_none() {
            return Err(ScheduleError::OutOfRange);
        }
        Ok(Self(secs))
    }

    pub fn secs(self) -> u64 {
        self.0
    }

    pub(super) fn millis(self) -> u64 {
        // Cannot saturate: the constructor checked the multiplication.
        self.0.saturating_mul(1_000)
    }
}

impl TryFrom<u64> for Interval {
    type Error = ScheduleError;

    fn try_from(secs: u64) -> Result<Self, Self::Error> {
        Self::from_secs(secs)
    }
}

impl From<Interval> for u64 {
    fn from(interval: Interval) -> Self {
        interval.0
    }
}

impl fmt::Display for Interval {
    /// The largest whole unit: "15 minutes", "hour", "2 days", "90 seconds".
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const UNITS: [(u64, &str); 4] = [(86_400, "day"), (3_600, "hour"), (60, "minute"), (1, "second")];
        let (size, name) = UNITS
            .into_iter()
            .find(|(size, _)| self.0.is_multiple_of(*size))
            .unwrap_or((1, "second"));
        match self.0 / size {
            1 => write!(f, "{name}"),
            n => write!(f, "{n} {name}s"),
        }
    }
}

/// A wall-clock time of day, to the minute; written and stored as `HH:MM`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct TimeOfDay(jiff::civil::Time);

impl TimeOfDay {
    /// `hour` 0–23 and `minute` 0–59.
    pub fn new(hour: i8, minute: i8) -> Result<Self, ScheduleError> {
        jiff::civil::Time::new(hour, minute, 0, 0)
            .map(Self)
            .map_err(|_| ScheduleError::BadTimeOfDay {
                text: format!("{hour}:{minute:02}"),
            })
    }

    pub(super) fn civil(self) -> jiff::civil::Time {
        self.0
    }
}

impl FromStr for TimeOfDay {
    type Err = ScheduleError;

    /// `H:MM` or `HH:MM`, 24-hour.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || ScheduleError::BadTimeOfDay { text: text.to_owned() };
        let (hour, minute) = text.split_once(':').ok_or_else(bad)?;
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if !(1..=2).contains(&hour.len()) || minute.len() != 2 || !all_digits(hour) || !all_digits(minute) {
            return Err(bad());
        }
        let hour = hour.parse().map_err(|_| bad())?;
        let minute = minute.parse().map_err(|_| bad())?;
        Self::new(hour, minute).map_err(|_| bad())
    }
}

impl TryFrom<String> for TimeOfDay {
    type Error = ScheduleError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

impl From<TimeOfDay> for String {
    fn from(time: TimeOfDay) -> Self {
        time.to_string()
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}:{:02}", self.0.hour(), self.0.minute())
    }
}

/// An IANA time zone ("Europe/Paris", "UTC"), known to the time zone database
/// when it was made; stored by name.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Zone {
    name: String,
    tz: TimeZone,
}

impl Zone {
    /// The zone called `name` (case-insensitive), under its canonical name.
    pub fn new(name: &str) -> Result<Self, ScheduleError> {
        let tz = TimeZone::get(name).map_err(|source| ScheduleError::UnknownZone {
            name: name.to_owned(),
            source,
        })?;
        let name = tz.iana_name().unwrap_or(name).to_owned();
        Ok(Self { name, tz })
    }

    /// The machine's zone (from `TZ` or `/etc/localtime`); UTC when it has
    /// no IANA name, since a zone is stored by name.
    pub fn system() -> Self {
        let tz = TimeZone::system();
        match tz.iana_name().map(str::to_owned) {
            Some(name) => Self { name, tz },
            None => Self::utc(),
        }
    }

    /// Coordinated Universal Time.
    pub fn utc() -> Self {
        Self {
            name: "UTC".to_owned(),
            tz: TimeZone::UTC,
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn time_zone(&self) -> &TimeZone {
        &self.tz
    }
}

impl PartialEq for Zone {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Zone {}

impl TryFrom<String> for Zone {
    type Error = ScheduleError;

    fn try_from(name: String) -> Result<Self, Self::Error> {
        Self::new(&name)
    }
}

impl From<Zone> for String {
    fn from(zone: Zone) -> Self {
        zone.name
    }
}

impl fmt::Display for Zone {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

/// A standard five-field cron expression (minute hour day-of-month month
/// day-of-week), as vixie cron reads it: day-of-week 0–7 with 0 and 7 both
/// Sunday, names like `MON-FRI` and `JAN`, and a day matching when *either*
/// day field matches if both are restricted. Croner's extensions (`L`, `W`,
/// `#`, `@daily`) are accepted too; seconds and years are not.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct CronExpr {
    text: String,
    // Boxed: a parsed pattern is large, and most schedules are not cron.
    cron: Box<Cron>,
}

impl CronExpr {
    pub fn new(text: &str) -> Result<Self, ScheduleError> {
        let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
        let parser = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .year(Year::Disallowed)
            .build();
        match parser.parse(&text) {
            Ok(cron) => Ok(Self {
                text,
                cron: Box::new(cron),
            }),
            Err(source) => Err(ScheduleError::BadCron { expr: text, source }),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub(super) fn cron(&self) -> &Cron {
        &self.cron
    }
}

impl PartialEq for CronExpr {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl Eq for CronExpr {}

impl TryFrom<String> for CronExpr {
    type Error = ScheduleError;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        Self::new(&text)
    }
}

impl From<CronExpr> for String {
    fn from(expr: CronExpr) -> Self {
        expr.text
    }
}

impl fmt::Display for CronExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
