//! Tests of what the core gathers from the gateway components: each
//! section's problems, what stops an enabled gateway from starting, the
//! settings a reload applies live, and what each takes of a file.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use super::*;
use crate::config::Config;

fn enabled(token_env: Option<&str>, token_file: Option<&Path>) -> Config {
    let mut config = Config::default();
    config.telegram.enabled = true;
    config.telegram.allowed_users = vec![42];
    config.telegram.token_env = token_env.map(str::to_owned);
    config.telegram.token_file = token_file.map(Path::to_path_buf);
    config
}

fn environment(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    move |name| map.get(name).cloned()
}

#[test]
fn a_variable_that_is_not_set_is_named_once() {
    let problems = start_problems(&enabled(Some("MY_TG_TOKEN"), None), environment(&[]));
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(problems[0].matches("MY_TG_TOKEN").count(), 1, "{problems:?}");
    assert!(problems[0].starts_with("telegram.token_env"), "{problems:?}");
    let set = environment(&[("MY_TG_TOKEN", "1:secret")]);
    assert!(start_problems(&enabled(Some("MY_TG_TOKEN"), None), set).is_empty());
    let blank = environment(&[("MY_TG_TOKEN", "  ")]);
    assert_eq!(start_problems(&enabled(Some("MY_TG_TOKEN"), None), blank).len(), 1);
}

#[test]
fn a_disabled_gateway_needs_no_token() {
    let mut config = enabled(Some("MY_TG_TOKEN"), None);
    config.telegram.enabled = false;
    assert!(start_problems(&config, environment(&[])).is_empty());
}

#[test]
fn a_token_file_missing_empty_or_a_folder_is_named_and_never_shown() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("telegram.token");
    let problems = start_problems(&enabled(None, Some(&missing)), environment(&[]));
    assert!(problems[0].contains("does not exist"), "{problems:?}");
    assert!(problems[0].contains(&missing.display().to_string()), "{problems:?}");

    std::fs::write(&missing, "\n").unwrap();
    let problems = start_problems(&enabled(None, Some(&missing)), environment(&[]));
    assert!(problems[0].contains("is empty"), "{problems:?}");

    let problems = start_problems(&enabled(None, Some(dir.path())), environment(&[]));
    assert!(problems[0].contains("is not a file"), "{problems:?}");

    // A file wins over the variable, even one that is set.
    std::fs::write(&missing, "1:secret-token\n").unwrap();
    std::fs::set_permissions(&missing, std::fs::Permissions::from_mode(0o000)).unwrap();
    let config = enabled(Some("TELEGRAM_BOT_TOKEN"), Some(&missing));
    let problems = start_problems(&config, environment(&[("TELEGRAM_BOT_TOKEN", "1:other")]));
    // Root reads any file: then there is nothing to report.
    if std::fs::read(&missing).is_err() {
        assert!(problems[0].contains("permission denied"), "{problems:?}");
    }
    assert!(problems.iter().all(|p| !p.contains("secret-token")), "{problems:?}");
}

#[test]
fn an_enabled_bot_needs_a_token_source_and_someone_to_talk_to() {
    let mut config = Config::default();
    config.telegram.enabled = true;
    config.telegram.token_env = None;
    config.telegram.poll_timeout_s = 90;
    let problems = problems(&config);
    for expected in ["telegram.token_env", "nobody could talk", "poll_timeout_s"] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{expected} missing from {problems:?}"
        );
    }
    config.telegram.token_env = Some("TOKEN".into());
    config.telegram.allowed_users = vec![42];
    config.telegram.poll_timeout_s = 25;
    assert!(super::problems(&config).is_empty(), "{:?}", super::problems(&config));
}

#[test]
fn signal_needs_a_number_someone_to_talk_to_and_a_real_endpoint() {
    let mut config = Config::default();
    config.signal.enabled = true;
    config.signal.account = "bot".into();
    config.signal.endpoint = "http://localhost".into();
    let problems = problems(&config);
    for expected in ["signal.account", "nobody could talk", "signal.endpoint"] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{expected} missing from {problems:?}"
        );
    }
    config.signal.account = "+15551234567".into();
    config.signal.allowed_senders = vec!["0a0a0a0a-0000-4000-8000-00000000000a".into()];
    config.signal.endpoint = "unix:/run/signal-cli.sock".into();
    assert!(super::problems(&config).is_empty(), "{:?}", super::problems(&config));
}

#[test]
fn in_spawn_mode_signal_needs_a_program_and_ignores_the_endpoint() {
    let mut config = Config::default();
    config.signal.spawn = true;
    config.signal.endpoint = "http://localhost".into();
    assert!(super::problems(&config).is_empty(), "{:?}", super::problems(&config));
    config.signal.spawn_program = " ".into();
    config.signal.spawn_config_dir = Some(String::new());
    let problems = problems(&config);
    for expected in ["signal.spawn_program", "signal.spawn_config_dir"] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{expected} missing from {problems:?}"
        );
    }
    assert!(!problems.iter().any(|p| p.contains("signal.endpoint")), "{problems:?}");
}

#[test]
fn each_gateway_names_the_lists_a_reload_applies_live() {
    let mut config = Config::default();
    let keys = live_keys(&config);
    for key in [
        "telegram.allowed_users",
        "telegram.allowed_chats",
        "telegram.approvers",
        "signal.allowed_senders",
        "signal.allowed_groups",
        "signal.approvers",
    ] {
        assert!(keys.contains(&key), "{key} missing from {keys:?}");
    }
    assert!(!keys.iter().any(|key| key.starts_with("socket.")), "{keys:?}");
    // On a person's own account the gateway filters before the core, as it
    // starts: its lists wait for a restart, its approvers do not.
    config.signal.note_to_self = true;
    let signal: Vec<_> = (live_keys(&config).into_iter())
        .filter(|key| key.starts_with("signal."))
        .collect();
    assert_eq!(signal, ["signal.approvers"]);
}

#[test]
fn every_live_key_names_a_setting_of_its_gateways_section() {
    let mut config = Config::default();
    config.telegram.approvers = Some(vec![42]);
    config.signal.approvers = Some(vec!["+15550000002".into()]);
    let document = serde_json::to_value(&config).unwrap();
    for component in components(&config) {
        for key in component.live_keys() {
            let found = key.split('.').try_fold(&document, |value, part| value.get(part));
            assert!(found.is_some(), "{} names {key}, which is no setting", component.id());
        }
    }
}

#[test]
fn each_gateway_says_what_it_takes_of_a_file() {
    let uploads = uploads(&Config::default());
    let of = |gateway: &str| uploads.of(&passepartout_gateway::GatewayId::new(gateway).unwrap());
    assert_eq!(of("telegram").max_bytes, passepartout_telegram::MAX_UPLOAD_BYTES);
    assert_eq!(of("telegram").platform, "Telegram");
    assert_eq!(of("signal").max_bytes, passepartout_signal::MAX_ATTACHMENT_BYTES);
    assert!(of("telegram").copied && of("signal").copied);
    // The local client reads the file where it is.
    assert!(!of("socket").copied);
    assert_eq!(of("socket").max_bytes, crate::safety::tools::uploads::OTHER_MAX_BYTES);
}

#[test]
fn loading_checks_the_gateway_sections_except_a_key_written_wrongly() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(&path, "[telegram]\nenabled = true\ntoken_env = \"T\"\n").unwrap();
    let error = load(Some(&path), Some(HashMap::new())).unwrap_err().to_string();
    assert!(error.contains("nobody could talk"), "{error}");
    // A list of the wrong type is named as such, not as the empty list
    // read in its place.
    std::fs::write(
        &path,
        "[telegram]\nenabled = true\ntoken_env = \"T\"\nallowed_users = \"42\"\n",
    )
    .unwrap();
    let error = load(Some(&path), Some(HashMap::new())).unwrap_err().to_string();
    assert!(error.contains("telegram.allowed_users"), "{error}");
    assert!(!error.contains("nobody could talk"), "{error}");
}

#[test]
fn the_gateways_problems_follow_the_configurations_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("config.toml");
    std::fs::write(
        &path,
        "[socket]\nmax_clients = 0\nmax_line_bytes = 10\n[memory]\nmax_facts = 0\n",
    )
    .unwrap();
    let Err(crate::config::ConfigError::Invalid { problems }) = load(Some(&path), Some(HashMap::new())) else {
        panic!("the file loads");
    };
    assert_eq!(
        problems,
        [
            "memory.max_facts must be at least 1",
            "socket.max_line_bytes must be at least 1024",
            "socket.max_clients must be at least 1",
        ]
    );
}

#[test]
fn a_dashboard_beyond_this_machine_needs_allow_remote_and_a_public_url() {
    let mut config = Config::default();
    config.web.listen = "0.0.0.0:8787".parse().unwrap();
    let problems = problems(&config);
    assert!(
        problems.iter().any(|p| p.starts_with("web.listen 0.0.0.0:8787")),
        "{problems:?}"
    );
    config.web.allow_remote = true;
    config.web.public_url = Some("https://assistant.example.org".into());
    assert!(super::problems(&config).is_empty(), "{:?}", super::problems(&config));
}

#[test]
fn a_bridge_joins_only_groups_its_gateways_let_talk() {
    let mut config = enabled(Some("MY_TG_TOKEN"), None);
    config.telegram.allowed_chats = vec![-100];
    config.signal.enabled = true;
    config.signal.account = "+15550000000".into();
    config.signal.allowed_groups = vec!["abc=".into()];
    let bridge = |chats: &[&str]| crate::config::BridgeConfig {
        name: "family".into(),
        chats: chats.iter().map(|c| (*c).to_owned()).collect(),
    };
    config.bridges = vec![bridge(&["telegram:-100", "signal:group:abc="])];
    assert!(problems(&config).is_empty(), "{:?}", problems(&config));

    config.bridges = vec![bridge(&[
        "telegram:-200",
        "signal:group:other=",
        "web:owner",
        "pigeon:loft",
        "telegram:42",
    ])];
    assert_eq!(
        problems(&config),
        [
            "bridge \"family\": telegram:-200: the group is not in telegram.allowed_chats, so nothing of it reaches me",
            "bridge \"family\": signal:group:other=: the group is not in signal.allowed_groups, so nothing of it reaches me",
            "bridge \"family\": web:owner: web is not enabled",
            "bridge \"family\": pigeon:loft: there is no gateway called pigeon",
            "bridge \"family\": telegram:42: a private chat cannot be bridged, only a group",
        ]
    );

    config.web.enabled = true;
    config.signal.note_to_self = true;
    config.bridges = vec![bridge(&["web:owner", "signal:group:abc="])];
    let found = problems(&config);
    assert!(
        found.iter().any(|p| p.contains("web:owner: only group chats")),
        "{found:?}"
    );
    assert!(
        found.iter().any(|p| p.contains("signal.note_to_self is on")),
        "{found:?}"
    );
}

#[test]
fn the_gateways_secret_files_are_gathered_with_the_configurations_own() {
    let mut config = Config::default();
    config.llm.providers[0].api_key_file = Some("/srv/keys/model".into());
    config.telegram.token_file = Some("/srv/keys/telegram".into());
    config.tools.web_search.api_key_file = Some("/srv/keys/search".into());
    config.signal.spawn_config_dir = Some("/srv/signal".into());
    let files = secret_places(&config, &[]).files();
    for wanted in [
        "/srv/keys/model",
        "/srv/keys/telegram",
        "/srv/keys/search",
        "/srv/signal",
    ] {
        assert!(files.contains(&Path::new(wanted).to_path_buf()), "{wanted}: {files:?}");
    }
    // Matrix's keys, in the data folder, with the Matrix client built in.
    let matrix = cfg!(feature = "matrix");
    assert_eq!(files.contains(&config.data_dir().join("matrix")), matrix, "{files:?}");
    assert_eq!(files.len(), 4 + usize::from(matrix), "{files:?}");
    config.signal.spawn_config_dir = None;
    let signal_cli = crate::config::expand_home(Path::new("~/.local/share/signal-cli"));
    assert!(
        secret_places(&config, &[]).files().contains(&signal_cli),
        "signal-cli's own folder by default"
    );
}

#[test]
fn each_gateway_is_named_as_it_declares_and_the_bridges_offered_are_listed() {
    let channels = channels(&components(&Config::default()));
    let id = |name: &str| passepartout_gateway::GatewayId::new(name).unwrap();
    assert_eq!(channels.name(&id("telegram")), "Telegram");
    assert_eq!(channels.name(&id("signal")), "Signal");
    assert_eq!(channels.name(&id("web")), "the web chat");
    assert_eq!(channels.name(&id("socket")), "the terminal");
    assert_eq!(channels.word(&id("socket")), "terminal");
    assert_eq!(channels.word(&id("telegram")), "telegram");
}
