use super::*;

use super::testing::{NOW_MS, entry, keys};

#[test]
fn one_shot_schedules_are_refused_saying_why() {
    for text in ["in 20 minutes", "at 09:00"] {
        let once = LoopEntry {
            schedule: Some(text.into()),
            ..entry()
        };
        let problems = once.problems(&Zone::utc(), NOW_MS);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].key, "schedule");
        assert!(problems[0].message.contains("every start"), "{}", problems[0]);
    }
}

#[test]
fn the_body_must_be_a_task_or_a_message() {
    let both = LoopEntry {
        message: Some("hi".into()),
        ..entry()
    };
    assert_eq!(keys(&both), ["task"]);
    let neither = LoopEntry { task: None, ..entry() };
    assert_eq!(keys(&neither), ["task"]);
}

#[test]
fn every_problem_names_its_key() {
    let bad = LoopEntry {
        name: "two words".into(),
        task: None,
        output: "nowhere".into(),
        schedule: Some("whenever".into()),
        on: Some(LoopTrigger::Heartbeat),
        ..entry()
    };
    assert_eq!(keys(&bad), ["name", "task", "output", "schedule", "on"]);
    let stray = LoopEntry {
        retrigger: Some(Retrigger::Restart),
        ..entry()
    };
    assert_eq!(keys(&stray), ["retrigger"]);
}
