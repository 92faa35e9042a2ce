//! Tool servers installed in each of the usual ways start confined and
//! answer a call, with nothing granted but what the daemon works out from
//! the program: the reference servers run by `npx -y`, installed with `npm
//! install` into a folder (`node_modules/.bin`) and with `npm install -g
//! --prefix`, `mcp-server-time` from its virtual environment and from a
//! `bin` elsewhere linking to it (as `uv tool` and `pipx` install), and a
//! plain script importing a module beside it. What a server's folder holds
//! of the daemon's own (its data directory, a secret file) stays out of
//! reach; and a server that fails confined says, in the log, `status`,
//! `doctor` and the dashboard's overview, what it could read and the
//! setting that adds a folder.

use crate::support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use passepartout::config::{McpServerConfig, McpTrust};
use passepartout::safety::mcp::{Phase, ServerStatus};
use passepartout_gateway::ReplyKind;
use support::chat::Chat;
use support::fake_llm::FakeLlm;
use support::harness::{TestDaemon, WAIT};
use support::mcp::{model, server};
use support::mcp_installs::{everything_package, linked, npm_folder, npm_global, plain, venv};
use support::process::{Running, run_cli, socket_path, write_config};

/// How long the servers get to come up: `npx -y` fetches its package first.
const STARTING: Duration = Duration::from_secs(120);

/// A trusted server `name` running `command` with `args`, granted nothing
/// of its own, given as long to answer its handshake as the test waits
/// for it (Node starting `npx -y` on a busy machine takes more than the
/// default 30 s).
fn installed(name: &str, command: impl Into<PathBuf>, args: &[&str]) -> McpServerConfig {
    McpServerConfig {
        name: name.into(),
        command: Some(command.into()),
        args: args.iter().map(|arg| arg.to_string()).collect(),
        trust: McpTrust::Allow,
        timeout_s: STARTING.as_secs(),
        ..McpServerConfig::default()
    }
}

/// Waits until every server named is connected, or one failed for good.
async fn connected(daemon: &TestDaemon, names: &[&str]) -> Vec<ServerStatus> {
    let running = daemon.daemon.as_ref().expect("running");
    let mut changes = running.mcp().changes();
    let waited = tokio::time::timeout(STARTING, async {
        loop {
            let servers = running.mcp().status();
            if names
                .iter()
                .all(|name| server(&servers, name).state == Phase::Connected)
            {
                return servers;
            }
            if let Some(failed) = servers.iter().find(|s| s.state == Phase::Failed) {
                panic!("{} failed: {:?}", failed.name, failed.last_error);
            }
            changes.changed().await.expect("the servers are still there");
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("the servers did not connect in time: {:#?}", running.mcp().status()))
}

/// The answer (not a notice) to message `id`.
async fn answer(chat: &mut Chat, id: &str) -> String {
    loop {
        let (kind, text) = chat.reply(id).await;
        if kind == ReplyKind::Answer {
            return text;
        }
    }
}

/// Calls `tool` with `arguments` through the model: the result it heard.
async fn call(chat: &mut Chat, tool: &str, arguments: serde_json::Value) -> String {
    let id = chat.send(&format!("call {tool} {arguments}")).await;
    answer(chat, &id).await
}

#[tokio::test]
async fn a_server_installed_in_each_usual_way_starts_confined_and_answers() {
    let servers = vec![
        installed("npx", "npx", &["-y", &everything_package()]),
        installed("folder", npm_folder(), &[]),
        installed("global", npm_global(), &[]),
        installed("venv", venv(), &["--local-timezone", "UTC"]),
        installed("linked", linked(), &["--local-timezone", "UTC"]),
        installed("plain", plain(), &[]),
    ];
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let daemon = TestDaemon::start_with(&llm, |config| config.mcp.servers = servers, Vec::new()).await;
    let names = ["npx", "folder", "global", "venv", "linked", "plain"];
    connected(&daemon, &names).await;

    let mut chat = Chat::open(&daemon, "olga").await;
    for name in ["npx", "folder", "global"] {
        let echoed = call(
            &mut chat,
            &format!("{name}__echo"),
            serde_json::json!({ "message": name }),
        )
        .await;
        assert_eq!(echoed, format!("done: Echo: {name}"));
    }
    for name in ["venv", "linked"] {
        let time = call(
            &mut chat,
            &format!("{name}__get_current_time"),
            serde_json::json!({ "timezone": "Europe/Paris" }),
        )
        .await;
        assert!(
            time.contains("Europe/Paris") && time.contains("datetime"),
            "{name}: {time}"
        );
    }
    let echoed = call(&mut chat, "plain__echo", serde_json::json!({ "message": "beside" })).await;
    assert_eq!(echoed, "done: echo: beside");
    let servers = daemon.daemon.as_ref().unwrap().mcp().status();
    for name in names {
        let server = server(&servers, name);
        assert_eq!(
            (server.state, &server.last_error),
            (Phase::Connected, &None),
            "{server:?}"
        );
    }
}

/// A script in `dir` importing the fixture server from `dir/lib`: a folder
/// holding the daemon's data cannot be listed by a confined process, only
/// the folders and files beside the data.
fn script_in(dir: &Path) -> PathBuf {
    let lib = dir.join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::copy(plain().with_file_name("fixture.py"), lib.join("fixture.py")).unwrap();
    let script = dir.join("server.py");
    std::fs::write(
        &script,
        "#!/usr/bin/env python3\nimport os, sys\n\
         sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'lib'))\nimport fixture\n\nfixture.main()\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[tokio::test]
async fn a_servers_folder_is_readable_but_not_the_data_directory_or_a_secret_in_it() {
    if !passepartout::safety::sandbox::Support::probe().filesystem() {
        support::skip::skipped(
            "a_servers_folder_is_readable_but_not_the_data_directory_or_a_secret_in_it",
            support::skip::Need::Landlock,
            "this kernel offers no Landlock",
        );
        return;
    }
    let folder = tempfile::tempdir().unwrap();
    let folder = folder.path().canonicalize().unwrap();
    let script = script_in(&folder);
    let canary = "canary-beside-the-server-5521";
    let key = folder.join("model.key");
    std::fs::write(&key, canary).unwrap();
    std::fs::write(folder.join("notes.txt"), "its own notes").unwrap();
    let data = folder.join("data");
    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    let adjust = |config: &mut passepartout::config::Config| {
        config.data_dir = data.clone();
        config.llm.providers[0].api_key_file = Some(key.clone());
        config.mcp.servers = vec![installed("beside", &script, &[])];
    };
    let daemon = TestDaemon::start_with(&llm, adjust, Vec::new()).await;
    connected(&daemon, &["beside"]).await;
    let mut chat = Chat::open(&daemon, "pia").await;
    let read = |path: &Path| serde_json::json!({ "path": path });
    let notes = call(&mut chat, "beside__read", read(&folder.join("notes.txt"))).await;
    assert_eq!(notes, "done: its own notes");
    for path in [key.clone(), daemon.config.data_dir().join("store/db")] {
        let text = call(&mut chat, "beside__read", read(&path)).await;
        assert!(text.contains("Permission denied"), "{}: {text}", path.display());
        assert!(!text.contains(canary), "{text}");
    }
}

#[tokio::test]
async fn a_server_that_fails_confined_says_what_it_could_read_and_the_setting_that_adds_a_folder() {
    if !passepartout::safety::sandbox::Support::probe().filesystem() {
        support::skip::skipped(
            "a_server_that_fails_confined_says_what_it_could_read_and_the_setting_that_adds_a_folder",
            support::skip::Need::Landlock,
            "this kernel offers no Landlock",
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir_path = dir.path().canonicalize().unwrap();
    // A server whose module lies in a folder it was not granted.
    let (server_dir, lib) = (dir_path.join("server"), dir_path.join("lib"));
    std::fs::create_dir_all(&server_dir).unwrap();
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("helper.py"), "").unwrap();
    let script = server_dir.join("server.py");
    std::fs::write(
        &script,
        format!("#!/usr/bin/env python3\nimport sys\nsys.path.insert(0, {lib:?})\nimport helper\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();

    let llm = FakeLlm::start().await;
    let config = write_config(&dir_path, &llm.base_url());
    let mut text = std::fs::read_to_string(&config).unwrap();
    text += &*format!(
        "[web]\nenabled = true\nlisten = \"127.0.0.1:0\"\n\
         [[mcp.servers]]\nname = \"broken\"\ncommand = {script:?}\n"
    );
    std::fs::write(&config, text).unwrap();
    let folder = server_dir.display().to_string();
    let says = |text: &str| {
        text.contains("runs confined")
            && text.contains(&folder)
            && text.contains("allow_read")
            && text.contains("No module named 'helper'")
    };

    // Without a daemon, doctor starts it itself.
    let doctor = run_cli(&config, &["doctor"]).await;
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.lines().any(|l| l.contains("mcp broken") && says(l)), "{doctor}");

    let daemon = Running::start(&config).await;
    let logged = daemon
        .wait_for_log(&["mcp server down", "broken", "runs confined"])
        .await;
    assert!(says(&logged), "{logged}");
    let status = run_cli(&config, &["status"]).await;
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.lines().any(|l| l.starts_with("mcp      broken") && says(l)),
        "{status}"
    );
    let doctor = run_cli(&config, &["doctor"]).await;
    let doctor = String::from_utf8_lossy(&doctor.stdout);
    assert!(doctor.lines().any(|l| l.contains("mcp broken") && says(l)), "{doctor}");
    let overview = overview(&socket_path(&dir_path)).await;
    let unescaped = overview.replace("&#39;", "'").replace("&#x27;", "'");
    assert!(says(&unescaped), "{overview}");
}

/// The dashboard's overview, signed in with a link the socket hands out.
async fn overview(socket: &Path) -> String {
    use passepartout_admin::WebRequest;
    let chat = passepartout_gateway::ChatId::new("owner").unwrap();
    let mut client = tokio::time::timeout(WAIT, passepartout_socket::Client::connect(socket, Some(chat)))
        .await
        .expect("connect in time")
        .expect("connect");
    let link = client
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .expect("a sign-in link");
    let base = link.split("/sign-in/").next().unwrap().to_owned();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http.get(&link).send().await.unwrap();
    let cookie = response.headers()[reqwest::header::SET_COOKIE].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = http
        .get(format!("{base}/"))
        .header(reqwest::header::COOKIE, cookie)
        .send()
        .await
        .unwrap();
    assert!(page.status().is_success(), "{}", page.status());
    page.text().await.unwrap()
}
