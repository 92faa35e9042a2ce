//! The dashboard in a real, headless Chromium, against a real daemon with
//! `[web]` on port 0 and a fake model that asks for a shell command which
//! needs approval: a person signs in with the one-time link, sees the
//! overview, answers approvals with the page's buttons (the command runs
//! exactly once, the audit says the answer came from the web), allows one
//! always and revokes the rule again, sees a new one arrive on the open
//! page and denies it, and runs and stops a loop. No page
//! the browser loaded shows the provider's key. Screenshots of the
//! overview, the approvals and the loops go to `target/screenshots/`.

use crate::support;

use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use passepartout_socket::WebRequest;
use reqwest::StatusCode;
use reqwest::header;
use serde_json::Value;
use support::approvals::{Setup, lines_in};
use support::browser::Browser;
use support::chat::Chat;

/// A provider key that no page may ever show.
const CANARY: &str = "sk-canary-browser-5d1e9a27";

/// Long enough that the heartbeat only beats again when run from the page.
const SLOW_HEARTBEAT_S: u64 = 3600;

/// The command the fake model asks to run (`please run …`).
const COMMAND: &str = "echo ran >> ran.txt";

/// Writes `CANARY` as the provider's key file, readable only by its owner.
fn key_file(dir: &Path) -> std::path::PathBuf {
    use std::io::Write as _;
    let path = dir.join("key");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .unwrap();
    file.write_all(CANARY.as_bytes()).unwrap();
    path
}

/// The page's source, kept to check for the canary at the end.
async fn source(browser: &Browser, sources: &mut Vec<(String, String)>) -> String {
    let url = browser.driver().current_url().await.unwrap().to_string();
    let source = browser.driver().source().await.unwrap();
    sources.push((url, source.clone()));
    source
}

fn csrf_of(page: &str) -> String {
    let field = r#"name="csrf" value=""#;
    let at = page.find(field).expect("a CSRF field") + field.len();
    page[at..].split('"').next().unwrap().to_owned()
}

/// Sends "please run it" in `chat`; its id and the approval token.
async fn ask_to_run(chat: &mut Chat) -> (String, String) {
    let original = chat.send("please run it").await;
    let prompt = chat.prompt(&original).await;
    assert_eq!(prompt.action, format!("shell: {COMMAND}"), "{prompt:?}");
    (original, prompt.token)
}

/// The loop called `name`, as `passepartout loops --json` lists it.
async fn loop_status(setup: &Setup, name: &str) -> Value {
    let listing = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Loops)
        .await
        .expect("loops");
    listing
        .as_array()
        .into_iter()
        .flatten()
        .find(|l| l["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no loop {name}: {listing:#}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_and_loops_are_answered_from_the_browser() {
    let Some(browser) = Browser::start("web_browser::approvals_and_loops_are_answered_from_the_browser").await else {
        return;
    };
    let keys = tempfile::tempdir().unwrap();
    let key = key_file(keys.path());
    let setup = Setup::start_with(|config| {
        config.web.enabled = true;
        config.web.listen = "127.0.0.1:0".parse().unwrap();
        config.llm.providers[0].api_key_file = Some(key.clone());
        config.loops.heartbeat_s = SLOW_HEARTBEAT_S;
    })
    .await;
    let ran = setup.daemon.config.workspace().join("ran.txt");
    let mut sources = Vec::new();

    // Signing in: the one-time link `passepartout web` prints.
    let answer = setup
        .cli()
        .await
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .expect("a link");
    let link = answer.link.expect("the dashboard is on");
    let base = link.split("/sign-in/").next().unwrap().to_owned();
    browser.goto(&link).await;
    browser.wait_for_text("h1", "Overview").await;
    browser.wait_for_text("nav", "Loops & tools").await;
    source(&browser, &mut sources).await;
    browser.screenshot("web-overview").await;

    // A shell command waits for approval; the page shows exactly what runs.
    let mut chat = setup.chat("alice").await;
    let (original, token) = ask_to_run(&mut chat).await;
    browser.click(r#"nav a[href="/approvals"]"#).await;
    let card = format!("#approval-{token}");
    let shown = browser.wait_for_text(&card, COMMAND).await;
    for fact in [
        "Tool shell wants to run",
        &chat.person(),
        "Why it needs approval",
        "left",
        &token,
    ] {
        assert!(shown.contains(fact), "{fact} missing from {shown}");
    }
    source(&browser, &mut sources).await;
    browser.screenshot("web-approvals").await;
    assert_eq!(lines_in(&ran), 0, "nothing runs before approval");

    // Approve: it runs once, and the audit says the answer came from the web.
    browser.click(&format!("{card} button.approve")).await;
    browser.wait_for_text(".notice", "You approved").await;
    let (_, finished) = chat.reply(&original).await;
    assert!(finished.contains("and it ran"), "{finished}");
    assert_eq!(lines_in(&ran), 1, "ran exactly once");
    let listing = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Approvals { all: true })
        .await
        .expect("approvals");
    let approval = support::approvals::find(&listing, &token);
    assert_eq!(approval["decision"]["how"], "web", "{approval:#}");
    let audited = listing["audit"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|e| e["event"].as_str())
        .find(|e| e.starts_with(&format!("approved {token}")))
        .unwrap_or_else(|| panic!("no decision audited: {listing:#}"));
    assert_eq!(
        audited,
        format!("approved {token} `shell: {COMMAND}` from the web in socket:alice")
    );
    browser.wait_for_text("#decided", "from the web").await;

    // The same form sent again (a second click on a page that had not
    // caught up) is told it was decided already, and nothing runs again.
    let page = source(&browser, &mut sources).await;
    let cookie = browser
        .driver()
        .get_named_cookie("passepartout_session")
        .await
        .expect("the session cookie");
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let again = http
        .post(format!("{base}/approvals/decide"))
        .header(header::COOKIE, format!("passepartout_session={}", cookie.value))
        .header(header::ORIGIN, &base)
        .form(&[
            ("csrf", csrf_of(&page).as_str()),
            ("token", token.as_str()),
            ("choice", "approve"),
        ])
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::SEE_OTHER);
    let location = again.headers()[header::LOCATION].to_str().unwrap().to_owned();
    assert_eq!(location, format!("/approvals?already={token}"));
    browser.goto(&format!("{base}{location}")).await;
    browser
        .wait_for_text(
            ".notice",
            &format!("Approval {token} was already approved from the web"),
        )
        .await;
    assert_eq!(lines_in(&ran), 1, "a second answer runs nothing");

    // Always allow: it runs, a standing rule is listed; Revoke takes it away.
    let (second, token) = ask_to_run(&mut chat).await;
    browser.goto(&format!("{base}/approvals")).await;
    browser.click(&format!("#approval-{token} button.always")).await;
    browser.wait_for_text(".notice", "without asking").await;
    chat.reply(&second).await;
    assert_eq!(lines_in(&ran), 2);
    let rules = browser.wait_for_text("#rules", "Revoke").await;
    assert!(rules.contains("socket:alice") && rules.contains(COMMAND), "{rules}");
    source(&browser, &mut sources).await;
    browser
        .driver()
        .execute(r#"document.getElementById("decided").scrollIntoView()"#, vec![])
        .await
        .expect("scrolled to what was decided");
    browser.screenshot("web-approvals-decided").await;
    browser.click("#rules button.deny").await;
    browser.wait_for_text(".notice", "is revoked").await;
    browser.wait_for_text("#rules", "No standing rules").await;
    let listed = setup
        .cli()
        .await
        .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Rules)
        .await
        .expect("rules");
    assert_eq!(listed["rules"], Value::Array(vec![]), "{listed:#}");

    // Without the rule it asks again, and the open page shows it by itself
    // (keeping what it said); Deny, and it does not run.
    let (third, token) = ask_to_run(&mut chat).await;
    let card = format!("#approval-{token}");
    browser.wait_for_text(&card, COMMAND).await;
    assert!(browser.text(".notice").await.contains("is revoked"));
    browser.click(&format!("{card} button.deny")).await;
    browser.wait_for_text(".notice", "You denied").await;
    chat.reply(&third).await;
    assert_eq!(lines_in(&ran), 2, "a denied command does not run");

    // Loops & tools: the heartbeat, run now and stopped from the page; the
    // tools with their gates.
    browser.click(r#"nav a[href="/loops"]"#).await;
    browser.wait_for_text("#loops", "heartbeat").await;
    let tools = browser.wait_for_text("#tools", "shell").await;
    assert!(tools.contains("needs approval"), "{tools}");
    source(&browser, &mut sources).await;
    browser.screenshot("web-loops").await;
    let before = browser
        .wait_until("the heartbeat's first beat", || async {
            let heartbeat = loop_status(&setup, "heartbeat").await;
            let attempts = heartbeat["attempts"].as_u64()?;
            (attempts >= 1 && heartbeat["state"] == "sleeping").then_some(attempts)
        })
        .await;
    let heartbeat = r#"form[action="/loops/run"]:has(input[value="heartbeat"]) button"#;
    browser.click(heartbeat).await;
    browser.wait_for_text(".notice", "Loop heartbeat runs now.").await;
    browser
        .wait_until("the heartbeat to beat again", || async {
            let attempts = loop_status(&setup, "heartbeat").await["attempts"].as_u64()?;
            (attempts > before).then_some(())
        })
        .await;
    browser
        .click(r#"form[action="/loops/stop"]:has(input[value="heartbeat"]) button"#)
        .await;
    browser.wait_for_text("h1", "Stop loop heartbeat?").await;
    browser.wait_for_text(".confirm", "periodic backups").await;
    assert_ne!(loop_status(&setup, "heartbeat").await["state"], "stopped", "only asked");
    browser.screenshot("web-loops-confirm-stop").await;
    browser.click(".confirm button.deny").await;
    browser.wait_for_text(".notice", "Loop heartbeat is stopped;").await;
    assert_eq!(loop_status(&setup, "heartbeat").await["state"], "stopped");
    browser
        .click(r#"form[action="/loops/start"]:has(input[value="heartbeat"]) button"#)
        .await;
    browser
        .wait_for_text(".notice", "Loop heartbeat is started again")
        .await;
    browser
        .wait_until("the heartbeat to run again", || async {
            (loop_status(&setup, "heartbeat").await["state"] != "stopped").then_some(())
        })
        .await;
    source(&browser, &mut sources).await;

    for (url, source) in &sources {
        assert!(!source.contains(CANARY), "{url} shows the provider's key");
    }
    assert!(sources.len() >= 6, "{} pages looked at", sources.len());
    drop(keys);
}
