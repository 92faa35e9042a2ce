//! A real daemon with the dashboard on, started from a configuration file
//! that names a provider key from the environment (a secret the daemon
//! knows), and a client signed in with a link from `passepartout web`: the
//! admin pages' tests, over plain HTTP and in a browser.

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use reqwest::StatusCode;
use reqwest::header;

use super::fake_llm::FakeLlm;
use super::process::{Running, run_cli, write_config};
use super::web::{WebSession, field, html_unescape};

/// The provider's key: a configured secret.
pub const CANARY: &str = "sk-canary-web-admin-0123456789";

/// A signed-in browser on a real daemon with the dashboard on.
pub struct Dashboard {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
    pub daemon: Running,
    pub llm: FakeLlm,
    pub base: String,
    pub web: WebSession,
}

/// A daemon with `extra` added to its configuration, and a browser signed in.
pub async fn start(extra: &str) -> Dashboard {
    let llm = FakeLlm::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(dir.path(), &llm.base_url());
    let mut text = std::fs::read_to_string(&config).unwrap();
    // The provider's key, from the environment: a secret the daemon knows.
    text = text.replace(
        "timeout_s = 10\n",
        "timeout_s = 10\napi_key_env = \"PP_WEB_ADMIN_KEY\"\n",
    );
    text += "# the dashboard, on a port of its own\n[web]\nenabled = true\nlisten = \"127.0.0.1:0\"\n";
    text += extra;
    std::fs::write(&config, text).unwrap();
    std::fs::set_permissions(&config, std::fs::Permissions::from_mode(0o640)).unwrap();
    let daemon = Running::start_with(&config, &[("RUST_LOG", "info"), ("PP_WEB_ADMIN_KEY", CANARY)]).await;
    let link = link(&config).await;
    let web = WebSession::sign_in(&link, "/keys").await;
    Dashboard {
        dir,
        config,
        daemon,
        llm,
        base: web.base.clone(),
        web,
    }
}

/// A one-time sign-in link from `passepartout web`.
pub async fn link(config: &std::path::Path) -> String {
    let out = run_cli(config, &["web"]).await;
    assert!(out.status.success(), "{out:?}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout.lines().next().unwrap().trim().to_owned()
}

/// What the text area on `page` holds.
pub fn text_area(page: &str) -> String {
    let start = page.find("<textarea").unwrap();
    let open = start + page[start..].find('>').unwrap() + 1;
    let end = open + page[open..].find("</textarea>").unwrap();
    html_unescape(&page[open..end])
}

impl Dashboard {
    pub async fn get(&self, path: &str) -> String {
        self.web.get(path).await
    }

    pub async fn get_status(&self, path: &str) -> (StatusCode, String) {
        self.web.get_status(path).await
    }

    /// Posts `fields` and the CSRF token, from the page's own origin.
    pub async fn post(&self, path: &str, fields: &[(&str, &str)]) -> (StatusCode, String) {
        self.post_as(path, fields, &self.web.csrf, &self.web.base).await
    }

    /// Posts `fields` with `csrf` from `origin`: the status, and where it
    /// sends the browser or else the page's text.
    pub async fn post_as(&self, path: &str, fields: &[(&str, &str)], csrf: &str, origin: &str) -> (StatusCode, String) {
        let response = self.web.post_from(path, fields, Some(csrf), origin).await;
        let status = response.status();
        let location = response
            .headers()
            .get(header::LOCATION)
            .map(|l| l.to_str().unwrap().to_owned());
        let text = response.text().await.unwrap();
        (status, location.unwrap_or(text))
    }

    pub fn file(&self) -> Vec<u8> {
        std::fs::read(&self.config).unwrap()
    }

    /// Saves `text` in the Configuration page's edit form as read at `page`.
    pub async fn save(&self, page: &str, text: &str) -> (StatusCode, String) {
        let based_on = field(page, "based_on");
        self.post("/config/edit", &[("text", text), ("based_on", &based_on)])
            .await
    }
}
