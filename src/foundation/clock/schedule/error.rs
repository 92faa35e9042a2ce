//! What can be wrong with a schedule as written.

use thiserror::Error;

use super::parts::MIN_INTERVAL_S;

/// Why a schedule was refused; each names the part that was wrong.
#[derive(Debug, Error)]
pub enum ScheduleError {
    #[error("the schedule is empty")]
    Empty,
    #[error(
        "{text:?} is not a schedule: write \"every N minutes|hours|days\", \"daily at HH:MM\", \
         \"cron <5 fields>\", \"in N minutes|hours|days\", \"at HH:MM\" or \"at YYYY-MM-DD HH:MM\", \
         optionally followed by a time zone such as Europe/Paris"
    )]
    Unrecognised { text: String },
    #[error("{text:?} is not a positive whole number")]
    BadNumber { text: String },
    #[error("{text:?} is not a unit of time: use seconds, minutes, hours or days")]
    BadUnit { text: String },
    #[error("an interval of {secs} s is shorter than the minimum of {MIN_INTERVAL_S} s")]
    IntervalTooShort { secs: u64 },
    #[error("{text:?} is not a time of day: use HH:MM, 24-hour")]
    BadTimeOfDay { text: String },
    #[error("{text:?} is not a date: use YYYY-MM-DD")]
    BadDate { text: String },
    #[error("{name:?} is not a known time zone")]
    UnknownZone {
        name: String,
        #[source]
        source: jiff::Error,
    },
    #[error("{expr:?} is not a five-field cron expression")]
    BadCron {
        expr: String,
        #[source]
        source: croner::errors::CronError,
    },
    #[error("{text} is not in the future")]
    InThePast { text: String },
    #[error("{schedule} never runs")]
    NeverRuns { schedule: String },
    #[error("the time is out of range")]
    OutOfRange,
}
