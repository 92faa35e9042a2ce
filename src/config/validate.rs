//! Semantic checks that serde cannot express. Each section checks itself,
//! beside its type (`check`); [`validate`] runs them section after section
//! and collects every problem in [`Problems`], so `check-config` shows them
//! all at once, always in the same order. The gateway sections are checked
//! by their components (`gateways::problems`), which the loading adds.

use super::Config;

/// The problems found so far, as sentences naming the key.
#[derive(Debug, Default)]
pub struct Problems(Vec<String>);

impl Problems {
    /// Notes `problem` unless `ok`.
    pub fn check(&mut self, ok: bool, problem: impl Into<String>) {
        if !ok {
            self.push(problem);
        }
    }

    /// Notes `problem`.
    pub fn push(&mut self, problem: impl Into<String>) {
        self.0.push(problem.into());
    }

    /// The problems noted, in order.
    pub fn into_vec(self) -> Vec<String> {
        self.0
    }
}

/// Every problem with `config`, as sentences naming the key. Empty when
/// valid. `now_ms` (milliseconds since the epoch) rules out loop schedules
/// that would never run again.
pub fn validate(config: &Config, now_ms: u64) -> Vec<String> {
    let mut problems = Problems::default();
    problems.check(!config.data_dir.as_os_str().is_empty(), "data_dir must not be empty");
    config.store.check(&mut problems);
    config.pipeline.check(&mut problems);
    config.llm.check(&mut problems);
    config.tools.check(&mut problems);
    config.skills.check(&mut problems);
    config
        .skills
        .consensus
        .check(&mut problems, &config.llm, config.pipeline.turn_timeout_s);
    config.memory.check(&mut problems);
    config.media.check(&mut problems);
    config
        .transcription
        .check(&mut problems, config.pipeline.turn_timeout_s);
    config.approvals.check(&mut problems);
    config.pairing.check(&mut problems);
    config.audit.check(&mut problems);
    config.loops.check(&mut problems, &config.store, &config.llm, now_ms);
    config.mcp.check(&mut problems);
    config.runtime.check(&mut problems);
    super::bridges::check(&config.bridges, &mut problems);
    problems.into_vec()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LoopEntry, LoopTrigger, ProviderConfig, Retrigger, Supervisor};

    /// 2026-11-22 12:00 UTC.
    const NOW_MS: u64 = 1_795_348_800_000;

    /// [`super::validate`] at a fixed moment.
    fn validate(config: &Config) -> Vec<String> {
        super::validate(config, NOW_MS)
    }

    #[test]
    fn defaults_are_valid() {
        assert!(validate(&Config::default()).is_empty());
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut config = Config::default();
        config.pipeline.max_depth = 0;
        config.llm.providers = vec![
            ProviderConfig {
                base_url: "ftp://x".into(),
                ..ProviderConfig::default()
            },
            ProviderConfig {
                model: String::new(),
                ..ProviderConfig::default()
            },
            ProviderConfig {
                name: "priced".into(),
                price_out_per_mtok: -1.0,
                ..ProviderConfig::default()
            },
        ];
        let problems = validate(&config);
        for expected in ["max_depth", "base_url", "used twice", "model", "price_out_per_mtok"] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        assert_eq!(problems.len(), 5, "{problems:?}");
    }

    #[test]
    fn problems_come_section_after_section() {
        let mut config = Config::default();
        config.memory.max_facts = 0;
        config.store.backups_kept = 0;
        config.data_dir = "".into();
        assert_eq!(
            validate(&config),
            [
                "data_dir must not be empty",
                "store.backups_kept must be at least 1",
                "memory.max_facts must be at least 1",
            ]
        );
    }

    #[test]
    fn loops_settings_are_checked() {
        let mut config = Config::default();
        config.loops.max = 0;
        config.loops.heartbeat_s = crate::config::MAX_HEARTBEAT_S + 1;
        config.loops.shutdown_grace_s = 0;
        let problems = validate(&config);
        for expected in ["loops.max", "loops.heartbeat_s", "loops.shutdown_grace_s"] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        assert_eq!(problems.len(), 3, "{problems:?}");
        let mut config = Config::default();
        config.loops.heartbeat_s = 0;
        let problems = validate(&config);
        assert!(
            problems.len() == 1 && problems[0].contains("store.backup_every_s needs the heartbeat"),
            "{problems:?}"
        );
        config.store.backup_every_s = 0;
        assert!(validate(&config).is_empty());
    }

    #[test]
    fn retention_settings_are_checked() {
        let mut config = Config::default();
        config.memory.history_keep_days = 0;
        config.memory.usage_keep_days = 0;
        config.audit.keep_days = 0;
        assert!(validate(&config).is_empty(), "0 keeps for good");
        config.memory.history_keep_days = 36_501;
        config.memory.usage_keep_days = 36_501;
        config.audit.keep_days = u64::MAX;
        assert_eq!(
            validate(&config),
            [
                "memory.history_keep_days must be at most 36500 (0 keeps history for good)",
                "memory.usage_keep_days must be at most 36500 (0 keeps usage records for good)",
                "audit.keep_days must be at most 36500 (0 keeps the trail for good)",
            ]
        );
    }

    #[test]
    fn context_tokens_is_off_or_room_for_a_summary() {
        let mut config = Config::default();
        config.memory.context_tokens = 0;
        assert!(validate(&config).is_empty(), "0 turns compaction off");
        config.memory.context_tokens = 100;
        assert_eq!(
            validate(&config),
            ["memory.context_tokens must be 0 (no compaction) or at least 256"]
        );
    }

    #[test]
    fn transcription_and_media_settings_are_checked() {
        let mut config = Config::default();
        config.transcription.base_url = Some("whisper.local".into());
        config.transcription.model = " ".into();
        config.transcription.api_key_env = Some("KEY".into());
        config.transcription.api_key_file = Some("/nowhere/key".into());
        config.transcription.language = Some("English".into());
        config.transcription.max_seconds = 0;
        config.transcription.max_bytes = 0;
        config.transcription.timeout_s = 600;
        config.media.max_photo_bytes = 0;
        config.media.max_document_bytes = 0;
        let problems = validate(&config);
        for expected in [
            "media.max_photo_bytes must be at least 1",
            "media.max_document_bytes must be at least 1",
            "transcription.base_url \"whisper.local\" is not an http(s) URL",
            "transcription.model must not be empty",
            "transcription: set api_key_env or api_key_file, not both",
            "transcription.api_key_file /nowhere/key",
            "transcription.language \"English\"",
            "transcription.max_seconds must be at least 1",
            "transcription.max_bytes must be at least 1",
            "transcription.timeout_s (600 s) must be shorter than pipeline.turn_timeout_s (300 s)",
        ] {
            assert!(
                problems.iter().any(|p| p.starts_with(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        assert_eq!(problems.len(), 10, "{problems:?}");
        config.transcription = crate::config::TranscriptionConfig {
            base_url: Some("http://127.0.0.1:8080/v1".into()),
            language: Some("en".into()),
            ..Default::default()
        };
        config.media = Default::default();
        assert!(validate(&config).is_empty(), "{:?}", validate(&config));
        config.pipeline.turn_timeout_s = 60;
        assert_eq!(
            validate(&config).len(),
            1,
            "a transcriber set up must end within the turn"
        );
        config.transcription.base_url = None;
        assert!(validate(&config).is_empty(), "none set up: its timeout does not matter");
    }

    #[test]
    fn media_sections_are_read_from_toml_and_typos_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let text = "[transcription]\nbase_url = \"https://api.groq.com/openai/v1\"\nmodel = \"whisper-large-v3\"\n\
                    response_format = \"json\"\n[media]\nkeep_days = 7\n[[llm.providers]]\nname = \"v\"\nvision = true\n";
        std::fs::write(&path, text).unwrap();
        let config = crate::config::load(Some(&path), Some(Default::default())).unwrap();
        assert_eq!(config.transcription.model, "whisper-large-v3");
        assert_eq!(
            config.transcription.response_format,
            crate::config::ResponseFormat::Json
        );
        assert_eq!(config.media.keep_days, 7);
        assert!(config.llm.providers[0].vision);
        std::fs::write(&path, "[transcription]\nmax_second = 5\n").unwrap();
        let error = crate::config::load(Some(&path), Some(Default::default())).unwrap_err();
        assert!(error.to_string().contains("transcription.max_seconds"), "{error}");
    }

    fn entry(name: &str) -> LoopEntry {
        LoopEntry {
            name: name.into(),
            message: Some("stand up and stretch".into()),
            schedule: Some("every hour".into()),
            output: "socket:default".into(),
            ..LoopEntry::default()
        }
    }

    #[test]
    fn good_loop_entries_pass() {
        let mut config = Config::default();
        config.loops.time_zone = "Europe/Paris".into();
        config.loops.entries = vec![
            entry("stretch"),
            LoopEntry {
                schedule: Some("daily at 07:30 America/New_York".into()),
                ..entry("morning")
            },
            LoopEntry {
                task: Some("look for anything urgent".into()),
                message: None,
                schedule: None,
                on: Some(LoopTrigger::Heartbeat),
                retrigger: Some(Retrigger::Queue),
                supervisor: Some(Supervisor {
                    probability: 0.1,
                    model: crate::config::DEFAULT_PROVIDER_NAME.into(),
                    review: "was any of it urgent?".into(),
                }),
                ..entry("watch")
            },
        ];
        assert_eq!(validate(&config), Vec::<String>::new());
    }

    #[test]
    fn bad_loop_entries_are_named_by_index_and_key() {
        let mut config = Config::default();
        config.loops.time_zone = "Mars/Olympus".into();
        config.loops.entries = vec![
            entry("heartbeat"),
            LoopEntry {
                task: Some("both".into()),
                schedule: Some("in 20 minutes".into()),
                output: "nowhere".into(),
                ..entry("twice")
            },
            LoopEntry {
                name: "twice".into(),
                on: Some(LoopTrigger::Heartbeat),
                supervisor: Some(Supervisor {
                    probability: 0.5,
                    model: "nobody".into(),
                    review: String::new(),
                }),
                ..entry("twice")
            },
        ];
        let problems = validate(&config);
        for expected in [
            "loops.time_zone: \"Mars/Olympus\"",
            "loops.entries[0].name \"heartbeat\"",
            "loops.entries[1].task: ",
            "loops.entries[1].output: \"nowhere\"",
            "loops.entries[1].schedule: \"in 20 minutes\" is a one-shot",
            "loops.entries[2].name \"twice\" is used twice",
            "loops.entries[2].on: ",
            "loops.entries[2].supervisor.model \"nobody\"",
        ] {
            assert!(
                problems.iter().any(|p| p.starts_with(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        assert_eq!(problems.len(), 8, "{problems:?}");
    }

    #[test]
    fn loop_entries_are_read_from_toml() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.toml");
        let text = r#"
            [loops]
            time_zone = "UTC"
            [[loops.entries]]
            name = "standup"
            message = "stand-up in five minutes"
            schedule = "cron 55 8 * * 1-5"
            output = "telegram:123456"
            [[loops.entries]]
            name = "watch"
            task = "anything urgent in the inbox?"
            output = "socket:default"
            on = "heartbeat"
            retrigger = "restart"
            max_iterations = 100
            supervisor = { probability = 0.1, model = "local", review = "was it urgent?" }
        "#;
        std::fs::write(&path, text).unwrap();
        let config = crate::config::load(Some(&path), Some(Default::default())).unwrap();
        let entries = &config.loops.entries;
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].schedule.as_deref(), Some("cron 55 8 * * 1-5"));
        assert_eq!(entries[1].on, Some(LoopTrigger::Heartbeat));
        assert_eq!(entries[1].retrigger, Some(Retrigger::Restart));
        assert_eq!(entries[1].supervisor.as_ref().unwrap().model, "local");
        std::fs::write(&path, "[[loops.entries]]\nname = \"x\"\nmesage = \"typo\"\n").unwrap();
        let error = crate::config::load(Some(&path), Some(Default::default())).unwrap_err();
        assert!(error.to_string().contains("mesage"), "{error}");
    }

    #[test]
    fn bad_patterns_and_conversation_names_are_named() {
        let mut config = Config::default();
        config.skills.deny_shell.push("([unclosed".into());
        config.skills.allowlists.push(crate::config::AllowlistConfig {
            conversation: "no-colon".into(),
            tools: vec![],
        });
        config.tools.shell.program = "sh".into();
        config.approvals.global_approvers = vec!["nobody".into()];
        let problems = validate(&config);
        for expected in [
            "approvals.global_approvers: \"nobody\"",
            "skills.deny_shell[8]",
            "skills.allowlists[0].conversation",
            "tools.shell.program",
        ] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
    }

    #[test]
    fn a_standing_rule_lasts_at_least_a_day_and_at_most_a_year() {
        for (days, fine) in [(0, false), (1, true), (30, true), (365, true), (366, false)] {
            let mut config = Config::default();
            config.approvals.rule_days = days;
            let problems = validate(&config);
            assert_eq!(
                !problems
                    .iter()
                    .any(|p| p.contains("approvals.rule_days must be between 1 and 365")),
                fine,
                "{days}: {problems:?}"
            );
        }
    }
}
