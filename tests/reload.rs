//! Reloading the configuration of the real daemon while it runs: SIGHUP
//! and `passepartout reload` apply a new allowlist, system prompt, model
//! provider and configured loop at once, name the changed settings that
//! wait for a restart, and refuse a broken file whole, keeping the running
//! configuration. The daemon talks to the fake Bot API and fake models.

use crate::support;

use std::path::{Path, PathBuf};

use support::fake_llm::{FakeLlm, Script};
use support::fake_telegram::FakeTelegram;
use support::harness::{WAIT, texts_of};
use support::process::{Running, run_cli};

const TOKEN: &str = "123456:reload-token";
const OWNER: i64 = 42;
const STRANGER: i64 = 77;

/// What the config file says; everything else is fixed.
struct Settings<'a> {
    llm: &'a FakeLlm,
    allowed: &'a [i64],
    prompt: &'a str,
    max_depth: u32,
    turn_timeout_s: u64,
    /// Raw TOML appended at the end (a loop, or a fault).
    extra: &'a str,
}

impl<'a> Settings<'a> {
    /// The owner alone, a plain prompt, the default limits.
    fn first(llm: &'a FakeLlm) -> Settings<'a> {
        Settings {
            llm,
            allowed: &[OWNER],
            prompt: "You help.",
            max_depth: 4,
            turn_timeout_s: 300,
            extra: "",
        }
    }
}

struct Setup {
    dir: tempfile::TempDir,
    telegram: FakeTelegram,
}

impl Setup {
    async fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), TOKEN).unwrap();
        Setup {
            dir,
            telegram: FakeTelegram::start(TOKEN).await,
        }
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("config.toml")
    }

    /// (Re)writes the config file.
    fn write(&self, settings: &Settings<'_>) {
        let dir = self.dir.path();
        let text = format!(
            "data_dir = {data:?}\n\
             [store]\nbackup_every_s = 0\n\
             [pipeline]\nshutdown_grace_s = 5\nmax_depth = {depth}\nturn_timeout_s = {turn}\nsystem_prompt = {prompt:?}\n\
             [pairing]\nenabled = false\n\
             [telegram]\nenabled = true\ntoken_file = {token:?}\napi_url = {api:?}\n\
             allowed_users = {allowed:?}\napprovers = [{OWNER}]\npoll_timeout_s = 1\n\
             [[llm.providers]]\nname = \"fake\"\nbase_url = {llm:?}\nmodel = \"fake-model\"\ntimeout_s = 10\n\
             {extra}",
            data = dir.join("data").display().to_string(),
            depth = settings.max_depth,
            turn = settings.turn_timeout_s,
            prompt = settings.prompt,
            token = dir.join("token").display().to_string(),
            api = self.telegram.base_url(),
            allowed = settings.allowed,
            llm = settings.llm.base_url(),
            extra = settings.extra,
        );
        // Whole or not at all, as an editor saving it would.
        let partial = dir.join("config.toml.new");
        std::fs::write(&partial, text).unwrap();
        std::fs::rename(partial, self.config()).unwrap();
    }

    /// Writes the config file with `settings` and starts the daemon on it.
    async fn start(&self, settings: &Settings<'_>) -> Running {
        self.write(settings);
        Running::start(&self.config()).await
    }

    /// `text` from `user` in their private chat; waits until the daemon
    /// decided about it.
    async fn write_as(&self, user: i64, text: &str) {
        let id = self.telegram.push_update(self.telegram.text_message(user, user, text));
        self.telegram.wait_for_confirmed(id, WAIT).await;
    }
}

impl Setup {
    /// The stranger writes, then the owner: only the owner's words reach
    /// the model, as its `nth` request (the old allowlist holds, `why`).
    async fn only_the_owner_talks(&self, llm: &FakeLlm, nth: usize, why: &str) {
        self.write_as(STRANGER, "let me in").await;
        self.write_as(OWNER, "still me").await;
        let (_, user) = nth_request(llm, nth).await;
        assert_eq!(user, "still me", "{why}");
    }
}

/// A daemon started on the first settings, with a fake model of its own.
async fn started() -> (Setup, FakeLlm, Running) {
    let setup = Setup::new().await;
    let llm = FakeLlm::start().await;
    let daemon = setup.start(&Settings::first(&llm)).await;
    (setup, llm, daemon)
}

fn sighup(daemon: &Running) {
    let pid = daemon.child.id().expect("still running") as i32;
    rustix::process::kill_process(
        rustix::process::Pid::from_raw(pid).unwrap(),
        rustix::process::Signal::HUP,
    )
    .expect("send SIGHUP");
}

async fn reload(config: &Path) -> (bool, String, String) {
    let output = run_cli(config, &["reload"]).await;
    let code = output.status.code();
    assert!(matches!(code, Some(0 | 2)), "exit {code:?}");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The gate `passepartout tools` shows for `tool`.
async fn gate(config: &Path, tool: &str) -> String {
    let output = run_cli(config, &["tools", "--json"]).await;
    let tools: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON listing");
    let line = tools.as_array().unwrap().iter().find(|t| t["name"] == tool);
    line.unwrap_or_else(|| panic!("{tool} missing from {tools}"))["gate"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// The last request the model got: its system text and its last user text.
async fn nth_request(llm: &FakeLlm, n: usize) -> (String, String) {
    let requests = llm.wait_for_requests(n, WAIT).await;
    let last = &requests[n - 1];
    (
        texts_of(last, "system").join("\n"),
        texts_of(last, "user").last().cloned().unwrap_or_default(),
    )
}

#[tokio::test]
async fn sighup_applies_a_new_allowlist_prompt_and_loop_at_once_and_names_what_waits_for_a_restart() {
    let setup = Setup::new().await;
    let llm = FakeLlm::start().await;
    let before = Settings {
        prompt: "You are the first assistant.",
        ..Settings::first(&llm)
    };
    let daemon = setup.start(&before).await;

    setup.write_as(STRANGER, "let me in").await;
    setup.write_as(OWNER, "first").await;
    let (system, user) = nth_request(&llm, 1).await;
    assert_eq!(user, "first", "the stranger's message never reached the model");
    assert!(system.contains("You are the first assistant."), "{system}");

    assert_eq!(gate(&setup.config(), "read_file").await, "allowed");
    setup.write(&Settings {
        allowed: &[OWNER, STRANGER],
        prompt: "You are the second assistant.",
        max_depth: 5,
        extra: "[tools]\nrequire_approval = [\"shell\", \"write_file\", \"schedule\", \"read_file\"]\n\
                [[loops.entries]]\nname = \"standup\"\nmessage = \"Stand up.\"\n\
                schedule = \"daily at 07:30\"\noutput = \"telegram:42\"\n",
        ..before
    });
    sighup(&daemon);
    daemon.wait_for_log(&["configuration reloaded"]).await;
    let named = daemon.wait_for_log(&["apply only after a restart"]).await;
    assert!(named.contains("pipeline.max_depth"), "{named}");
    assert!(
        !named.contains("allowed_users") && !named.contains("system_prompt"),
        "live settings are not named as waiting: {named}"
    );

    setup.write_as(STRANGER, "now?").await;
    let (system, user) = nth_request(&llm, 2).await;
    assert_eq!(user, "now?", "the new allowlist applies at once");
    assert!(system.contains("You are the second assistant."), "{system}");

    assert_eq!(
        gate(&setup.config(), "read_file").await,
        "needs approval",
        "the new gate holds"
    );
    let loops = run_cli(&setup.config(), &["loops", "--json"]).await;
    let loops = String::from_utf8_lossy(&loops.stdout);
    assert!(loops.contains("\"standup\""), "the configured loop runs: {loops}");

    let status = daemon.terminate().await;
    assert!(status.success(), "SIGHUP did not end the daemon: {status:?}");
}

#[tokio::test]
async fn a_broken_file_is_refused_whole_and_the_running_configuration_is_kept() {
    let (setup, llm, daemon) = started().await;
    let before = Settings::first(&llm);

    // The stranger is let in, but the file has two faults as well.
    setup.write(&Settings {
        allowed: &[OWNER, STRANGER],
        extra: "[skills]\ntool_calls_per_minut = 3\n[memory]\nmax_facts = \"many\"\n",
        ..before
    });
    let (ok, out, err) = reload(&setup.config()).await;
    assert!(!ok, "a broken file is refused: {out}");
    assert!(err.contains("not reloaded"), "{err}");
    assert!(err.contains("tool_calls_per_minut"), "the unknown key is named: {err}");
    assert!(err.contains("max_facts"), "the bad value is named: {err}");
    // The daemon reads the file itself on SIGHUP, and refuses it too.
    sighup(&daemon);
    let refused = daemon.wait_for_log(&["configuration refused"]).await;
    assert!(
        refused.contains("tool_calls_per_minut") && refused.contains("max_facts"),
        "{refused}"
    );

    setup
        .only_the_owner_talks(&llm, 1, "the old allowlist still holds")
        .await;

    setup.write(&Settings {
        allowed: &[OWNER, STRANGER],
        ..before
    });
    let (ok, out, err) = reload(&setup.config()).await;
    assert!(ok, "{err}");
    assert!(out.contains("telegram.allowed_users"), "{out}");
    assert!(!out.contains("after a restart"), "nothing waits: {out}");
    setup.write_as(STRANGER, "and now?").await;
    let (_, user) = nth_request(&llm, 2).await;
    assert_eq!(user, "and now?");

    let (ok, out, _) = reload(&setup.config()).await;
    assert!(ok && out.contains("unchanged"), "{out}");
    assert!(daemon.terminate().await.success());
}

#[tokio::test]
async fn a_new_model_provider_answers_after_a_reload() {
    let setup = Setup::new().await;
    let (first, second) = (FakeLlm::start().await, FakeLlm::start().await);
    second.push(support::fake_llm::Script::Reply("from the second model".into()));
    let before = Settings::first(&first);
    let daemon = setup.start(&before).await;
    setup.write_as(OWNER, "one").await;
    first.wait_for_requests(1, WAIT).await;

    setup.write(&Settings { llm: &second, ..before });
    let (ok, out, err) = reload(&setup.config()).await;
    assert!(ok, "{err}");
    assert!(out.contains("llm.providers"), "{out}");
    setup.write_as(OWNER, "two").await;
    let (_, user) = nth_request(&second, 1).await;
    assert_eq!(user, "two");
    let replies = setup.telegram.wait_for_sent_to(OWNER, 2, WAIT).await;
    assert!(
        replies.iter().any(|r| r.text.contains("from the second model")),
        "{replies:?}"
    );
    assert_eq!(first.requests().len(), 1, "the first model is asked no more");
    assert!(daemon.terminate().await.success());
}

#[tokio::test]
async fn a_file_that_holds_only_with_settings_waiting_for_a_restart_is_refused() {
    let (setup, llm, daemon) = started().await;
    let before = Settings::first(&llm);
    // A vote of 500 s fits the file's 1000 s turns, not the 300 s ones that
    // run until the restart.
    setup.write(&Settings {
        allowed: &[OWNER, STRANGER],
        turn_timeout_s: 1000,
        extra: "[skills.consensus]\nvoters = [\"fake\"]\ntimeout_s = 500\n",
        ..before
    });
    let (ok, out, err) = reload(&setup.config()).await;
    assert!(!ok, "{out}");
    assert!(err.contains("shorter than pipeline.turn_timeout_s (300 s)"), "{err}");
    setup
        .only_the_owner_talks(&llm, 1, "nothing of the file was applied")
        .await;
    assert!(daemon.terminate().await.success());
}

#[tokio::test]
async fn an_unchanged_file_with_tool_servers_changes_nothing() {
    // A server run from a command (its defaults left out, an `env` with
    // upper and mixed case names, a path argument) and one at a URL with
    // headers from variables: all read again the same.
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_fixture.py");
    let servers = format!(
        "[[mcp.servers]]\nname = \"fixture\"\ncommand = \"python3\"\nargs = [{fixture:?}]\n\
         env = {{ GREETING = \"hi\", Mixed_Case = \"1\" }}\n\
         [[mcp.servers]]\nname = \"remote\"\nurl = \"https://mcp.example/sse?v=1\"\nenabled = false\n\
         timeout_s = 5\ntrust = \"allow\"\nheaders_env = {{ Authorization = \"REMOTE_TOKEN\" }}\n",
        fixture = fixture.display().to_string(),
    );
    let setup = Setup::new().await;
    let llm = FakeLlm::start().await;
    let daemon = setup
        .start(&Settings {
            extra: &servers,
            ..Settings::first(&llm)
        })
        .await;
    let (ok, out, err) = reload(&setup.config()).await;
    assert!(ok, "{err}");
    assert!(out.contains("unchanged"), "{out}");
    assert!(!out.contains("mcp"), "{out}");
    assert!(daemon.terminate().await.success());
}

#[tokio::test]
async fn a_configured_loop_may_not_take_the_name_of_a_loop_made_in_a_chat() {
    let (setup, llm, daemon) = started().await;
    llm.push(Script::ToolCall {
        name: "remind".into(),
        arguments: r#"{"name": "stretch", "when": "daily at 09:00", "message": "Stretch."}"#.into(),
    });
    llm.push(Script::Reply("I will remind you.".into()));
    let before = Settings::first(&llm);
    setup.write_as(OWNER, "remind me to stretch every morning").await;
    setup.telegram.wait_for_sent_to(OWNER, 1, WAIT).await;
    assert!(loops_listing(&setup.config()).await.contains("\"stretch\""));

    let taking = Settings {
        allowed: &[OWNER, STRANGER],
        extra: "[[loops.entries]]\nname = \"stretch\"\nmessage = \"Configured.\"\n\
                schedule = \"daily at 10:00\"\noutput = \"telegram:42\"\n",
        ..before
    };
    setup.write(&taking);
    let (ok, out, err) = reload(&setup.config()).await;
    assert!(!ok, "{out}");
    assert!(
        err.contains("\"stretch\" is already the name of a loop made in the chat telegram:42"),
        "{err}"
    );
    assert!(err.contains("passepartout loops stop stretch"), "{err}");
    setup
        .only_the_owner_talks(&llm, 3, "nothing of the file was applied")
        .await;
    let listing = loops_listing(&setup.config()).await;
    assert!(
        listing.contains("Stretch.") && !listing.contains("Configured."),
        "the chat's loop runs on: {listing}"
    );

    // Once its loop is stopped, the name is free.
    let stopped = run_cli(&setup.config(), &["loops", "stop", "stretch"]).await;
    assert!(stopped.status.success(), "{stopped:?}");
    let (ok, out, err) = reload(&setup.config()).await;
    assert!(ok, "{err}");
    assert!(out.contains("loops started: stretch"), "{out}");
    assert!(loops_listing(&setup.config()).await.contains("Configured."));
    assert!(daemon.terminate().await.success());
}

/// `passepartout loops --json`.
async fn loops_listing(config: &Path) -> String {
    let output = run_cli(config, &["loops", "--json"]).await;
    String::from_utf8_lossy(&output.stdout).into_owned()
}
