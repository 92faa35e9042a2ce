//! A real, headless Chromium for the tests of the web pages, driven through
//! chromedriver's WebDriver API.
//!
//! Both come from `.ci/install-browser` (run here when they are missing, its
//! output shown if that fails); on a machine where they cannot be installed
//! the test says it skipped. chromedriver listens on a port the system
//! picks, and is ready once its `/status` says so; when the [`Browser`] is
//! dropped, the session is ended and chromedriver killed with whatever it
//! left running. What a test waits for is polled under a failure bound,
//! and a wait that fails leaves a screenshot of the page behind.
//!
//! ```ignore
//! let Some(browser) = Browser::start("webchat::a_message_is_answered").await else {
//!     return; // no browser here: the skip is reported
//! };
//! browser.goto(&format!("{base}/chat")).await;
//! browser.type_into("#message", "hello").await;
//! browser.click("#send").await;
//! browser.wait_for_text("#log", "hello").await;
//! browser.screenshot("webchat-answered").await; // target/screenshots/webchat-answered.png
//! ```

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use thirtyfour::error::WebDriverErrorInner;
use thirtyfour::prelude::*;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::skip::{Need, skipped};
use super::webdriver_http::LoopbackClient;

/// How long a wait on the page, or on chromedriver starting, may take
/// before the test fails: generous, for a machine many builds share.
pub const WAIT: Duration = Duration::from_secs(30);

/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(50);

/// How many browsers run at once in one test run: each is several
/// processes, and more than two on two cores starve the daemons the other
/// tests wait on. A test waits for a slot before its browser starts.
static SLOTS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// What `.ci/install-browser` exits with where it cannot install at all.
const CANNOT_INSTALL: i32 = 3;

/// The browser's flags: no display, no setuid sandbox (tests may run as
/// root, where Chromium refuses it), no GPU, and a fixed window so that
/// screenshots compare.
const ARGS: &[&str] = &[
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--window-size=1280,900",
];

/// Where Chromium and chromedriver are installed.
#[derive(Debug)]
pub struct Tools {
    pub chromium: PathBuf,
    pub chromedriver: PathBuf,
}

/// Chromium and chromedriver, installed once per test binary; or why they
/// cannot be on this machine.
pub fn tools() -> Result<&'static Tools, &'static str> {
    static TOOLS: OnceLock<Result<Tools, String>> = OnceLock::new();
    TOOLS.get_or_init(install).as_ref().map_err(String::as_str)
}

fn install() -> Result<Tools, String> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-browser");
    let output = std::process::Command::new("bash")
        .arg(script)
        .output()
        .expect("run .ci/install-browser");
    let stderr = String::from_utf8_lossy(&output.stderr);
    if output.status.code() == Some(CANNOT_INSTALL) {
        return Err(stderr.trim().to_owned());
    }
    assert!(output.status.success(), "installing Chromium failed:\n{stderr}");
    let stdout = String::from_utf8(output.stdout).expect("paths in UTF-8");
    let mut lines = stdout.lines();
    match (lines.next(), lines.next()) {
        (Some(chromium), Some(chromedriver)) => Ok(Tools {
            chromium: chromium.into(),
            chromedriver: chromedriver.into(),
        }),
        _ => panic!(".ci/install-browser printed no browser and driver: {stdout:?}"),
    }
}

/// A headless Chromium session, with helpers for what tests do to a page.
///
/// Dropped, it first ends the session (chromedriver closes the browser and
/// collects its processes), then kills chromedriver: killed first, the
/// browser's processes would be left to an init that, in a container, may
/// never collect them.
pub struct Browser {
    driver: WebDriver,
    chromedriver: ChromeDriver,
    /// What chromedriver printed, shown when it fails to start.
    driver_log: Arc<Mutex<Vec<String>>>,
    /// The browser's profile, new for each session.
    _profile: tempfile::TempDir,
    /// The test's name, for a screenshot taken when a wait fails.
    test: String,
    /// How long a wait may take before the test fails.
    wait: Duration,
    /// This browser's place among those running at once, given up with it.
    _slot: tokio::sync::SemaphorePermit<'static>,
}

impl Browser {
    /// Starts chromedriver and a browser session; `None` (the skip
    /// reported for `test`) where the browser cannot be installed.
    pub async fn start(test: &str) -> Option<Browser> {
        let tools = match tools() {
            Ok(tools) => tools,
            Err(why) => {
                skipped(test, Need::Browser, why);
                return None;
            }
        };
        let slot = SLOTS.acquire().await.expect("the browsers' slots are never closed");
        let mut chromedriver = Command::new(&tools.chromedriver)
            // Port 0: the system picks a free one, which chromedriver prints.
            .arg("--port=0")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .expect("start chromedriver");
        let stdout = chromedriver.stdout.take().expect("chromedriver's stdout");
        let driver_log = Arc::new(Mutex::new(Vec::new()));
        let (port_tx, port_rx) = tokio::sync::oneshot::channel();
        // Reads the port, then keeps draining what chromedriver prints, so
        // that a full pipe never stalls it.
        tokio::spawn({
            let driver_log = Arc::clone(&driver_log);
            async move {
                let mut lines = BufReader::new(stdout).lines();
                let mut port_tx = Some(port_tx);
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Some(port) = started_on_port(&line)
                        && let Some(tx) = port_tx.take()
                    {
                        let _ = tx.send(port);
                    }
                    driver_log.lock().unwrap().push(line);
                }
            }
        });
        let port = match tokio::time::timeout(WAIT, port_rx).await {
            Ok(Ok(port)) => port,
            _ => panic!(
                "chromedriver did not say which port it listens on:\n{}",
                driver_log.lock().unwrap().join("\n")
            ),
        };
        let url = format!("http://127.0.0.1:{port}");
        wait_until_ready(&url, &driver_log).await;

        let profile = tempfile::tempdir().expect("a profile directory");
        let mut capabilities = DesiredCapabilities::chrome();
        capabilities
            .set_binary(&tools.chromium.display().to_string())
            .expect("the browser's path");
        for arg in ARGS {
            capabilities.add_arg(arg).expect("a browser flag");
        }
        capabilities
            .add_arg(&format!("--user-data-dir={}", profile.path().display()))
            .expect("the profile flag");
        let driver = WebDriver::builder(&url, capabilities)
            .client(LoopbackClient::new())
            .await
            .unwrap_or_else(|error| {
                panic!(
                    "chromedriver started no browser: {error}\n{}",
                    driver_log.lock().unwrap().join("\n")
                )
            });
        Some(Browser {
            driver,
            chromedriver: ChromeDriver(chromedriver),
            driver_log,
            _profile: profile,
            test: test.to_owned(),
            wait: WAIT,
            _slot: slot,
        })
    }

    /// Bounds the waits from now on by `wait` instead of [`WAIT`].
    pub fn set_wait(&mut self, wait: Duration) {
        self.wait = wait;
    }

    /// The WebDriver session, for what the helpers here do not cover.
    pub fn driver(&self) -> &WebDriver {
        &self.driver
    }

    /// Loads `url` and waits until the page has loaded.
    pub async fn goto(&self, url: &str) {
        self.driver
            .goto(url)
            .await
            .unwrap_or_else(|error| panic!("loading {url}: {error}"));
    }

    /// The element `css` selects, which must be on the page now.
    pub async fn find(&self, css: &str) -> WebElement {
        self.driver
            .find(By::Css(css))
            .await
            .unwrap_or_else(|error| panic!("no element {css:?}: {error}"))
    }

    /// Clicks the element `css` selects.
    pub async fn click(&self, css: &str) {
        self.on_element(css, "clicking", |element| async move { element.click().await })
            .await
    }

    /// Types `text` into the element `css` selects, as keystrokes.
    pub async fn type_into(&self, css: &str, text: &str) {
        self.on_element(
            css,
            "typing into",
            |element| async move { element.send_keys(text).await },
        )
        .await
    }

    /// The text the element `css` selects shows.
    pub async fn text(&self, css: &str) -> String {
        self.on_element(css, "reading", |element| async move { element.text().await })
            .await
    }

    /// Does `act` to the element `css` selects. A page that updates itself
    /// may replace the element between its finding and the act (it is then
    /// stale); the act goes to the element the selector finds then, as a
    /// person's click would, until the wait's bound.
    async fn on_element<T, Fut>(&self, css: &str, doing: &str, act: impl Fn(WebElement) -> Fut) -> T
    where
        Fut: Future<Output = WebDriverResult<T>>,
    {
        let deadline = tokio::time::Instant::now() + self.wait;
        loop {
            match act(self.find(css).await).await {
                Ok(value) => return value,
                Err(error)
                    if matches!(error.as_inner(), WebDriverErrorInner::StaleElementReference(_))
                        && tokio::time::Instant::now() < deadline => {}
                Err(error) => panic!("{doing} {css:?}: {error}"),
            }
        }
    }

    /// Waits until `check` gives a value, looking again every 50 ms; fails,
    /// naming `what` and leaving a screenshot (`TEST-failed.png`), if it has
    /// not after [`WAIT`].
    pub async fn wait_until<T, Fut>(&self, what: &str, mut check: impl FnMut() -> Fut) -> T
    where
        Fut: Future<Output = Option<T>>,
    {
        let waited = tokio::time::timeout(self.wait, async {
            loop {
                if let Some(value) = check().await {
                    return value;
                }
                tokio::time::sleep(POLL).await;
            }
        })
        .await;
        match waited {
            Ok(value) => value,
            Err(_) => {
                let shot = self.screenshot(&format!("{}-failed", self.test)).await;
                panic!("waited {:?} for {what}; the page then: {}", self.wait, shot.display())
            }
        }
    }

    /// Waits until an element `css` selects is on the page; that element.
    pub async fn wait_for(&self, css: &str) -> WebElement {
        self.wait_until(&format!("an element {css:?}"), || async {
            self.driver.find(By::Css(css)).await.ok()
        })
        .await
    }

    /// Waits until the element `css` selects shows text containing
    /// `needle`; all of its text then.
    pub async fn wait_for_text(&self, css: &str, needle: &str) -> String {
        self.wait_until(&format!("{css:?} to show {needle:?}"), || async {
            let element = self.driver.find(By::Css(css)).await.ok()?;
            let text = element.text().await.ok()?;
            text.contains(needle).then_some(text)
        })
        .await
    }

    /// Saves what the browser shows as `target/screenshots/NAME.png`,
    /// printing the path; the path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        assert!(
            !name.is_empty() && !name.contains(['/', '\\']) && name != "." && name != "..",
            "a screenshot's name is a plain file name: {name:?}"
        );
        let png = self
            .driver
            .screenshot_as_png()
            .await
            .unwrap_or_else(|error| panic!("a screenshot: {error}"));
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
        std::fs::create_dir_all(&dir).expect("make target/screenshots");
        let path = dir.join(format!("{name}.png"));
        std::fs::write(&path, png).unwrap_or_else(|error| panic!("writing {}: {error}", path.display()));
        println!("screenshot: {}", path.display());
        path
    }

    /// What chromedriver printed so far.
    pub fn driver_log(&self) -> Vec<String> {
        self.driver_log.lock().unwrap().clone()
    }
}

/// chromedriver, the leader of its own process group, in which it starts
/// the browser; killed with all of that group when dropped (after the
/// session, declared before it in [`Browser`]).
struct ChromeDriver(Child);

impl Drop for ChromeDriver {
    fn drop(&mut self) {
        if let Some(group) = self.0.id().and_then(|id| rustix::process::Pid::from_raw(id as i32)) {
            let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
        }
    }
}

/// The port in chromedriver's "ChromeDriver was started successfully on
/// port 12345." line.
pub fn started_on_port(line: &str) -> Option<u16> {
    let rest = line.split_once("started successfully on port ")?.1;
    rest.trim_end().trim_end_matches('.').parse().ok()
}

/// Polls chromedriver's `/status` until it says it is ready.
async fn wait_until_ready(url: &str, driver_log: &Mutex<Vec<String>>) {
    let client = reqwest::Client::builder().no_proxy().build().expect("an HTTP client");
    let status = format!("{url}/status");
    let ready = tokio::time::timeout(WAIT, async {
        loop {
            if let Ok(response) = client.get(&status).send().await
                && let Ok(body) = response.json::<serde_json::Value>().await
                && body["value"]["ready"] == true
            {
                return;
            }
            tokio::time::sleep(POLL).await;
        }
    })
    .await;
    if ready.is_err() {
        panic!(
            "chromedriver at {url} was not ready after {WAIT:?}:\n{}",
            driver_log.lock().unwrap().join("\n")
        );
    }
}
