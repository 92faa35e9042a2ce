//! Who and how many the dashboard's listener takes, end to end: a
//! browser's session sent from another local user is refused (browsers
//! send the cookie to every server on 127.0.0.1, so another user's page
//! may receive it); hundreds of half-sent requests leave the control socket
//! and the dashboard answering; and a port another program holds leaves
//! the daemon running without the dashboard, saying so.

use std::os::unix::process::CommandExt as _;
use std::path::Path;
use std::process::Stdio;

use reqwest::StatusCode;
use tokio::io::AsyncWriteExt as _;

use crate::support;
use support::fake_llm::FakeLlm;
use support::harness::{TestDaemon, WAIT};
use support::process::{Running, run_cli, write_config};
use support::skip::{self, Need};

/// A user that holds nothing here (`nobody` on most systems).
const OTHER_ID: u32 = 65534;

/// The signed-in cookie and the dashboard's address, from a link the
/// command line hands out.
async fn sign_in(cli_config: &Path) -> (String, String) {
    let output = run_cli(cli_config, &["web"]).await;
    assert!(output.status.success(), "{output:?}");
    let link = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let base = link.split("/sign-in/").next().unwrap().to_owned();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http.get(&link).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    let cookie = response.headers()["set-cookie"].to_str().unwrap();
    (base, cookie.split(';').next().unwrap().to_owned())
}

/// `GET /` with `cookie`, sent by a shell as `uid` (this process's own
/// when none): what came back, whole.
async fn get_as(uid: Option<u32>, base: &str, cookie: &str) -> String {
    let authority = base.trim_start_matches("http://");
    let (host, port) = authority.rsplit_once(':').unwrap();
    let script = r#"exec 3<>"/dev/tcp/$HOST/$PORT" || exit 2
printf 'GET / HTTP/1.1\r\nHost: %s:%s\r\nCookie: %s\r\nConnection: close\r\n\r\n' "$HOST" "$PORT" "$COOKIE" >&3
cat <&3"#;
    let mut command = std::process::Command::new("bash");
    command
        .args(["-c", script])
        .env("HOST", host)
        .env("PORT", port)
        .env("COOKIE", cookie)
        .current_dir("/")
        .stdin(Stdio::null());
    if let Some(uid) = uid {
        command.uid(uid).gid(uid);
    }
    let output = tokio::process::Command::from(command).kill_on_drop(true).output();
    let output = tokio::time::timeout(WAIT, output)
        .await
        .expect("the shell ends")
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Whether this process can run a child as [`OTHER_ID`]; says why not,
/// as `test` skipping.
fn can_switch_users(test: &str) -> bool {
    if !rustix::process::geteuid().is_root() {
        skip::skipped(test, Need::OtherUsers, "running a client as another user needs root");
        return false;
    }
    match std::process::Command::new("/bin/true")
        .uid(OTHER_ID)
        .gid(OTHER_ID)
        .status()
    {
        Ok(status) if status.success() => true,
        outcome => {
            skip::skipped(
                test,
                Need::OtherUsers,
                &format!("cannot run a child as uid {OTHER_ID}: {outcome:?}"),
            );
            false
        }
    }
}

#[tokio::test]
async fn a_session_sent_from_another_local_user_is_refused() {
    const TEST: &str = "a_session_sent_from_another_local_user_is_refused";
    if !can_switch_users(TEST) {
        return;
    }
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.web.enabled = true;
            config.web.listen = "127.0.0.1:0".parse().unwrap();
        },
        Vec::new(),
    )
    .await;
    let (base, cookie) = sign_in(&daemon.cli_config(&llm)).await;

    let own = get_as(None, &base, &cookie).await;
    assert!(
        own.starts_with("HTTP/1.1 200"),
        "the daemon's own user is answered: {own}"
    );
    assert!(own.contains("Overview"), "{own}");

    let other = get_as(Some(OTHER_ID), &base, &cookie).await;
    assert!(other.starts_with("HTTP/1.1 403"), "{other}");
    assert!(
        other.contains("answers only the local user the passepartout daemon runs as"),
        "{other}"
    );
    assert!(!other.contains("Overview"), "nothing of the dashboard: {other}");
    daemon.stop().await;
}

#[tokio::test]
async fn a_local_user_the_settings_name_is_let_in() {
    const TEST: &str = "a_local_user_the_settings_name_is_let_in";
    if !can_switch_users(TEST) {
        return;
    }
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.web.enabled = true;
            config.web.listen = "127.0.0.1:0".parse().unwrap();
            config.web.local_users = vec![OTHER_ID];
        },
        Vec::new(),
    )
    .await;
    let (base, cookie) = sign_in(&daemon.cli_config(&llm)).await;
    let theirs = get_as(Some(OTHER_ID), &base, &cookie).await;
    assert!(theirs.starts_with("HTTP/1.1 200"), "{theirs}");
    daemon.stop().await;
}

#[tokio::test]
async fn hundreds_of_half_sent_requests_leave_the_socket_and_the_dashboard_answering() {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let mut text = std::fs::read_to_string(&config).unwrap();
    text += "[web]\nenabled = true\nlisten = \"127.0.0.1:0\"\n";
    std::fs::write(&config, text).unwrap();
    // Started with few open files, as under a soft limit of 1024 with a
    // few hundred taken: the daemon raises it to the hard limit.
    let running = Running::start_with_open_files(&config, 128).await;
    let pid = running.child.id().unwrap();
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
    let open_files: Vec<&str> = limits
        .lines()
        .find(|line| line.starts_with("Max open files"))
        .unwrap()
        .split_whitespace()
        .skip(3)
        .take(2)
        .collect();
    assert_eq!(open_files[0], open_files[1], "soft raised to hard: {limits}");

    let (base, _) = sign_in(&config).await;
    let port: u16 = base.rsplit_once(':').unwrap().1.parse().unwrap();
    let mut idle = Vec::new();
    for _ in 0..300 {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        // A request begun and never finished.
        let _ = stream.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n").await;
        idle.push(stream);
    }

    let status = run_cli(&config, &["status"]).await;
    assert!(status.status.success(), "the control socket answers: {status:?}");
    let http = reqwest::Client::new();
    let page = tokio::time::timeout(WAIT, http.get(format!("{base}/")).send())
        .await
        .expect("the dashboard answers in time")
        .unwrap();
    assert_eq!(
        page.status(),
        StatusCode::UNAUTHORIZED,
        "the page saying how to sign in"
    );
    let (_, cookie) = sign_in(&config).await;
    let signed_in = http
        .get(format!("{base}/"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), StatusCode::OK);
    drop(idle);
    running.terminate().await;
}

#[tokio::test]
async fn a_port_another_program_holds_leaves_the_daemon_running_without_the_dashboard() {
    let holder = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let held = holder.local_addr().unwrap();
    let llm = FakeLlm::start().await;
    let mut daemon = TestDaemon::start_with(
        &llm,
        |config| {
            config.web.enabled = true;
            config.web.listen = held;
        },
        Vec::new(),
    )
    .await;
    let status = daemon.daemon.as_ref().unwrap().status();
    let gateways = status["gateways"].as_array().unwrap();
    let web = gateways.iter().find(|g| g["name"] == "web").expect("the web is listed");
    assert_eq!(web["state"], "down", "{status}");
    assert!(web["detail"].as_str().unwrap().contains(&held.to_string()), "{status}");
    let socket = gateways.iter().find(|g| g["name"] == "socket").unwrap();
    assert_eq!(socket["state"], "up", "the other gateways run: {status}");

    let cli_config = daemon.cli_config(&llm);
    let shown = run_cli(&cli_config, &["status"]).await;
    let shown = String::from_utf8(shown.stdout).unwrap();
    let line = shown.lines().find(|line| line.contains(" web ")).unwrap_or_default();
    assert!(line.contains("down: ") && line.contains(&held.to_string()), "{shown}");
    let link = run_cli(&cli_config, &["web"]).await;
    assert_eq!(link.status.code(), Some(1), "{link:?}");
    let said = String::from_utf8(link.stderr).unwrap();
    assert!(said.contains("the web dashboard is not listening"), "{said}");
    let doctor = run_cli(&cli_config, &["doctor"]).await;
    let doctor = String::from_utf8(doctor.stdout).unwrap();
    assert!(
        doctor.contains("web in the daemon") && doctor.contains("down: "),
        "{doctor}"
    );
    drop(holder);
    daemon.stop().await;
}
