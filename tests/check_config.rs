//! `passepartout check-config`, run as a real process: every problem in one
//! run, each named by its dotted key in the user's terms, and a variable
//! from the environment named when it is the one at fault.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `check-config` on `file` with `env` added to a clean `PASSEPARTOUT_…` environment.
fn check_config(file: &Path, env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_passepartout"));
    for (name, _) in std::env::vars().filter(|(name, _)| name.starts_with("PASSEPARTOUT_")) {
        command.env_remove(name);
    }
    command
        .arg("--config")
        .arg(file)
        .arg("check-config")
        .envs(env.iter().copied())
        .output()
        .expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn write(dir: &Path, text: &str) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn six_problems_of_every_kind_are_reported_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        r#"
[store]
backup_every_s = "hourly"
[pipeline]
max_dept = 3
[socket]
max_clients = 0
enabeld = true
[[llm.providers]]
name = "local"
kind = "openaii"
[[loops.entries]]
name = "stretch"
message = "stand up"
schedule = "every hour"
output = "socket:default"
mesage = "typo"
"#,
    );
    let output = check_config(&path, &[]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    for expected in [
        "6 problem(s)",
        r#"store.backup_every_s: expected a whole number, found a string "hourly""#,
        "pipeline.max_dept is not a setting; did you mean pipeline.max_depth?",
        "socket.enabeld is not a setting; did you mean socket.enabled?",
        r#"llm.providers[0].kind: "openaii" is not one of "openai", "anthropic""#,
        "socket.max_clients must be at least 1",
        "loops.entries[0].mesage is not a setting; did you mean loops.entries[0].message?",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from:\n{text}");
    }
    for internal in [
        "variant constructor",
        "enum ",
        "struct ",
        "invalid type:",
        "]kind",
        "64-bit",
    ] {
        assert!(!text.contains(internal), "{internal:?} leaked into:\n{text}");
    }
}

#[test]
fn a_variable_that_sets_nothing_is_a_warning_and_a_bad_value_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "[pipeline]\nmax_depth = 3\n");
    let output = check_config(&path, &[("PASSEPARTOUT_PIPELINE__MAX_DEPHT", "5")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let expected = "warning: PASSEPARTOUT_PIPELINE__MAX_DEPHT: pipeline.max_depht is not a setting; \
                    did you mean pipeline.max_depth?; ignored";
    assert!(stderr(&output).contains(expected), "{}", stderr(&output));

    let output = check_config(&path, &[("PASSEPARTOUT_STORE__BACKUP_EVERY_S", "hourly")]);
    assert_eq!(output.status.code(), Some(2));
    let expected =
        r#"PASSEPARTOUT_STORE__BACKUP_EVERY_S: store.backup_every_s: expected a whole number, found a string "hourly""#;
    assert!(stderr(&output).contains(expected), "{}", stderr(&output));
}

#[test]
fn lists_come_from_the_environment_and_passepartout_config_names_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "[telegram]\nallowed_users = [1]\n");
    for users in ["123", "123,456", "[123, 456]"] {
        let output = check_config(&path, &[("PASSEPARTOUT_TELEGRAM__ALLOWED_USERS", users)]);
        assert_eq!(output.status.code(), Some(0), "{users}: {}", stderr(&output));
    }
    let output = check_config(&path, &[("PASSEPARTOUT_TELEGRAM__ALLOWED_USERS", "12,abc")]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).contains("telegram.allowed_users"),
        "{}",
        stderr(&output)
    );

    // No --config: the variable names the file (here a broken one, to see it read).
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[pipeline]\nmax_depth = \"deep\"\n").unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_passepartout"))
        .arg("check-config")
        .env("PASSEPARTOUT_CONFIG", &broken)
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains(&broken.display().to_string()), "{text}");
    assert!(text.contains("pipeline.max_depth"), "{text}");
    assert!(!text.contains("not a setting"), "not taken for a setting: {text}");
}

#[test]
fn a_toml_syntax_error_gives_its_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "[pipeline]\nmax_depth = = 3\n");
    let output = check_config(&path, &[]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("line 2, column 13"), "{text}");
}

#[test]
fn the_daemon_refuses_to_start_with_the_same_full_list() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "[pipeline]\nmax_dept = 3\n[socket]\nmax_clients = 0\n");
    let output = Command::new(env!("CARGO_BIN_EXE_passepartout"))
        .arg("--config")
        .arg(&path)
        .arg("run")
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(text.contains("2 problem(s)"), "{text}");
    assert!(text.contains("pipeline.max_dept is not a setting"), "{text}");
    assert!(text.contains("socket.max_clients must be at least 1"), "{text}");
}

#[test]
fn a_voter_that_names_no_provider_and_a_misspelt_tool_to_vote_on_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        r#"
[[llm.providers]]
name = "local"
[[llm.providers]]
name = "gpt"
[skills.consensus]
voters = ["local", "gtp"]
applies_to = ["shell", "htp_get"]
on_disagreement = "deny"
"#,
    );
    let output = check_config(&path, &[]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    for expected in [
        "skills.consensus.voters[1] \"gtp\" names no [[llm.providers]] entry (by its name; they are: local, gpt)",
        "skills.consensus.applies_to[1]: there is no tool \"htp_get\"; did you mean \"http_get\"?",
    ] {
        assert!(text.contains(expected), "{expected:?} missing from {text}");
    }
    let wrong = write(
        dir.path(),
        "[skills.consensus]\napplies_to = \"everything\"\non_disagreement = \"shrug\"\n",
    );
    let text = stderr(&check_config(&wrong, &[]));
    assert!(text.contains("skills.consensus.applies_to"), "{text}");
    assert!(text.contains("skills.consensus.on_disagreement"), "{text}");
}

/// An enabled bot whose token is in `MY_TG_TOKEN_FOR_TESTS` (`data_dir` in `dir`).
fn bot_reading(dir: &Path, token: &str) -> std::path::PathBuf {
    let data = dir.join("data").display().to_string();
    write(
        dir,
        &format!("data_dir = {data:?}\n[telegram]\nenabled = true\n{token}\nallowed_users = [42]\n"),
    )
}

#[test]
fn a_token_variable_that_is_not_set_fails_the_check_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = bot_reading(dir.path(), "token_env = \"MY_TG_TOKEN_FOR_TESTS\"");
    let output = check_config(&path, &[]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let text = stderr(&output);
    assert_eq!(text.matches("MY_TG_TOKEN_FOR_TESTS").count(), 1, "{text}");
    assert!(text.contains("telegram.token_env"), "{text}");
    assert!(text.contains("telegram.token_file"), "the other way is named: {text}");

    let set = ("MY_TG_TOKEN_FOR_TESTS", "123:very-secret");
    let output = check_config(&path, &[set]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stderr(&output).contains("very-secret"));

    // The variable a PASSEPARTOUT_… override names is the one looked up.
    let elsewhere = [("PASSEPARTOUT_TELEGRAM__TOKEN_ENV", "OTHER_TG_TOKEN_FOR_TESTS"), set];
    let text = stderr(&check_config(&path, &elsewhere));
    assert!(text.contains("OTHER_TG_TOKEN_FOR_TESTS is not set"), "{text}");
    let output = check_config(&path, &[elsewhere[0], ("OTHER_TG_TOKEN_FOR_TESTS", "123:x")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // A bot turned off needs no token.
    let output = check_config(&path, &[("PASSEPARTOUT_TELEGRAM__ENABLED", "false")]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
}

#[test]
fn a_token_file_missing_or_unreadable_fails_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("telegram.token");
    let path = bot_reading(dir.path(), &format!("token_file = {:?}", token.display().to_string()));
    let text = stderr(&check_config(&path, &[]));
    assert!(
        text.contains(&format!("telegram.token_file {} does not exist", token.display())),
        "{text}"
    );

    std::fs::write(&token, "123:very-secret\n").unwrap();
    assert_eq!(check_config(&path, &[]).status.code(), Some(0));
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o000)).unwrap();
    // Root reads every file: there is nothing to refuse then.
    if std::fs::read(&token).is_err() {
        let output = check_config(&path, &[]);
        assert_eq!(output.status.code(), Some(2));
        assert!(stderr(&output).contains("permission denied"), "{}", stderr(&output));
    }
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    std::fs::write(&token, "\n").unwrap();
    let text = stderr(&check_config(&path, &[]));
    assert!(text.contains("is empty"), "{text}");
}

#[test]
fn the_daemon_with_a_token_it_cannot_read_says_so_once_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = bot_reading(dir.path(), "token_env = \"MY_TG_TOKEN_FOR_TESTS\"");
    let output = Command::new(env!("CARGO_BIN_EXE_passepartout"))
        .arg("--config")
        .arg(&path)
        .arg("run")
        .env_remove("MY_TG_TOKEN_FOR_TESTS")
        .env("RUST_LOG", "info")
        .output()
        .expect("the binary runs");
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert_eq!(text.matches("MY_TG_TOKEN_FOR_TESTS").count(), 1, "{text}");
    assert!(
        !dir.path().join("data").join("passepartout.sock").exists(),
        "no gateway was started"
    );
}

#[tokio::test]
async fn the_daemon_started_as_a_library_refuses_a_bot_without_its_token_before_anything_else() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = passepartout::config::Config {
        data_dir: dir.path().join("data"),
        ..Default::default()
    };
    config.telegram.enabled = true;
    config.telegram.allowed_users = vec![42];
    config.telegram.token_file = Some(dir.path().join("telegram.token"));
    let error = passepartout::Daemon::start(config).await.err().expect("refused");
    let passepartout::StartError::Unstartable { problems } = &error else {
        panic!("{error}");
    };
    assert!(problems[0].contains("telegram.token_file"), "{problems:?}");
    assert!(!dir.path().join("data").exists(), "nothing was touched");
}

#[test]
fn signal_people_listed_by_phone_number_are_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        r#"
[signal]
enabled = true
account = "+15550000001"
endpoint = "tcp:127.0.0.1:7583"
allowed_senders = ["0a0a0a0a-0000-4000-8000-00000000000a", "+15557654321"]
"#,
    );
    let output = check_config(&path, &[]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let expected = "warning: signal.allowed_senders names +15557654321 by phone number: that trusts whoever \
                    holds the number";
    assert!(stderr(&output).contains(expected), "{}", stderr(&output));
}
