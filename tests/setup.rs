//! `passepartout setup`, run as a real process against the fake model and the
//! fake Bot API: in a script (`--non-interactive`), and typed into a
//! pseudo-terminal as a person would.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use support::fake_llm::FakeLlm;
use support::fake_signal::{FakeSignal, LINK_URI, LINKED_NUMBER, codes};
use support::fake_telegram::{FakeFailure, FakeTelegram};
use support::harness::WAIT;
use support::process::{binary, run_cli};
use support::pty::Pty;
use tokio::io::AsyncWriteExt;

const TOKEN: &str = "4242:setup-secret-token";
const KEY: &str = "sk-setup-secret-key";
/// The person who writes to the bot first.
const OWNER: i64 = 31_337;

/// A home for one run: `HOME` and the XDG folders in a temp dir.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Home {
        Home {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Where `--config` points in most tests: a folder that does not exist yet.
    fn config(&self) -> PathBuf {
        self.dir.path().join("conf").join("config.toml")
    }

    fn command(&self, args: &[&str], env: &[(&str, &str)]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(binary());
        command
            .arg("setup")
            .args(args)
            .env_remove("PASSEPARTOUT_CONFIG")
            .env_remove("RUST_LOG")
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.dir.path().join("xdg-config"))
            .env("XDG_DATA_HOME", self.dir.path().join("xdg-data"))
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }

    /// Runs `setup ARGS` with `stdin` as its standard input, to its end.
    async fn setup(&self, args: &[&str], env: &[(&str, &str)], stdin: &str) -> Output {
        let mut child = self
            .command(args, env)
            .stdin(Stdio::piped())
            .spawn()
            .expect("spawn setup");
        let mut input = child.stdin.take().unwrap();
        input.write_all(stdin.as_bytes()).await.unwrap();
        drop(input);
        tokio::time::timeout(WAIT, child.wait_with_output())
            .await
            .expect("setup finishes")
            .expect("setup runs")
    }
}

fn text(output: &Output) -> String {
    format!(
        "status {:?}\n--- stdout\n{}--- stderr\n{}",
        output.status.code(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn load(config: &Path) -> passepartout::config::Config {
    passepartout::gateways::load(Some(config), Some(Default::default())).expect("the written file loads")
}

/// The flags of a script that sets up the fake model and the fake bot,
/// writing to `config`.
fn script_args<'a>(config: &'a Path, llm: &'a str, telegram: &'a str) -> Vec<&'a str> {
    vec![
        "--config",
        config.to_str().unwrap(),
        "--non-interactive",
        "--model-url",
        llm,
        "--model-name",
        "fake-model",
        "--model-key-env",
        "SETUP_MODEL_KEY",
        "--telegram-token-env",
        "SETUP_BOT_TOKEN",
        "--telegram-api-url",
        telegram,
        "--capture-timeout-s",
        "20",
    ]
}

const SECRETS: [(&str, &str); 2] = [("SETUP_MODEL_KEY", KEY), ("SETUP_BOT_TOKEN", TOKEN)];

#[tokio::test]
async fn a_script_writes_a_config_that_loads_with_the_first_sender_as_owner() {
    let llm = FakeLlm::start().await;
    llm.require_api_key(KEY);
    let telegram = FakeTelegram::start(TOKEN).await;
    let home = Home::new();
    let config = home.config();
    let (llm_url, bot_url) = (llm.base_url(), telegram.base_url());
    let args = script_args(&config, &llm_url, &bot_url);
    let running = tokio::spawn({
        let command = home.command(&args, &SECRETS);
        async move {
            let mut command = command;
            command.stdin(Stdio::null()).output().await.expect("setup runs")
        }
    });
    // Once it waits for the first message: a group message first, which
    // makes no one the owner, then the owner's /start in their private chat.
    telegram.wait_for_calls("getUpdates", 1, WAIT).await;
    telegram.push_update(telegram.group_message(-100_555, 77, "hello group"));
    let start = telegram.push_update(telegram.text_message(OWNER, OWNER, "/start"));
    let output = tokio::time::timeout(WAIT, running)
        .await
        .expect("setup finishes")
        .unwrap();
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(
        !shown.contains(TOKEN) && !shown.contains(KEY),
        "a secret was shown:\n{shown}"
    );
    assert!(shown.contains("@fake_bot"), "{shown}");
    assert!(shown.contains(&format!("user id {OWNER}")), "{shown}");
    assert!(
        shown.contains("passepartout --config") && shown.contains(" run") && shown.contains(" doctor"),
        "{shown}"
    );

    // The update is confirmed, so the daemon will not see it; the owner was answered.
    telegram.wait_for_confirmed(start, WAIT).await;
    let greeting = telegram.wait_for_sent_to(OWNER, 1, WAIT).await;
    assert!(greeting[0].text.contains("owner"), "{:?}", greeting[0].text);

    // The files: private, secrets apart from the config.
    assert_eq!(mode(config.parent().unwrap()), 0o700);
    assert_eq!(mode(&config), 0o600);
    let token_file = config.with_file_name("telegram.token");
    let key_file = config.with_file_name("local.key");
    for (file, secret) in [(&token_file, TOKEN), (&key_file, KEY)] {
        assert_eq!(mode(file), 0o600, "{}", file.display());
        assert_eq!(std::fs::read_to_string(file).unwrap().trim(), secret);
    }
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(!written.contains(TOKEN) && !written.contains(KEY), "{written}");
    assert!(written.contains("# The Telegram bot."), "{written}");

    let loaded = load(&config);
    assert!(loaded.telegram.enabled);
    assert_eq!(loaded.telegram.allowed_users, vec![OWNER]);
    assert_eq!(loaded.telegram.approver_ids(), &[OWNER]);
    assert_eq!(loaded.telegram.token_file.as_deref(), Some(token_file.as_path()));
    assert_eq!(loaded.telegram.api_url, telegram.base_url());
    let provider = &loaded.llm.providers[0];
    assert_eq!(
        (provider.base_url.as_str(), provider.model.as_str()),
        (llm.base_url().as_str(), "fake-model")
    );
    assert_eq!(provider.api_key_file.as_deref(), Some(key_file.as_path()));

    let check = run_cli(&config, &["check-config"]).await;
    assert!(check.status.success(), "{}", text(&check));
}

#[tokio::test]
async fn an_owner_given_and_secrets_left_to_the_environment_store_no_secret() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    let home = Home::new();
    let config = home.config();
    let (llm_url, bot_url) = (llm.base_url(), telegram.base_url());
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--non-interactive",
        "--secrets",
        "env",
        "--model-url",
        &llm_url,
        "--model-name",
        "fake-model",
        "--telegram-token-stdin",
        "--telegram-api-url",
        &bot_url,
        "--owner",
        "42",
    ];
    let output = home.setup(&args, &[], &format!("{TOKEN}\n")).await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains("TELEGRAM_BOT_TOKEN=…"), "{shown}");
    assert!(telegram.calls("getUpdates").is_empty(), "no capture with --owner");
    let files: Vec<String> = std::fs::read_dir(config.parent().unwrap())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(files, vec!["config.toml".to_owned()], "only the config is stored");
    let loaded = load(&config);
    assert_eq!(loaded.telegram.token_env.as_deref(), Some("TELEGRAM_BOT_TOKEN"));
    assert_eq!(loaded.telegram.token_file, None);
    assert_eq!(loaded.telegram.allowed_users, vec![42]);
    // The file is right; the daemon's environment must hold the token.
    let check = |token: Option<&str>| {
        let mut command = std::process::Command::new(binary());
        command.arg("--config").arg(&config).arg("check-config");
        match token {
            Some(token) => command.env("TELEGRAM_BOT_TOKEN", token),
            None => command.env_remove("TELEGRAM_BOT_TOKEN"),
        };
        command.output().expect("check-config runs")
    };
    let unset = check(None);
    assert_eq!(unset.status.code(), Some(2), "{}", text(&unset));
    assert!(
        text(&unset).contains("TELEGRAM_BOT_TOKEN is not set"),
        "{}",
        text(&unset)
    );
    assert!(check(Some(TOKEN)).status.success());
}

#[tokio::test]
async fn a_script_links_the_persons_own_signal_account_for_note_to_self() {
    let llm = FakeLlm::start().await;
    let signal = FakeSignal::start().await;
    let home = Home::new();
    let config = home.config();
    let (llm_url, endpoint) = (llm.base_url(), signal.tcp_endpoint());
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--non-interactive",
        "--model-url",
        &llm_url,
        "--model-name",
        "fake-model",
        "--no-telegram",
        "--signal-link",
        "--signal-endpoint",
        &endpoint,
        "--signal-device",
        "Home server",
        "--signal-wait-s",
        "20",
    ];
    let output = home.setup(&args, &[], "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(shown.contains(LINK_URI), "the link is shown as text: {shown}");
    assert!(
        shown.contains('█') || shown.contains('▀') || shown.contains('▄'),
        "and as a QR code: {shown}"
    );
    assert!(shown.contains(&format!("Linked: {LINKED_NUMBER}")), "{shown}");
    let loaded = load(&config);
    assert!(loaded.signal.enabled && loaded.signal.note_to_self);
    assert_eq!(loaded.signal.account, LINKED_NUMBER);
    assert_eq!(
        (loaded.signal.endpoint.as_str(), loaded.signal.multi_account),
        (endpoint.as_str(), true)
    );
    assert!(!loaded.telegram.enabled);
    assert!(run_cli(&config, &["check-config"]).await.status.success());

    // A link refused stops a script, and nothing is written.
    let home = Home::new();
    let config = home.config();
    signal.fail_next("finishLink", codes::USER_ERROR, "Invalid device link uri");
    let mut args = args;
    args[1] = config.to_str().unwrap();
    let output = home.setup(&args, &[], "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains("Signal was not linked"), "{shown}");
    assert!(!config.exists(), "nothing is written");
}

#[tokio::test]
async fn a_token_telegram_refuses_is_a_clear_error_and_nothing_is_written() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    telegram.fail_next("getMe", FakeFailure::Unauthorized);
    let home = Home::new();
    let config = home.config();
    let (llm_url, bot_url) = (llm.base_url(), telegram.base_url());
    let output = home
        .setup(&script_args(&config, &llm_url, &bot_url), &SECRETS, "")
        .await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains("Telegram refused the token"), "{shown}");
    assert!(shown.contains("@BotFather"), "{shown}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(!config.parent().unwrap().exists(), "nothing written");
}

/// A URL on which nothing listens.
async fn dead_url() -> String {
    format!("http://{}/v1", crate::support::closed::address())
}

#[tokio::test]
async fn a_dead_model_endpoint_is_a_clear_error_unless_checks_are_skipped() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let home = Home::new();
    let config = home.config();
    let (dead, bot_url) = (dead_url().await, telegram.base_url());
    let output = home.setup(&script_args(&config, &dead, &bot_url), &SECRETS, "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains(&dead) && shown.contains("start the model server"),
        "{shown}"
    );
    assert!(shown.contains("--skip-checks"), "{shown}");
    assert!(!config.exists());

    let mut args = script_args(&config, &dead, &bot_url);
    args.extend(["--skip-checks", "--owner", "42"]);
    let output = home.setup(&args, &SECRETS, "").await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(telegram.calls("getMe").is_empty(), "the bot's check is skipped too");
    assert_eq!(load(&config).llm.providers[0].base_url, dead);
}

#[tokio::test]
async fn an_existing_file_is_kept_without_force_and_backed_up_with_it() {
    let llm = FakeLlm::start().await;
    let home = Home::new();
    let config = home.config();
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "# mine\n").unwrap();
    let llm_url = llm.base_url();
    let mut args = vec!["--config", config.to_str().unwrap()];
    args.extend(model_only(&llm_url));
    let output = home.setup(&args, &[], "").await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("--force"), "{}", text(&output));
    assert_eq!(std::fs::read_to_string(&config).unwrap(), "# mine\n");

    let mut forced = args.to_vec();
    forced.push("--force");
    let output = home.setup(&forced, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let mut backup = config.clone().into_os_string();
    backup.push(".bak");
    assert_eq!(std::fs::read_to_string(backup).unwrap(), "# mine\n");
    assert!(!load(&config).telegram.enabled);
}

#[tokio::test]
async fn missing_answers_name_their_flags_and_a_script_needs_non_interactive() {
    let home = Home::new();
    let config = home.config();
    let config = config.to_str().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["--non-interactive", "--no-telegram"], "--model-name"),
        (&["--non-interactive", "--model-name", "m"], "--telegram-token-env"),
        (
            &[
                "--non-interactive",
                "--model-name",
                "m",
                "--telegram-token-env",
                "SETUP_UNSET_TOKEN",
            ],
            "SETUP_UNSET_TOKEN",
        ),
        // Standard input is a pipe here, not a terminal.
        (&["--model-name", "m"], "--non-interactive"),
    ];
    for (args, named) in cases {
        let mut all = vec!["--config", config, "--skip-checks"];
        all.extend(args);
        let output = home.setup(&all, &[], "").await;
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", text(&output));
        assert!(
            String::from_utf8_lossy(&output.stderr).contains(named),
            "{args:?}: {}",
            text(&output)
        );
    }
    assert!(!Path::new(config).exists());
}

/// The flags of a script that sets up the model at `llm_url` alone.
fn model_only(llm_url: &str) -> [&str; 6] {
    [
        "--non-interactive",
        "--no-telegram",
        "--model-url",
        llm_url,
        "--model-name",
        "fake-model",
    ]
}

#[tokio::test]
async fn without_config_it_writes_the_default_file_under_xdg_config_home() {
    let llm = FakeLlm::start().await;
    let home = Home::new();
    let llm_url = llm.base_url();
    let output = home.setup(&model_only(&llm_url), &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let default = home
        .dir
        .path()
        .join("xdg-config")
        .join("passepartout")
        .join("config.toml");
    assert_eq!(mode(&default), 0o600);
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("passepartout run"),
        "{}",
        text(&output)
    );
    assert_eq!(load(&default).llm.providers[0].model, "fake-model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_on_a_terminal_the_answers_are_taken_and_secrets_are_not_echoed() {
    let llm = FakeLlm::start().await;
    llm.require_api_key(KEY);
    let telegram = FakeTelegram::start(TOKEN).await;
    let home = Home::new();
    let config = home.config();
    let mut command = std::process::Command::new(binary());
    command
        .args(["--config", config.to_str().unwrap(), "setup", "--telegram-api-url"])
        .arg(telegram.base_url())
        .env_remove("PASSEPARTOUT_CONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", home.dir.path())
        .env("XDG_CONFIG_HOME", home.dir.path().join("xdg-config"));
    let mut pty = Pty::spawn(command);
    let wait = Duration::from_secs(20);
    pty.expect("Which one [1]: ", wait).await;
    pty.type_line("1");
    pty.expect("[http://127.0.0.1:11434/v1]: ", wait).await;
    pty.type_line(&llm.base_url());
    pty.expect("The model's name [llama3.2]: ", wait).await;
    pty.type_line("fake-model");
    // An answer that is not secret is echoed, as a terminal does.
    pty.expect("fake-model", wait).await;
    pty.expect("Its API key (not shown; Enter for none): ", wait).await;
    pty.type_line(KEY);
    pty.expect("The model answers", wait).await;
    pty.expect("Set up a Telegram bot? [Y/n] ", wait).await;
    pty.type_line("");
    pty.expect("The bot's token (not shown): ", wait).await;
    pty.type_line(TOKEN);
    pty.expect("The bot answers: @fake_bot", wait).await;
    pty.expect("Now send /start to @fake_bot", wait).await;
    telegram.push_update(telegram.text_message(OWNER, OWNER, "/start"));
    pty.expect(&format!("user id {OWNER}"), wait).await;
    pty.expect(
        "Link your own Signal account too (you need signal-cli and your phone)? [y/N] ",
        wait,
    )
    .await;
    pty.type_line("");
    pty.expect("Set up a Matrix account for the assistant? [y/N] ", wait)
        .await;
    pty.type_line("");
    pty.expect("A dashboard in your browser too", wait).await;
    pty.type_line("");
    pty.rest(wait).await;
    let status = pty.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", pty.shown);
    assert!(!pty.shown.contains(KEY), "the key was echoed:\n{}", pty.shown);
    assert!(!pty.shown.contains(TOKEN), "the token was echoed:\n{}", pty.shown);
    assert!(pty.shown.contains("web --open"), "{}", pty.shown);
    let loaded = load(&config);
    assert!(loaded.web.enabled, "the dashboard is on by default when asked");
    assert_eq!(loaded.telegram.allowed_users, vec![OWNER]);
    assert_eq!(loaded.llm.providers[0].model, "fake-model");
    assert_eq!(
        std::fs::read_to_string(config.with_file_name("local.key"))
            .unwrap()
            .trim(),
        KEY
    );
    assert!(run_cli(&config, &["check-config"]).await.status.success());
}

#[tokio::test]
async fn no_one_writing_in_time_or_another_poller_is_a_clear_error_naming_owner() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    let home = Home::new();
    let config = home.config();
    let (llm_url, bot_url) = (llm.base_url(), telegram.base_url());
    let mut args = script_args(&config, &llm_url, &bot_url);
    *args.last_mut().unwrap() = "1";
    let output = home.setup(&args, &SECRETS, "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains("no one wrote to the bot within 1 s"), "{shown}");
    assert!(shown.contains("--owner ID"), "{shown}");
    assert!(!config.exists());

    // A webhook set elsewhere takes the updates: getUpdates answers 409.
    telegram.set_webhook("https://example.invalid/hook");
    let output = home.setup(&args, &SECRETS, "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains("another program takes this bot's updates"), "{shown}");
    assert!(!shown.contains(TOKEN), "{shown}");
}

#[tokio::test]
async fn the_model_is_asked_one_short_question_and_its_answer_is_shown() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| support::fake_llm::Script::Reply("OK".into()));
    let home = Home::new();
    let llm_url = llm.base_url();
    let config = home.config();
    let mut args = vec!["--config", config.to_str().unwrap()];
    args.extend(model_only(&llm_url));
    let output = home.setup(&args, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(
        text(&output).contains("fake-model, asked to reply with OK, answered \"OK\""),
        "{}",
        text(&output)
    );
    let asked = llm.requests();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["model"], "fake-model");
    assert_eq!(asked[0]["max_tokens"], 16);
    assert_eq!(support::fake_llm::last_user_text(&asked[0]), "Reply with OK.");
}

#[tokio::test]
async fn a_server_that_refuses_the_answers_limit_is_asked_again_without_it() {
    use support::fake_llm::Script;
    let llm = FakeLlm::start().await;
    llm.set_responder(|request| match request.get("max_tokens") {
        Some(_) => Script::Status {
            code: 400,
            retry_after: None,
            body: Some(
                r#"{"error":{"message":"Unsupported parameter: 'max_tokens'","code":"unsupported_parameter"}}"#.into(),
            ),
        },
        None => Script::Reply("OK".into()),
    });
    let home = Home::new();
    let llm_url = llm.base_url();
    let config = home.config();
    let mut args = vec!["--config", config.to_str().unwrap()];
    args.extend(model_only(&llm_url));
    let output = home.setup(&args, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(text(&output).contains("answered \"OK\""), "{}", text(&output));
    assert_eq!(llm.requests().len(), 2);
}

#[tokio::test]
async fn a_model_the_server_does_not_have_is_named_with_the_ones_it_offers() {
    let llm = FakeLlm::start().await;
    llm.set_responder(|_| support::fake_llm::Script::Status {
        code: 404,
        retry_after: None,
        body: Some(
            r#"{"error":{"message":"model \"fake-modle\" not found, try pulling it first","type":"not_found_error"}}"#
                .into(),
        ),
    });
    let home = Home::new();
    let llm_url = llm.base_url();
    let config = home.config();
    let mut args = vec!["--config", config.to_str().unwrap()];
    args.extend(model_only(&llm_url));
    *args.last_mut().unwrap() = "fake-modle";
    let output = home.setup(&args, &[], "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains("HTTP 404"), "{shown}");
    // The fake lists one model, "fake".
    assert!(
        shown.contains("the server has no model \"fake-modle\"; it offers: fake"),
        "{shown}"
    );
    assert!(!config.exists(), "nothing written");
}

#[tokio::test]
async fn an_anthropic_model_not_found_lists_anthropics_models() {
    use support::fake_anthropic::{FakeAnthropic, Script};
    let claude = FakeAnthropic::start().await;
    claude.require_api_key(KEY);
    claude.push(Script::Error {
        status: 404,
        kind: "not_found_error".into(),
        message: "model: claude-fak".into(),
        retry_after: None,
    });
    let home = Home::new();
    let claude_url = claude.base_url();
    let config = home.config();
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--non-interactive",
        "--no-telegram",
        "--model-kind",
        "anthropic",
        "--model-url",
        &claude_url,
        "--model-name",
        "claude-fak",
        "--model-key-env",
        "SETUP_MODEL_KEY",
    ];
    let output = home.setup(&args, &SECRETS, "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(shown.contains("it offers: claude-fake"), "{shown}");
    assert!(shown.contains("did you mean \"claude-fake\"?"), "{shown}");
    assert!(!shown.contains(KEY), "{shown}");
    let asked = claude.message_requests();
    assert_eq!(asked[0]["max_tokens"], 16, "{asked:?}");
}

/// A file a person wrote and commented by hand, with a bot on `OLD_TOKEN`.
const HAND_WRITTEN: &str = "# My assistant. Hands off this comment.\n\
    data_dir = \"/srv/pp\"   # the data\n\n\
    [pipeline]\n\
    max_depth = 7 # deep enough\n\n\
    [[llm.providers]]\n\
    name = \"mine\"\n\
    base_url = \"http://127.0.0.1:9/v1\"\n\
    model = \"old-model\"\n\n\
    [[llm.providers]]\n\
    name = \"backup\"  # tried second\n\
    base_url = \"http://127.0.0.1:9/v1\"\n\
    model = \"other\"\n\n\
    # The bot, by hand.\n\
    [telegram]\n\
    enabled = false\n\
    token_env = \"OLD_TOKEN\"\n\
    allowed_users = [1]\n\n\
    [approvals]\n\
    expire_after_s = 600 # ten minutes\n";

#[tokio::test]
async fn only_telegram_replaces_that_section_and_keeps_the_rest_byte_for_byte() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start(TOKEN).await;
    let home = Home::new();
    let config = home.config();
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, HAND_WRITTEN).unwrap();
    let bot_url = telegram.base_url();
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--non-interactive",
        "--only",
        "telegram",
        "--telegram-token-env",
        "SETUP_BOT_TOKEN",
        "--telegram-api-url",
        &bot_url,
        "--owner",
        "42",
    ];
    let output = home.setup(&args, &SECRETS, "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(!shown.contains(TOKEN), "{shown}");
    assert!(shown.contains(&format!("Changed {}", config.display())), "{shown}");
    assert!(llm.requests().is_empty(), "the model is not asked");

    let written = std::fs::read_to_string(&config).unwrap();
    let (before, rest) = HAND_WRITTEN.split_once("# The bot, by hand.\n").unwrap();
    let after = &rest[rest.find("[approvals]").unwrap()..];
    assert!(written.starts_with(before), "{written}");
    assert!(written.ends_with(after), "{written}");
    assert!(!written.contains("OLD_TOKEN"), "{written}");
    let mut backup = config.clone().into_os_string();
    backup.push(".bak");
    assert_eq!(std::fs::read_to_string(backup).unwrap(), HAND_WRITTEN);

    let loaded = load(&config);
    assert!(loaded.telegram.enabled);
    assert_eq!(loaded.telegram.allowed_users, vec![42]);
    let token_file = config.with_file_name("telegram.token");
    assert_eq!(loaded.telegram.token_file.as_deref(), Some(token_file.as_path()));
    assert_eq!(std::fs::read_to_string(&token_file).unwrap().trim(), TOKEN);
    assert_eq!(loaded.llm.providers.len(), 2);
    assert_eq!(loaded.llm.providers[0].model, "old-model");
    assert_eq!(loaded.pipeline.max_depth, 7);
}

#[tokio::test]
async fn only_model_changes_the_model_asked_first_and_keeps_the_others() {
    let llm = FakeLlm::start().await;
    let home = Home::new();
    let config = home.config();
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, HAND_WRITTEN).unwrap();
    let llm_url = llm.base_url();
    let mut args = vec!["--config", config.to_str().unwrap(), "--only", "model"];
    args.extend(model_only(&llm_url));
    let output = home.setup(&args, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert_eq!(llm.requests().len(), 1, "the new model is asked");
    let loaded = load(&config);
    let names: Vec<&str> = loaded.llm.providers.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["mine", "backup"], "the file's own name is kept");
    assert_eq!(loaded.llm.providers[0].model, "fake-model");
    assert_eq!(
        loaded.telegram.token_env.as_deref(),
        Some("OLD_TOKEN"),
        "the bot is as it was"
    );
    let written = std::fs::read_to_string(&config).unwrap();
    let bot = &HAND_WRITTEN[HAND_WRITTEN.find("[[llm.providers]]\nname = \"backup\"").unwrap()..];
    assert!(written.ends_with(bot), "{written}");
    assert!(
        written.starts_with("# My assistant. Hands off this comment.\n"),
        "{written}"
    );
}

#[tokio::test]
async fn only_on_a_missing_file_or_one_the_new_part_would_break_changes_nothing() {
    let llm = FakeLlm::start().await;
    let home = Home::new();
    let config = home.config();
    let llm_url = llm.base_url();
    let mut args = vec!["--config", config.to_str().unwrap(), "--only", "model"];
    args.extend(model_only(&llm_url));
    let output = home.setup(&args, &[], "").await;
    assert_eq!(output.status.code(), Some(2), "{}", text(&output));
    assert!(text(&output).contains("without --only"), "{}", text(&output));
    assert!(!config.exists());

    // A voter names the model asked first; the new one, of another kind,
    // has another name.
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let voting =
        format!("{HAND_WRITTEN}\n[skills.consensus]\nvoters = [\"mine\", \"backup\"]\napplies_to = [\"shell\"]\n");
    std::fs::write(&config, &voting).unwrap();
    args.extend(["--model-kind", "anthropic", "--skip-checks"]);
    let output = home.setup(&args, &[], "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(1), "{shown}");
    assert!(
        shown.contains("left as it was") && shown.contains("\"mine\""),
        "{shown}"
    );
    assert_eq!(std::fs::read_to_string(&config).unwrap(), voting);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_telegram_on_a_terminal_asks_for_the_bot_alone() {
    let telegram = FakeTelegram::start(TOKEN).await;
    let home = Home::new();
    let config = home.config();
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, HAND_WRITTEN).unwrap();
    let mut command = std::process::Command::new(binary());
    command
        .args(["--config", config.to_str().unwrap(), "setup", "--only", "telegram"])
        .args(["--owner", "42", "--telegram-api-url"])
        .arg(telegram.base_url())
        .env_remove("PASSEPARTOUT_CONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", home.dir.path())
        .env("XDG_CONFIG_HOME", home.dir.path().join("xdg-config"));
    let mut pty = Pty::spawn(command);
    let wait = Duration::from_secs(20);
    pty.expect("This changes the telegram part of", wait).await;
    // No question about the model, nor whether to set up a bot at all.
    pty.expect("The bot's token (not shown): ", wait).await;
    pty.type_line(TOKEN);
    pty.expect("The bot answers: @fake_bot", wait).await;
    pty.rest(wait).await;
    let status = pty.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", pty.shown);
    for asked in ["Which one", "Set up a Telegram bot?", "Signal"] {
        assert!(!pty.shown.contains(asked), "{asked:?} asked:\n{}", pty.shown);
    }
    assert!(!pty.shown.contains(TOKEN), "the token was echoed:\n{}", pty.shown);
    let loaded = load(&config);
    assert_eq!(loaded.telegram.allowed_users, vec![42]);
    assert_eq!(loaded.llm.providers[0].model, "old-model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_model_on_a_terminal_offers_the_files_own_values_and_keeps_its_key() {
    let llm = FakeLlm::start().await;
    llm.require_api_key(KEY);
    let home = Home::new();
    let config = home.config();
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    let key_file = config.with_file_name("mine.key");
    std::fs::write(&key_file, KEY).unwrap();
    let llm_url = llm.base_url();
    let file = format!(
        "[[llm.providers]]\nname = \"mine\"\nbase_url = {llm_url:?}\nmodel = \"fake-model\"\napi_key_file = {:?}\n",
        key_file.display().to_string()
    );
    std::fs::write(&config, &file).unwrap();
    let mut command = std::process::Command::new(binary());
    command
        .args(["--config", config.to_str().unwrap(), "setup", "--only", "model"])
        .env_remove("PASSEPARTOUT_CONFIG")
        .env_remove("RUST_LOG")
        .env("HOME", home.dir.path())
        .env("XDG_CONFIG_HOME", home.dir.path().join("xdg-config"))
        .env("XDG_DATA_HOME", home.dir.path().join("xdg-data"));
    let mut pty = Pty::spawn(command);
    let wait = Duration::from_secs(20);
    // Enter at every question takes what the file says.
    pty.expect("Which one [1]: ", wait).await;
    pty.type_line("");
    pty.expect(&format!("Its URL, up to and including /v1 [{llm_url}]: "), wait)
        .await;
    pty.type_line("");
    pty.expect("The model's name [fake-model]: ", wait).await;
    pty.type_line("");
    pty.expect("Enter keeps the current one", wait).await;
    pty.type_line("");
    pty.expect("The model answers", wait).await;
    pty.rest(wait).await;
    let status = pty.child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", pty.shown);
    let loaded = load(&config);
    let provider = &loaded.llm.providers[0];
    assert_eq!(provider.name, "mine");
    assert_eq!(provider.base_url, llm_url);
    assert_eq!(provider.model, "fake-model");
    assert_eq!(
        provider.api_key_file.as_deref(),
        Some(key_file.as_path()),
        "the key is kept where it was"
    );
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), KEY);
    assert!(!pty.shown.contains(KEY), "the key was shown:\n{}", pty.shown);
}

#[tokio::test]
async fn the_dashboard_is_offered_and_with_no_messenger_the_terminal_chat_is_next() {
    let llm = FakeLlm::start().await;
    let home = Home::new();
    let config = home.config();
    let llm_url = llm.base_url();
    let mut args = vec!["--config", config.to_str().unwrap(), "--web"];
    args.extend(model_only(&llm_url));
    let output = home.setup(&args, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    let loaded = load(&config);
    assert!(loaded.web.enabled);
    assert!(loaded.web.listen.ip().is_loopback());
    let shown = String::from_utf8_lossy(&output.stdout);
    for next in ["run ", "chat ", "web --open", "doctor"] {
        assert!(
            shown.contains(&format!(" {} {next}", config.display())),
            "{next:?} not named:\n{shown}"
        );
    }
    let written = std::fs::read_to_string(&config).unwrap();
    assert!(!written.contains("config.example.toml"), "{written}");
    assert!(written.contains("passepartout config"), "{written}");

    // Without a messenger's flags nor --web, a script gets neither.
    let plain = home.config().with_file_name("plain.toml");
    let mut args = vec!["--config", plain.to_str().unwrap()];
    args.extend(model_only(&llm_url));
    let output = home.setup(&args, &[], "").await;
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
    assert!(!load(&plain).web.enabled);
}

#[tokio::test]
async fn a_running_daemon_reads_the_changed_file_instead_of_being_started_again() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = support::process::write_config(dir.path(), &llm.base_url());
    let daemon = support::process::Running::start(&config).await;
    let home = Home::new();
    let args = [
        "--config",
        config.to_str().unwrap(),
        "--only",
        "model",
        "--non-interactive",
        "--model-name",
        "fake-model-2",
    ];
    let output = home.setup(&args, &[], "").await;
    let shown = text(&output);
    assert_eq!(output.status.code(), Some(0), "{shown}");
    assert!(shown.contains("The running daemon read the file again"), "{shown}");
    assert!(
        shown.contains("llm.providers"),
        "the new model is not said to apply:\n{shown}"
    );
    assert!(!shown.contains(" run "), "a second daemon is suggested:\n{shown}");
    daemon.kill().await;
}
