//! Schedules against fixed instants in real zones: nothing here reads the
//! machine's clock or local zone. Expected instants are written as RFC 3339
//! with their offset, independently of the code under test.

use jiff::Timestamp;
use serde_json::json;

use super::*;

/// Milliseconds since the epoch of an RFC 3339 instant.
pub(super) fn ms(rfc3339: &str) -> u64 {
    let at: Timestamp = rfc3339.parse().unwrap();
    u64::try_from(at.as_millisecond()).unwrap()
}

pub(super) fn zone(name: &str) -> Zone {
    Zone::new(name).unwrap()
}

pub(super) fn paris() -> Zone {
    zone("Europe/Paris")
}

pub(super) fn every(secs: u64) -> Schedule {
    Schedule::Every {
        interval_s: Interval::from_secs(secs).unwrap(),
    }
}

pub(super) fn daily(at: &str, tz: &str) -> Schedule {
    Schedule::Daily {
        at: at.parse().unwrap(),
        tz: zone(tz),
    }
}

pub(super) fn cron(expr: &str, tz: &str) -> Schedule {
    Schedule::Cron {
        expr: CronExpr::new(expr).unwrap(),
        tz: zone(tz),
    }
}

pub(super) fn once(at: &str) -> Schedule {
    Schedule::Once {
        at_ms: ms(at),
        tz: paris(),
    }
}

/// The first `n` slots after `after`.
fn slots(schedule: &Schedule, after: &str, n: usize) -> Vec<u64> {
    let mut out = Vec::new();
    let mut at = ms(after);
    for _ in 0..n {
        at = schedule.next_after(at).unwrap();
        out.push(at);
    }
    out
}

// Every.

#[test]
fn every_runs_on_a_grid_from_the_epoch() {
    let s = every(15 * 60);
    assert_eq!(
        s.next_after(ms("2026-06-10T10:07:00Z")),
        Some(ms("2026-06-10T10:15:00Z"))
    );
    assert_eq!(
        s.next_after(ms("2026-06-10T10:14:59.999Z")),
        Some(ms("2026-06-10T10:15:00Z"))
    );
    assert_eq!(
        s.next_after(ms("2026-06-10T10:15:00Z")),
        Some(ms("2026-06-10T10:30:00Z")),
        "strictly after"
    );
    assert_eq!(
        every(2 * 3600).next_after(ms("2026-06-10T10:07:00Z")),
        Some(ms("2026-06-10T12:00:00Z"))
    );
}

#[test]
fn an_interval_below_a_minute_is_refused() {
    assert!(matches!(
        Interval::from_secs(59),
        Err(ScheduleError::IntervalTooShort { secs: 59 })
    ));
    assert!(matches!(
        Interval::from_secs(0),
        Err(ScheduleError::IntervalTooShort { .. })
    ));
    assert_eq!(Interval::from_secs(MIN_INTERVAL_S).unwrap().secs(), 60);
    assert!(matches!(Interval::from_secs(u64::MAX), Err(ScheduleError::OutOfRange)));
}

#[test]
fn every_has_no_slot_past_the_end_of_time() {
    assert_eq!(every(60).next_after(u64::MAX), None);
}

// Daily.

#[test]
fn daily_runs_today_if_still_ahead_else_tomorrow() {
    let s = daily("07:30", "Europe/Paris");
    let summer = ms("2026-06-10T07:30:00+02:00");
    assert_eq!(s.next_after(ms("2026-06-10T07:00:00+02:00")), Some(summer));
    assert_eq!(s.next_after(summer - 1), Some(summer));
    assert_eq!(s.next_after(summer), Some(ms("2026-06-11T07:30:00+02:00")));
    // In winter Paris is UTC+1: the same wall time is another instant.
    assert_eq!(
        s.next_after(ms("2026-12-01T12:00:00Z")),
        Some(ms("2026-12-02T07:30:00+01:00"))
    );
}

#[test]
fn daily_reads_the_day_in_its_own_zone() {
    // 01:00 UTC on the 10th is still 21:00 on the 9th in New York: the
    // 9th's 22:00 is yet to come there.
    let after = ms("2026-06-10T01:00:00Z");
    assert_eq!(
        daily("22:00", "America/New_York").next_after(after),
        Some(ms("2026-06-09T22:00:00-04:00"))
    );
}

#[test]
fn daily_in_the_spring_gap_moves_forward_by_the_gap() {
    // Paris skips 02:00–03:00 on 2026-03-29: 02:30 that day runs at 03:30
    // CEST (jiff's compatible rule), and the days around it are untouched.
    let s = daily("02:30", "Europe/Paris");
    assert_eq!(
        slots(&s, "2026-03-28T12:00:00+01:00", 3),
        vec![
            ms("2026-03-29T03:30:00+02:00"),
            ms("2026-03-30T02:30:00+02:00"),
            ms("2026-03-31T02:30:00+02:00"),
        ]
    );
}

#[test]
fn daily_in_the_autumn_fold_runs_once_at_the_earlier_instant() {
    // Paris repeats 02:00–03:00 on 2026-10-25: 02:30 runs at 02:30 CEST only.
    let s = daily("02:30", "Europe/Paris");
    assert_eq!(
        slots(&s, "2026-10-24T12:00:00+02:00", 2),
        vec![ms("2026-10-25T02:30:00+02:00"), ms("2026-10-26T02:30:00+01:00")]
    );
    // Even from inside the repeated hour, the second 02:30 is not a slot.
    assert_eq!(
        s.next_after(ms("2026-10-25T02:10:00+01:00")),
        Some(ms("2026-10-26T02:30:00+01:00"))
    );
}

// Cron.

#[test]
fn cron_weekdays_skip_the_weekend() {
    let s = cron("0 7 * * 1-5", "UTC");
    // Friday 2026-11-20 after 07:00, then Monday to Wednesday.
    assert_eq!(
        slots(&s, "2026-11-20T08:00:00Z", 3),
        vec![
            ms("2026-11-23T07:00:00Z"),
            ms("2026-11-24T07:00:00Z"),
            ms("2026-11-25T07:00:00Z"),
        ]
    );
    assert_eq!(
        cron("0 7 * * MON-FRI", "UTC").next_after(ms("2026-11-20T08:00:00Z")),
        Some(ms("2026-11-23T07:00:00Z"))
    );
}

#[test]
fn cron_sunday_is_zero_and_seven() {
    let saturday = ms("2026-11-21T12:00:00Z");
    let sunday = Some(ms("2026-11-22T09:00:00Z"));
    assert_eq!(cron("0 9 * * 0", "UTC").next_after(saturday), sunday);
    assert_eq!(cron("0 9 * * 7", "UTC").next_after(saturday), sunday);
    assert_eq!(cron("0 9 * * SUN", "UTC").next_after(saturday), sunday);
}

#[test]
fn cron_day_fields_match_either_as_in_vixie_cron() {
    // "the 13th, or any Friday": the first Friday of February 2026 comes
    // before Friday the 13th.
    let s = cron("0 0 13 * 5", "UTC");
    assert_eq!(
        slots(&s, "2026-02-01T00:00:00Z", 2),
        vec![ms("2026-02-06T00:00:00Z"), ms("2026-02-13T00:00:00Z")]
    );
}

#[test]
fn cron_is_evaluated_in_its_zone() {
    let s = cron("0 7 * * *", "Europe/Paris");
    assert_eq!(
        s.next_after(ms("2026-01-15T12:00:00Z")),
        Some(ms("2026-01-16T06:00:00Z"))
    );
    assert_eq!(
        s.next_after(ms("2026-07-15T12:00:00Z")),
        Some(ms("2026-07-16T05:00:00Z"))
    );
}

#[test]
fn cron_is_strictly_after_to_the_millisecond() {
    let s = cron("*/5 * * * *", "UTC");
    let slot = ms("2026-06-10T10:05:00Z");
    assert_eq!(s.next_after(slot - 1), Some(slot));
    assert_eq!(s.next_after(slot), Some(ms("2026-06-10T10:10:00Z")));
    assert_eq!(s.next_after(slot + 500), Some(ms("2026-06-10T10:10:00Z")));
}

#[test]
fn cron_fixed_time_in_the_spring_gap_runs_when_the_gap_ends() {
    // Croner's rule, unlike the daily form's: 03:00, not 03:30.
    let s = cron("30 2 * * *", "Europe/Paris");
    assert_eq!(
        slots(&s, "2026-03-28T12:00:00+01:00", 2),
        vec![ms("2026-03-29T03:00:00+02:00"), ms("2026-03-30T02:30:00+02:00")]
    );
}

#[test]
fn cron_fixed_time_in_the_autumn_fold_runs_once() {
    let s = cron("30 2 * * *", "Europe/Paris");
    assert_eq!(
        slots(&s, "2026-10-24T12:00:00+02:00", 2),
        vec![ms("2026-10-25T02:30:00+02:00"), ms("2026-10-26T02:30:00+01:00")]
    );
}

#[test]
fn cron_steps_run_in_both_passes_of_a_repeated_hour() {
    // Every 30 minutes across the fold: 02:00 and 02:30 happen twice.
    let s = cron("*/30 * * * *", "Europe/Paris");
    assert_eq!(
        slots(&s, "2026-10-25T01:45:00+02:00", 5),
        vec![
            ms("2026-10-25T02:00:00+02:00"),
            ms("2026-10-25T02:30:00+02:00"),
            ms("2026-10-25T02:00:00+01:00"),
            ms("2026-10-25T02:30:00+01:00"),
            ms("2026-10-25T03:00:00+01:00"),
        ]
    );
}

// Once.

#[test]
fn once_has_one_slot_then_none() {
    let s = once("2026-11-23T09:00:00+01:00");
    let at = ms("2026-11-23T09:00:00+01:00");
    assert_eq!(s.next_after(at - 1), Some(at));
    assert_eq!(s.next_after(at), None);
    assert_eq!(s.next_after(at + 60_000), None);
}

// The restart rule.

#[test]
fn several_missed_slots_make_exactly_one_run_now() {
    // Every 15 minutes; the daemon stopped before 10:15 and came back at
    // 11:40, six slots later (10:15 … 11:30): one run now, then 11:45.
    let s = every(15 * 60);
    let stored = ms("2026-06-10T10:15:00Z");
    let now = ms("2026-06-10T11:40:00Z");
    let missed = std::iter::successors(Some(stored), |&slot| s.next_after(slot))
        .take_while(|&slot| slot <= now)
        .count();
    assert_eq!(missed, 6, "the scenario misses several slots");
    assert_eq!(
        s.resume(stored, now),
        Resume::RunNow {
            next_ms: Some(ms("2026-06-10T11:45:00Z"))
        }
    );
}

#[test]
fn a_missed_daily_run_runs_now_and_then_at_tomorrows_time() {
    let s = daily("07:30", "Europe/Paris");
    // Down from the 8th to the 10th at 09:00: the 8th, 9th and 10th were missed.
    let resume = s.resume(ms("2026-06-08T07:30:00+02:00"), ms("2026-06-10T09:00:00+02:00"));
    assert_eq!(
        resume,
        Resume::RunNow {
            next_ms: Some(ms("2026-06-11T07:30:00+02:00"))
        }
    );
}

#[test]
fn a_slot_still_ahead_is_waited_for() {
    let s = every(15 * 60);
    let next = ms("2026-06-10T10:15:00Z");
    assert_eq!(
        s.resume(next, ms("2026-06-10T10:07:00Z")),
        Resume::Wait { until_ms: next }
    );
    // A stored time later than the schedule's own next slot (pushed back by
    // the loop) is honoured.
    let later = ms("2026-06-10T11:00:00Z");
    assert_eq!(
        s.resume(later, ms("2026-06-10T10:07:00Z")),
        Resume::Wait { until_ms: later }
    );
}

#[test]
fn a_slot_due_exactly_now_runs_now() {
    let s = every(15 * 60);
    let now = ms("2026-06-10T10:15:00Z");
    assert_eq!(
        s.resume(now, now),
        Resume::RunNow {
            next_ms: Some(ms("2026-06-10T10:30:00Z"))
        }
    );
}

#[test]
fn a_missed_reminder_runs_once_at_start_and_is_spent() {
    let s = once("2026-11-23T09:00:00+01:00");
    let at = ms("2026-11-23T09:00:00+01:00");
    assert_eq!(s.resume(at, at + 3_600_000), Resume::RunNow { next_ms: None });
    assert_eq!(s.resume(at, at - 1), Resume::Wait { until_ms: at });
}

// Display.

#[test]
fn displays_for_people() {
    assert_eq!(every(900).to_string(), "every 15 minutes");
    assert_eq!(every(3_600).to_string(), "every hour");
    assert_eq!(every(90).to_string(), "every 90 seconds");
    assert_eq!(every(2 * 86_400).to_string(), "every 2 days");
    assert_eq!(
        daily("07:30", "Europe/Paris").to_string(),
        "daily at 07:30 Europe/Paris"
    );
    assert_eq!(cron("0 7 * * 1-5", "UTC").to_string(), "cron `0 7 * * 1-5` (UTC)");
    assert_eq!(
        once("2026-11-23T09:00:00+01:00").to_string(),
        "once at 2026-11-23 09:00 CET"
    );
    assert_eq!(
        once("2026-07-01T09:00:00+02:00").to_string(),
        "once at 2026-07-01 09:00 CEST"
    );
}

// Persistence.

const NOW: &str = "2026-11-22T14:00:00+01:00";

#[test]
fn serde_form_is_stable_and_round_trips() {
    let cases = [
        (every(900), json!({"kind": "every", "interval_s": 900})),
        (
            daily("07:30", "Europe/Paris"),
            json!({"kind": "daily", "at": "07:30", "tz": "Europe/Paris"}),
        ),
        (
            cron("0 7 * * 1-5", "UTC"),
            json!({"kind": "cron", "expr": "0 7 * * 1-5", "tz": "UTC"}),
        ),
        (
            once("2026-11-23T09:00:00+01:00"),
            json!({"kind": "once", "at_ms": ms("2026-11-23T09:00:00+01:00"), "tz": "Europe/Paris"}),
        ),
    ];
    for (schedule, expected) in cases {
        let value = serde_json::to_value(&schedule).unwrap();
        assert_eq!(value, expected);
        let text = serde_json::to_string(&schedule).unwrap();
        let back: Schedule = serde_json::from_str(&text).unwrap();
        assert_eq!(back, schedule);
        // The schedule read back computes the same slots.
        assert_eq!(back.next_after(ms(NOW)), schedule.next_after(ms(NOW)));
    }
}

#[test]
fn invalid_stored_schedules_are_refused() {
    let bad = [
        json!({"kind": "every", "interval_s": 5}),
        json!({"kind": "daily", "at": "24:00", "tz": "Europe/Paris"}),
        json!({"kind": "daily", "at": "07:30", "tz": "Nowhere/Special"}),
        json!({"kind": "cron", "expr": "not cron", "tz": "UTC"}),
        json!({"kind": "once", "at_ms": 1, "tz": "UTC", "extra": true}),
        json!({"kind": "weekly", "at": "07:30"}),
    ];
    for value in bad {
        assert!(
            serde_json::from_value::<Schedule>(value.clone()).is_err(),
            "{value} was accepted"
        );
    }
}
