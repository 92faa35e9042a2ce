use std::time::Duration;

use super::*;
use crate::config::{DEFAULT_LOOP_JITTER, Supervisor};
use crate::engine::loops::spec::Body;
use crate::foundation::clock::schedule::{Interval, Schedule};

use crate::config::loop_entry_testing::{NOW_MS, entry, keys};

fn from_entry(entry: &LoopEntry, zone: &Zone) -> Result<Configured, String> {
    Configured::from_entry(entry, zone, NOW_MS)
}

#[test]
fn a_task_without_schedule_sleeps_first_with_the_default_bounds() {
    let configured = from_entry(&entry(), &Zone::utc()).unwrap();
    let spec = configured.spec;
    assert_eq!(spec.name.as_str(), "inbox");
    assert_eq!(
        spec.body,
        Body::Task {
            prompt: "check the mail".into()
        }
    );
    assert_eq!(spec.output.unwrap().to_string(), "socket:default");
    assert_eq!(spec.sleep, SleepBounds::default());
    assert_eq!(spec.jitter, DEFAULT_LOOP_JITTER);
    assert_eq!(spec.start, Start::AfterSleep);
    assert_eq!(spec.schedule, None);
    assert!(!configured.on_heartbeat);
}

#[test]
fn every_key_reaches_the_spec() {
    let entry = LoopEntry {
        task: None,
        message: Some("stand up".into()),
        output: "telegram:123456".into(),
        sleep_min_s: Some(10),
        sleep_max_s: Some(600),
        sleep_s: Some(120),
        jitter: Some(0.1),
        max_iterations: Some(5),
        max_duration_s: Some(3600),
        supervisor: Some(Supervisor {
            probability: 0.25,
            model: "big".into(),
            review: "is it useful?".into(),
        }),
        ..entry()
    };
    let spec = from_entry(&entry, &Zone::utc()).unwrap().spec;
    assert_eq!(
        spec.body,
        Body::Message {
            text: "stand up".into()
        }
    );
    assert_eq!(
        spec.sleep,
        SleepBounds {
            min: Duration::from_secs(10),
            max: Duration::from_secs(600),
            default: Duration::from_secs(120),
        }
    );
    assert_eq!(spec.jitter, 0.1);
    assert_eq!(spec.max_attempts, Some(5));
    assert_eq!(spec.max_duration, Some(Duration::from_secs(3600)));
    assert_eq!(spec.supervisor.unwrap().model, "big");
}

#[test]
fn a_schedule_is_parsed_in_the_configured_zone() {
    let paris = Zone::new("Europe/Paris").unwrap();
    let daily = LoopEntry {
        schedule: Some("daily at 07:30".into()),
        ..entry()
    };
    let spec = from_entry(&daily, &paris).unwrap().spec;
    assert_eq!(spec.schedule.unwrap().to_string(), "daily at 07:30 Europe/Paris");
    let every = LoopEntry {
        schedule: Some("every 15 minutes".into()),
        ..entry()
    };
    let spec = from_entry(&every, &paris).unwrap().spec;
    assert_eq!(
        spec.schedule,
        Some(Schedule::Every {
            interval_s: Interval::from_secs(15 * 60).unwrap()
        })
    );
    assert_eq!(spec.start, Start::AfterSleep);
}

#[test]
fn on_heartbeat_waits_for_triggers_ignoring_them_by_default() {
    let on = LoopEntry {
        on: Some(LoopTrigger::Heartbeat),
        ..entry()
    };
    let configured = from_entry(&on, &Zone::utc()).unwrap();
    assert!(configured.on_heartbeat);
    assert_eq!(configured.spec.start, Start::OnTrigger(Retrigger::Ignore));
    let queued = LoopEntry {
        retrigger: Some(Retrigger::Queue),
        ..on
    };
    let spec = from_entry(&queued, &Zone::utc()).unwrap().spec;
    assert_eq!(spec.start, Start::OnTrigger(Retrigger::Queue));
}

#[test]
fn the_specs_own_checks_are_named_by_entry_key() {
    let bad = LoopEntry {
        sleep_min_s: Some(0),
        jitter: Some(1.5),
        max_iterations: Some(0),
        max_duration_s: Some(0),
        supervisor: Some(Supervisor {
            probability: 2.0,
            model: "big".into(),
            review: String::new(),
        }),
        ..entry()
    };
    assert_eq!(
        keys(&bad),
        [
            "sleep_min_s",
            "jitter",
            "supervisor.probability",
            "max_iterations",
            "max_duration_s"
        ]
    );
    let error = from_entry(&bad, &Zone::utc()).unwrap_err();
    assert!(error.starts_with("loop \"inbox\": sleep_min_s: "), "{error}");
    assert!(error.contains("; jitter: "), "{error}");
}
