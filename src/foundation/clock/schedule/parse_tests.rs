//! The grammar of [`Schedule::parse`]: each form read into the schedule it
//! means, and each mistake into the error that names it. "Now" is fixed.

use crate::foundation::clock::schedule::tests::{cron, daily, every, ms, once, paris, zone};
use crate::foundation::clock::schedule::{Schedule, ScheduleError};

const NOW: &str = "2026-11-22T14:00:00+01:00";

fn parse(text: &str) -> Result<Schedule, ScheduleError> {
    Schedule::parse(text, &paris(), ms(NOW))
}

#[test]
fn parses_intervals() {
    assert_eq!(parse("every 15 minutes").unwrap(), every(900));
    assert_eq!(parse("every 2 hours").unwrap(), every(7_200));
    assert_eq!(parse("Every Hour").unwrap(), every(3_600));
    assert_eq!(parse("every minute").unwrap(), every(60));
    assert_eq!(parse("every 90 s").unwrap(), every(90));
    assert_eq!(parse("every 3 days").unwrap(), every(3 * 86_400));
    assert_eq!(parse("  every   an  hour ").unwrap(), every(3_600));
}

#[test]
fn parses_daily_times() {
    assert_eq!(parse("every day at 07:30").unwrap(), daily("07:30", "Europe/Paris"));
    assert_eq!(parse("daily at 7:30").unwrap(), daily("07:30", "Europe/Paris"));
    assert_eq!(parse("DAILY AT 23:59").unwrap(), daily("23:59", "Europe/Paris"));
    assert_eq!(
        parse("daily at 07:30 America/New_York").unwrap(),
        daily("07:30", "America/New_York")
    );
    // Zone names are case-insensitive and kept in their canonical spelling.
    assert_eq!(
        parse("daily at 07:30 europe/paris").unwrap(),
        daily("07:30", "Europe/Paris")
    );
}

#[test]
fn parses_cron_expressions() {
    assert_eq!(parse("cron 0 7 * * 1-5").unwrap(), cron("0 7 * * 1-5", "Europe/Paris"));
    assert_eq!(parse("cron 0 7 * * 1-5 UTC").unwrap(), cron("0 7 * * 1-5", "UTC"));
    assert_eq!(parse("cron @daily").unwrap(), cron("@daily", "Europe/Paris"));
    assert_eq!(parse("cron @hourly UTC").unwrap(), cron("@hourly", "UTC"));
}

#[test]
fn parses_relative_reminders_from_now() {
    let now = ms(NOW);
    let once_at = |at_ms| Schedule::Once { at_ms, tz: paris() };
    assert_eq!(parse("in 20 minutes").unwrap(), once_at(now + 20 * 60_000));
    assert_eq!(parse("in 2 hours").unwrap(), once_at(now + 2 * 3_600_000));
    assert_eq!(parse("in an hour").unwrap(), once_at(now + 3_600_000));
    assert_eq!(parse("in 30 seconds").unwrap(), once_at(now + 30_000));
}

#[test]
fn parses_absolute_reminders_in_the_zone() {
    assert_eq!(parse("at 2026-11-23 09:00").unwrap(), once("2026-11-23T09:00:00+01:00"));
    assert_eq!(
        parse("at 2026-11-23 09:00 Asia/Tokyo").unwrap(),
        Schedule::Once {
            at_ms: ms("2026-11-23T09:00:00+09:00"),
            tz: zone("Asia/Tokyo"),
        }
    );
    // A bare time is the next one: 15:00 is later today, 09:00 tomorrow.
    assert_eq!(parse("at 15:00").unwrap(), once("2026-11-22T15:00:00+01:00"));
    assert_eq!(parse("at 09:00").unwrap(), once("2026-11-23T09:00:00+01:00"));
}

#[test]
fn parse_errors_name_what_was_wrong() {
    // The text, a test of the error it gives, and a part its message names.
    type Case = (&'static str, fn(&ScheduleError) -> bool, &'static str);
    let cases: Vec<Case> = vec![
        ("", |e| matches!(e, ScheduleError::Empty), "empty"),
        ("   ", |e| matches!(e, ScheduleError::Empty), "empty"),
        (
            "tomorrow morning",
            |e| matches!(e, ScheduleError::Unrecognised { .. }),
            "tomorrow morning",
        ),
        ("every", |e| matches!(e, ScheduleError::Unrecognised { .. }), "every"),
        (
            "daily 07:30",
            |e| matches!(e, ScheduleError::Unrecognised { .. }),
            "daily 07:30",
        ),
        (
            "in 5 minutes please",
            |e| matches!(e, ScheduleError::Unrecognised { .. }),
            "please",
        ),
        (
            "every x minutes",
            |e| matches!(e, ScheduleError::BadNumber { .. }),
            "\"x\"",
        ),
        (
            "every 0 minutes",
            |e| matches!(e, ScheduleError::BadNumber { .. }),
            "\"0\"",
        ),
        (
            "in -5 minutes",
            |e| matches!(e, ScheduleError::BadNumber { .. }),
            "\"-5\"",
        ),
        (
            "every 5 fortnights",
            |e| matches!(e, ScheduleError::BadUnit { .. }),
            "fortnights",
        ),
        (
            "every 30 seconds",
            |e| matches!(e, ScheduleError::IntervalTooShort { secs: 30 }),
            "30 s",
        ),
        (
            "daily at 25:00",
            |e| matches!(e, ScheduleError::BadTimeOfDay { .. }),
            "25:00",
        ),
        (
            "daily at 7:5",
            |e| matches!(e, ScheduleError::BadTimeOfDay { .. }),
            "7:5",
        ),
        (
            "daily at noon",
            |e| matches!(e, ScheduleError::BadTimeOfDay { .. }),
            "noon",
        ),
        (
            "at 2026-13-01 09:00",
            |e| matches!(e, ScheduleError::BadDate { .. }),
            "2026-13-01",
        ),
        (
            "at 23/11/2026 09:00",
            |e| matches!(e, ScheduleError::BadDate { .. }),
            "23/11/2026",
        ),
        (
            "daily at 07:30 Mars/Olympus",
            |e| matches!(e, ScheduleError::UnknownZone { .. }),
            "Mars/Olympus",
        ),
        (
            "cron 0 7 * *",
            |e| matches!(e, ScheduleError::BadCron { .. }),
            "0 7 * *",
        ),
        (
            "cron 61 * * * *",
            |e| matches!(e, ScheduleError::BadCron { .. }),
            "61 * * * *",
        ),
        (
            "cron 0 0 * * * *",
            |e| matches!(e, ScheduleError::BadCron { .. }),
            "0 0 * * * *",
        ),
        (
            "cron 0 7 * * 1-5 Mars/Olympus",
            |e| matches!(e, ScheduleError::UnknownZone { .. }),
            "Mars/Olympus",
        ),
        (
            "at 2020-01-01 09:00",
            |e| matches!(e, ScheduleError::InThePast { .. }),
            "2020-01-01 09:00",
        ),
        (
            "cron 0 0 30 2 *",
            |e| matches!(e, ScheduleError::NeverRuns { .. }),
            "0 0 30 2 *",
        ),
        (
            "in 99999999999999999 days",
            |e| matches!(e, ScheduleError::OutOfRange),
            "range",
        ),
    ];
    for (text, is_expected, named) in cases {
        let error = parse(text).expect_err(text);
        assert!(is_expected(&error), "{text:?} gave {error:?}");
        assert!(
            error.to_string().contains(named),
            "{text:?}: {error} does not name {named:?}"
        );
    }
}

#[test]
fn a_cron_error_keeps_croner_s_reason_as_its_source() {
    let error = parse("cron 61 * * * *").unwrap_err();
    assert!(std::error::Error::source(&error).is_some());
}
