//! The tools the web pages' tests stand on work here: a real headless
//! Chromium loads a page from a loopback server, runs its script when a
//! button is clicked, and leaves a PNG screenshot; and the official OpenAI
//! Python client, at the pinned version, calls an OpenAI-compatible server
//! on the loopback and hands its answer back as JSON.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use axum::Router;
use axum::response::Html;
use axum::routing::get;
use futures::FutureExt;
use serde_json::json;

use crate::support::browser::{Browser, started_on_port};
use crate::support::fake_llm::FakeLlm;
use crate::support::python;

/// A button whose script changes a text, and a field whose text it copies.
const PAGE: &str = r#"<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Browser check</title></head>
<body style="font: 24px sans-serif; margin: 40px">
  <h1>Browser check</h1>
  <input id="name" value="" placeholder="a name">
  <button id="go" onclick="
      document.getElementById('out').textContent =
        'Clicked by ' + (document.getElementById('name').value || 'nobody');
    ">Go</button>
  <p id="out">Not clicked yet</p>
</body>
</html>
"#;

/// Serves [`PAGE`] at `/` on `127.0.0.1:0`; its URL.
async fn serve_page() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let address = listener.local_addr().expect("the page server's address");
    let app = Router::new().route("/", get(|| async { Html(PAGE) }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{address}/")
}

#[tokio::test]
async fn a_click_runs_the_page_s_script_and_the_screenshot_is_a_png() {
    let Some(browser) = Browser::start("browser_support-clicked").await else {
        return;
    };
    browser.goto(&serve_page().await).await;
    assert_eq!(browser.text("#out").await, "Not clicked yet");

    browser.type_into("#name", "Ada").await;
    browser.click("#go").await;
    let text = browser.wait_for_text("#out", "Clicked").await;
    assert_eq!(text, "Clicked by Ada");

    let path = browser.screenshot("browser_support-clicked").await;
    let png = std::fs::read(&path).expect("the screenshot was written");
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{} is not a PNG", path.display());
    assert!(
        png.len() > 1000,
        "a whole page, not an empty image: {} bytes",
        png.len()
    );
}

#[tokio::test]
async fn a_wait_for_what_never_comes_fails_naming_it_and_leaves_a_screenshot() {
    let test = "browser_support-never";
    let Some(mut browser) = Browser::start(test).await else {
        return;
    };
    browser.goto(&serve_page().await).await;
    browser.wait_for("#go").await;
    let shot = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("target/screenshots/{test}-failed.png"));
    let _ = std::fs::remove_file(&shot);

    browser.set_wait(Duration::from_millis(500));
    let waited = AssertUnwindSafe(browser.wait_for_text("#out", "Clicked"))
        .catch_unwind()
        .await;
    let panic = waited.expect_err("the text appeared without a click");
    let message = panic.downcast_ref::<String>().expect("a formatted message");
    assert!(message.contains(r##""#out" to show "Clicked""##), "{message}");
    assert!(message.contains(&shot.display().to_string()), "{message}");
    assert!(shot.exists(), "no screenshot at {}", shot.display());
}

/// Where nothing can be installed, the installer says why and exits 3, which
/// `Browser::start` reports as a skip rather than a failure.
#[test]
fn without_apt_get_the_installer_says_it_cannot_install() {
    let empty = tempfile::tempdir().unwrap();
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-browser");
    let output = std::process::Command::new("/bin/bash")
        .arg(script)
        .env("PATH", empty.path())
        .output()
        .expect("run .ci/install-browser");
    assert_eq!(output.status.code(), Some(3), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no apt-get"), "{stderr}");
    assert!(output.stdout.is_empty(), "no paths printed: {output:?}");
}

#[test]
fn the_port_is_read_from_chromedriver_s_start_line() {
    assert_eq!(
        started_on_port("ChromeDriver was started successfully on port 34733."),
        Some(34733)
    );
    assert_eq!(started_on_port("Starting ChromeDriver 148.0 on port 0"), None);
    assert_eq!(started_on_port("Only local connections are allowed."), None);
}

#[tokio::test]
async fn the_python_client_is_the_pinned_version() {
    let printed = python::run("import openai; print(openai.__version__)").await;
    assert_eq!(printed.trim(), python::openai_version());
}

#[tokio::test]
async fn the_python_client_calls_an_openai_compatible_server() {
    let llm = FakeLlm::start().await;
    llm.require_api_key("sk-test");
    let snippet = format!(
        "import openai\n\
         client = openai.OpenAI(base_url={base:?}, api_key='sk-test')\n\
         reply = client.chat.completions.create(model='fake-model', messages=[{{'role': 'user', 'content': 'hello there'}}])\n\
         print(reply.model_dump_json())",
        base = llm.base_url(),
    );
    let reply = python::run_json(&snippet).await;
    assert_eq!(reply["object"], json!("chat.completion"), "{reply}");
    let content = reply["choices"][0]["message"]["content"].as_str().unwrap_or_default();
    assert!(content.contains("hello there"), "{reply}");
    assert_eq!(llm.requests().len(), 1);
}
