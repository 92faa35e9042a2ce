//! The small grammar of [`Schedule::parse`], documented in the parent
//! module: a keyword, a few words, and an optional trailing zone name.

use jiff::civil::Date;

use super::error::ScheduleError;
use super::parts::{CronExpr, Interval, TimeOfDay, Zone};
use super::{Schedule, daily_after, millis};

pub(super) fn parse(text: &str, default_tz: &Zone, now_ms: u64) -> Result<Schedule, ScheduleError> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let Some((&keyword, rest)) = words.split_first() else {
        return Err(ScheduleError::Empty);
    };
    let read = match keyword.to_ascii_lowercase().as_str() {
        "every" => match rest {
            [day, at, rest @ ..] if is(day, "day") && is(at, "at") => daily(rest, default_tz),
            _ => every(rest),
        },
        "daily" => match rest {
            [at, rest @ ..] if is(at, "at") => daily(rest, default_tz),
            _ => Err(Misread::Shape),
        },
        "cron" => cron(rest, default_tz),
        "in" => relative(rest, default_tz, now_ms),
        "at" => absolute(rest, default_tz, now_ms),
        _ => Err(Misread::Shape),
    };
    let schedule = read.map_err(|misread| match misread {
        Misread::Shape => ScheduleError::Unrecognised {
            text: text.trim().to_owned(),
        },
        Misread::Word(error) => error,
    })?;
    if schedule.next_after(now_ms).is_none() {
        return Err(ScheduleError::NeverRuns {
            schedule: schedule.to_string(),
        });
    }
    Ok(schedule)
}

/// Why a form reader gave up: the words do not have the form's shape at all
/// (the caller then lists the shapes there are), or a word in the right
/// place is wrong.
enum Misread {
    Shape,
    Word(ScheduleError),
}

impl From<ScheduleError> for Misread {
    fn from(error: ScheduleError) -> Self {
        Self::Word(error)
    }
}

/// `[N] UNIT`, after "every".
fn every(words: &[&str]) -> Result<Schedule, Misread> {
    let secs = match words {
        [unit] => unit_secs(unit)?,
        [count, unit] => amount_secs(count, unit)?,
        _ => return Err(Misread::Shape),
    };
    let interval_s = Interval::from_secs(secs)?;
    Ok(Schedule::Every { interval_s })
}

/// `HH:MM [ZONE]`, after "daily at" or "every day at".
fn daily(words: &[&str], default_tz: &Zone) -> Result<Schedule, Misread> {
    let (time, zone) = match words {
        [time] => (time, None),
        [time, zone] => (time, Some(*zone)),
        _ => return Err(Misread::Shape),
    };
    let at = time.parse::<TimeOfDay>()?;
    let tz = zone_or(zone, default_tz)?;
    Ok(Schedule::Daily { at, tz })
}

/// Five cron fields and an optional zone, or an `@nickname` and an optional
/// zone; any other shape is left for croner to explain.
fn cron(words: &[&str], default_tz: &Zone) -> Result<Schedule, Misread> {
    let (fields, zone) = match words {
        [] => return Err(Misread::Shape),
        [fields @ .., last] if fields.len() == 5 || (fields.len() == 1 && fields[0].starts_with('@')) => {
            match trailing_zone(last)? {
                Some(zone) => (fields, zone),
                None => (words, default_tz.clone()),
            }
        }
        _ => (words, default_tz.clone()),
    };
    let expr = CronExpr::new(&fields.join(" "))?;
    Ok(Schedule::Cron { expr, tz: zone })
}

/// The zone a cron expression ends with, if its last word is one. A word
/// that is no zone but has a zone's `Area/City` shape is a misspelt zone;
/// any other word (a sixth field, say) is left to the cron parser to refuse.
fn trailing_zone(word: &str) -> Result<Option<Zone>, ScheduleError> {
    match Zone::new(word) {
        Ok(zone) => Ok(Some(zone)),
        Err(error) if word.contains('/') && word.starts_with(|c: char| c.is_ascii_alphabetic()) => Err(error),
        Err(_) => Ok(None),
    }
}

/// `N UNIT`, after "in": a reminder that long after now.
fn relative(words: &[&str], default_tz: &Zone, now_ms: u64) -> Result<Schedule, Misread> {
    let [count, unit] = words else {
        return Err(Misread::Shape);
    };
    let secs = amount_secs(count, unit)?;
    let at_ms = secs
        .checked_mul(1_000)
        .and_then(|ms| now_ms.checked_add(ms))
        .ok_or(ScheduleError::OutOfRange)?;
    Ok(Schedule::Once {
        at_ms,
        tz: default_tz.clone(),
    })
}

/// `HH:MM [ZONE]` (the next such time) or `YYYY-MM-DD HH:MM [ZONE]`, after "at".
fn absolute(words: &[&str], default_tz: &Zone, now_ms: u64) -> Result<Schedule, Misread> {
    let (date, time, zone) = match words {
        [time] => (None, time, None),
        [date, time] if time.contains(':') => (Some(*date), time, None),
        [time, zone] => (None, time, Some(*zone)),
        [date, time, zone] => (Some(*date), time, Some(*zone)),
        _ => return Err(Misread::Shape),
    };
    let at = time.parse::<TimeOfDay>()?;
    let tz = zone_or(zone, default_tz)?;
    let Some(date) = date else {
        let at_ms = daily_after(at, &tz, now_ms).ok_or(ScheduleError::OutOfRange)?;
        return Ok(Schedule::Once { at_ms, tz });
    };
    let wall = parse_date(date)?.to_datetime(at.civil());
    let at_ms = tz
        .time_zone()
        .to_ambiguous_timestamp(wall)
        .compatible()
        .ok()
        .and_then(millis)
        .ok_or(ScheduleError::OutOfRange)?;
    if at_ms <= now_ms {
        let text = format!("{date} {at} {tz}");
        return Err(ScheduleError::InThePast { text }.into());
    }
    Ok(Schedule::Once { at_ms, tz })
}

/// `count` units, in seconds.
fn amount_secs(count: &str, unit: &str) -> Result<u64, ScheduleError> {
    let n = if is(count, "a") || is(count, "an") {
        1
    } else {
        count
            .parse::<u64>()
            .ok()
            .filter(|&n| n > 0 && count.bytes().all(|b| b.is_ascii_digit()))
            .ok_or_else(|| ScheduleError::BadNumber { text: count.to_owned() })?
    };
    n.checked_mul(unit_secs(unit)?).ok_or(ScheduleError::OutOfRange)
}

fn unit_secs(unit: &str) -> Result<u64, ScheduleError> {
    match unit.to_ascii_lowercase().as_str() {
        "s" | "sec" | "secs" | "second" | "seconds" => Ok(1),
        "m" | "min" | "mins" | "minute" | "minutes" => Ok(60),
        "h" | "hr" | "hrs" | "hour" | "hours" => Ok(3_600),
        "d" | "day" | "days" => Ok(86_400),
        _ => Err(ScheduleError::BadUnit { text: unit.to_owned() }),
    }
}

/// Strictly `YYYY-MM-DD`: jiff alone would also take other ISO 8601 forms.
fn parse_date(text: &str) -> Result<Date, ScheduleError> {
    let bad = || ScheduleError::BadDate { text: text.to_owned() };
    let shape_ok = text.len() == 10
        && text.bytes().enumerate().all(|(i, b)| {
            if i == 4 || i == 7 {
                b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
    if !shape_ok {
        return Err(bad());
    }
    text.parse::<Date>().map_err(|_| bad())
}

fn zone_or(name: Option<&str>, default_tz: &Zone) -> Result<Zone, ScheduleError> {
    match name {
        Some(name) => Zone::new(name),
        None => Ok(default_tz.clone()),
    }
}

fn is(word: &str, keyword: &str) -> bool {
    word.eq_ignore_ascii_case(keyword)
}

#[cfg(test)]
#[path = "parse_tests.rs"]
mod tests;
