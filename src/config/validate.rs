//! Semantic checks that serde cannot express. Every problem is collected, so
//! `check-config` shows them all at once.

use std::collections::HashSet;

use super::Config;
use crate::loops::heartbeat::HEARTBEAT;
use crate::loops::schedule::Zone;

/// Every problem with `config`, as sentences naming the key. Empty when valid.
pub fn validate(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    let mut check = |ok: bool, problem: String| {
        if !ok {
            problems.push(problem);
        }
    };

    check(
        !config.data_dir.as_os_str().is_empty(),
        "data_dir must not be empty".into(),
    );
    check(
        config.store.flush_every_ms > 0,
        "store.flush_every_ms must be at least 1".into(),
    );
    check(
        config.store.backups_kept > 0,
        "store.backups_kept must be at least 1".into(),
    );

    let pipeline = &config.pipeline;
    check(pipeline.max_depth > 0, "pipeline.max_depth must be at least 1".into());
    check(
        pipeline.turn_timeout_s > 0,
        "pipeline.turn_timeout_s must be at least 1".into(),
    );
    check(
        pipeline.queue_capacity > 0,
        "pipeline.queue_capacity must be at least 1".into(),
    );
    check(
        pipeline.idle_worker_s > 0,
        "pipeline.idle_worker_s must be at least 1".into(),
    );
    check(
        pipeline.max_message_bytes >= 64,
        "pipeline.max_message_bytes must be at least 64".into(),
    );

    check(
        !config.llm.providers.is_empty(),
        "llm.providers must list at least one provider".into(),
    );
    let mut names = HashSet::new();
    for (index, provider) in config.llm.providers.iter().enumerate() {
        let at = format!("llm.providers[{index}]");
        check(!provider.name.trim().is_empty(), format!("{at}.name must not be empty"));
        check(
            names.insert(provider.name.as_str()),
            format!("{at}.name {:?} is used twice", provider.name),
        );
        check(
            matches!(reqwest::Url::parse(&provider.base_url), Ok(url) if matches!(url.scheme(), "http" | "https")),
            format!("{at}.base_url {:?} is not an http(s) URL", provider.base_url),
        );
        check(
            !provider.model.trim().is_empty(),
            format!("{at}.model must not be empty"),
        );
        check(provider.timeout_s > 0, format!("{at}.timeout_s must be at least 1"));
        check(
            provider.connect_timeout_s > 0,
            format!("{at}.connect_timeout_s must be at least 1"),
        );
        check(
            !(provider.api_key_env.is_some() && provider.api_key_file.is_some()),
            format!("{at}: set api_key_env or api_key_file, not both"),
        );
        if let Some(path) = &provider.api_key_file {
            check(
                path.is_file(),
                format!("{at}.api_key_file {} does not exist", path.display()),
            );
        }
    }

    for (index, provider) in config.llm.providers.iter().enumerate() {
        check(
            provider.max_tokens > 0,
            format!("llm.providers[{index}].max_tokens must be at least 1"),
        );
    }

    let tools = &config.tools;
    check(tools.timeout_s > 0, "tools.timeout_s must be at least 1".into());
    check(
        tools.output_cap_bytes >= 256,
        "tools.output_cap_bytes must be at least 256".into(),
    );
    check(
        tools.shell.timeout_s > 0,
        "tools.shell.timeout_s must be at least 1".into(),
    );
    check(
        tools.shell.program.is_absolute(),
        format!(
            "tools.shell.program {} must be an absolute path",
            tools.shell.program.display()
        ),
    );
    check(
        tools.http_get.timeout_s > 0,
        "tools.http_get.timeout_s must be at least 1".into(),
    );
    check(
        tools.http_get.max_bytes > 0,
        "tools.http_get.max_bytes must be at least 1".into(),
    );

    let skills = &config.skills;
    for (index, pattern) in skills.deny_shell.iter().enumerate() {
        if let Err(error) = regex::Regex::new(pattern) {
            check(
                false,
                format!("skills.deny_shell[{index}] is not a valid regular expression: {error}"),
            );
        }
    }
    for (index, list) in skills.allowlists.iter().enumerate() {
        check(
            list.conversation_key().is_some(),
            format!(
                "skills.allowlists[{index}].conversation {:?} must be gateway:chat, e.g. \"telegram:123456\"",
                list.conversation
            ),
        );
    }
    for (index, rule) in skills.rules.iter().enumerate() {
        check(
            !rule.tool.trim().is_empty(),
            format!("skills.rules[{index}].tool must name a tool or be \"*\""),
        );
        if let Some(Err(error)) = rule.pattern.as_deref().map(regex::Regex::new) {
            check(
                false,
                format!("skills.rules[{index}].pattern is not a valid regular expression: {error}"),
            );
        }
    }
    check(
        config.memory.max_facts > 0,
        "memory.max_facts must be at least 1".into(),
    );
    check(
        config.memory.max_fact_chars >= 16,
        "memory.max_fact_chars must be at least 16".into(),
    );

    let approvals = &config.approvals;
    check(
        approvals.expire_after_s > 0,
        "approvals.expire_after_s must be at least 1".into(),
    );
    if let Err(bad) = approvals.global() {
        for entry in bad {
            check(
                false,
                format!("approvals.global_approvers: {entry:?} is not gateway:user (e.g. \"telegram:123456789\")"),
            );
        }
    }

    let loops = &config.loops;
    check(loops.max > 0, "loops.max must be at least 1".into());
    check(
        loops.heartbeat_s <= super::MAX_HEARTBEAT_S,
        format!(
            "loops.heartbeat_s must be at most {} (a day), or 0 to turn the heartbeat off",
            super::MAX_HEARTBEAT_S
        ),
    );
    check(
        loops.shutdown_grace_s > 0,
        "loops.shutdown_grace_s must be at least 1".into(),
    );
    check(
        !(loops.heartbeat_s == 0 && config.store.backup_every_s > 0),
        "store.backup_every_s needs the heartbeat: set loops.heartbeat_s above 0, or store.backup_every_s = 0".into(),
    );
    let zone = loops.zone().unwrap_or_else(|error| {
        check(false, format!("loops.time_zone: {error}"));
        Zone::utc()
    });
    let now_ms = crate::clock::Clock::start().now_ms();
    let mut loop_names = HashSet::new();
    for (index, entry) in loops.entries.iter().enumerate() {
        let at = format!("loops.entries[{index}]");
        check(
            entry.name != HEARTBEAT,
            format!("{at}.name \"{HEARTBEAT}\" is the built-in heartbeat's; choose another"),
        );
        check(
            loop_names.insert(entry.name.as_str()),
            format!("{at}.name {:?} is used twice", entry.name),
        );
        for problem in entry.problems(&zone, now_ms) {
            check(false, format!("{at}.{problem}"));
        }
        if let Some(supervisor) = &entry.supervisor {
            check(
                config.llm.providers.iter().any(|p| p.name == supervisor.model),
                format!(
                    "{at}.supervisor.model {:?} names no [[llm.providers]] entry (by its name)",
                    supervisor.model
                ),
            );
        }
    }

    let telegram = &config.telegram;
    if telegram.enabled {
        check(
            telegram.token_env.is_some() || telegram.token_file.is_some(),
            "telegram.token_env or telegram.token_file must say where the bot token is".into(),
        );
        check(
            !telegram.allowed_users.is_empty() || !telegram.allowed_chats.is_empty(),
            "telegram.allowed_users (or allowed_chats) is empty: nobody could talk to the bot".into(),
        );
    }
    check(
        telegram.api_url.starts_with("http://") || telegram.api_url.starts_with("https://"),
        format!(
            "telegram.api_url must start with http:// or https://, not {:?}",
            telegram.api_url
        ),
    );
    check(
        (1..=50).contains(&telegram.poll_timeout_s),
        "telegram.poll_timeout_s must be between 1 and 50".into(),
    );

    let signal = &config.signal;
    if signal.enabled {
        let number = signal.account.strip_prefix('+').unwrap_or_default();
        check(
            !number.is_empty() && number.chars().all(|c| c.is_ascii_digit()),
            format!(
                "signal.account must be the bot's number, + and digits, not {:?}",
                signal.account
            ),
        );
        check(
            !signal.allowed_senders.is_empty() || !signal.allowed_groups.is_empty(),
            "signal.allowed_senders (or allowed_groups) is empty: nobody could talk to the assistant".into(),
        );
    }
    if signal.spawn {
        // The endpoint is ignored: signal-cli is our child.
        check(
            !signal.spawn_program.trim().is_empty(),
            "signal.spawn_program is empty: name the signal-cli program (a path, or a name on the PATH)".into(),
        );
        check(
            signal
                .spawn_config_dir
                .as_deref()
                .is_none_or(|dir| !dir.trim().is_empty()),
            "signal.spawn_config_dir is empty: give a directory, or leave it out for signal-cli's own".into(),
        );
    } else {
        check(
            signal.endpoint.parse::<passepartout_signal::Endpoint>().is_ok(),
            format!(
                "signal.endpoint must be tcp:HOST:PORT or unix:PATH, not {:?}",
                signal.endpoint
            ),
        );
    }

    let socket = &config.socket;
    check(
        socket.max_line_bytes >= 1024,
        "socket.max_line_bytes must be at least 1024".into(),
    );
    check(socket.max_clients > 0, "socket.max_clients must be at least 1".into());
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{LoopEntry, LoopTrigger, ProviderConfig};
    use crate::loops::spec::{Retrigger, Supervisor};

    #[test]
    fn defaults_are_valid() {
        assert!(validate(&Config::default()).is_empty());
    }

    #[test]
    fn every_problem_is_reported_at_once() {
        let mut config = Config::default();
        config.pipeline.max_depth = 0;
        config.socket.max_line_bytes = 10;
        config.llm.providers = vec![
            ProviderConfig {
                base_url: "ftp://x".into(),
                ..ProviderConfig::default()
            },
            ProviderConfig {
                model: String::new(),
                ..ProviderConfig::default()
            },
        ];
        let problems = validate(&config);
        for expected in ["max_depth", "max_line_bytes", "base_url", "used twice", "model"] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        assert_eq!(problems.len(), 5, "{problems:?}");
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
    fn an_enabled_bot_needs_a_token_source_and_someone_to_talk_to() {
        let mut config = Config::default();
        config.telegram.enabled = true;
        config.telegram.token_env = None;
        config.telegram.poll_timeout_s = 90;
        let problems = validate(&config);
        for expected in ["telegram.token_env", "nobody could talk", "poll_timeout_s"] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        config.telegram.token_env = Some("TOKEN".into());
        config.telegram.allowed_users = vec![42];
        config.telegram.poll_timeout_s = 25;
        assert!(validate(&config).is_empty(), "{:?}", validate(&config));
    }

    #[test]
    fn signal_needs_a_number_someone_to_talk_to_and_a_real_endpoint() {
        let mut config = Config::default();
        config.signal.enabled = true;
        config.signal.account = "bot".into();
        config.signal.endpoint = "http://localhost".into();
        let problems = validate(&config);
        for expected in ["signal.account", "nobody could talk", "signal.endpoint"] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        config.signal.account = "+15551234567".into();
        config.signal.allowed_senders = vec!["0a0a0a0a-0000-4000-8000-00000000000a".into()];
        config.signal.endpoint = "unix:/run/signal-cli.sock".into();
        assert!(validate(&config).is_empty(), "{:?}", validate(&config));
    }

    #[test]
    fn in_spawn_mode_signal_needs_a_program_and_ignores_the_endpoint() {
        let mut config = Config::default();
        config.signal.spawn = true;
        config.signal.endpoint = "http://localhost".into();
        assert!(validate(&config).is_empty(), "{:?}", validate(&config));
        config.signal.spawn_program = " ".into();
        config.signal.spawn_config_dir = Some(String::new());
        let problems = validate(&config);
        for expected in ["signal.spawn_program", "signal.spawn_config_dir"] {
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{expected} missing from {problems:?}"
            );
        }
        assert!(!problems.iter().any(|p| p.contains("signal.endpoint")), "{problems:?}");
    }
}
