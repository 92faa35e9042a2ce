//! Times in the admin path's documents as the daemon's [`Clock`] sees them:
//! beside each moment (`at_ms`, `next_wake_ms`, …) the seconds since it
//! (`at_ago_s`) or until it (`next_wake_in_s`). A page or a client shows
//! these, never its own clock against the moment: the daemon's clock is the
//! one that expires a rule and wakes a loop, and a test's clock may be
//! anywhere.
//!
//! [`Clock`]: crate::foundation::clock::Clock

use serde_json::{Map, Value};

/// The moments given a relative time; durations (`duration_ms`) are not.
const MOMENTS: &[&str] = &["at", "created", "expires", "started", "next_wake", "last"];

/// Every moment in `value`, at any depth, given its relative time from
/// `now_ms`: `STEM_ago_s` when it is past (or now), `STEM_in_s` when ahead.
pub(super) fn with_relative_times(value: &mut Value, now_ms: u64) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|item| with_relative_times(item, now_ms)),
        Value::Object(fields) => {
            fields.values_mut().for_each(|field| with_relative_times(field, now_ms));
            let added = relative_fields(fields, now_ms);
            fields.extend(added);
        }
        _ => {}
    }
}

fn relative_fields(fields: &Map<String, Value>, now_ms: u64) -> Vec<(String, Value)> {
    MOMENTS
        .iter()
        .filter_map(|stem| {
            let at = fields.get(&format!("{stem}_ms"))?.as_u64()?;
            Some(if at <= now_ms {
                (format!("{stem}_ago_s"), Value::from((now_ms - at) / 1000))
            } else {
                (format!("{stem}_in_s"), Value::from((at - now_ms).div_ceil(1000)))
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn past_moments_get_ago_future_ones_in_and_durations_nothing() {
        let mut value = json!({
            "rules": [{"expires_ms": 100_500, "created_ms": 40_000}],
            "loops": [{"next_wake_ms": null, "recent": [{"started_ms": 70_000, "duration_ms": 5}]}],
        });
        with_relative_times(&mut value, 100_000);
        assert_eq!(value["rules"][0]["expires_in_s"], 1);
        assert_eq!(value["rules"][0]["created_ago_s"], 60);
        assert_eq!(value["loops"][0]["recent"][0]["started_ago_s"], 30);
        assert!(value["loops"][0]["recent"][0].get("duration_ago_s").is_none());
        assert!(
            value["loops"][0].get("next_wake_in_s").is_none(),
            "a missing moment stays missing"
        );
    }
}
