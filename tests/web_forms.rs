//! The dashboard's forms that change something, end to end over plain HTTP
//! (as a browser without scripting sends them): what they refuse, and why.
//! The buttons' happy paths run in a real browser in `web_browser.rs`; a
//! standing rule made with one reads as made from the web, on the page and
//! in `passepartout approvals rules`.

use crate::support;

use std::time::Duration;

use passepartout_socket::WebRequest;
use reqwest::StatusCode;
use reqwest::header;
use support::approvals::{Setup, ask_for_approval};
use support::harness::WAIT;
use support::process::run_cli;
use support::web::WebSession;

/// A signed-in session against a daemon with the dashboard on.
pub(crate) struct Signed {
    pub(crate) setup: Setup,
    web: WebSession,
}

pub(crate) async fn sign_in() -> Signed {
    let setup = Setup::start_with(|config| {
        config.web.enabled = true;
        config.web.listen = "127.0.0.1:0".parse().unwrap();
    })
    .await;
    let link = setup
        .cli()
        .await
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .unwrap();
    let web = WebSession::sign_in(&link, "/approvals").await;
    Signed { setup, web }
}

impl Signed {
    /// The page at `path`, which must answer 200.
    pub(crate) async fn get(&self, path: &str) -> String {
        self.web.get(path).await
    }

    /// Posts `fields` (and the CSRF token, when `with_token`) to `path`:
    /// the status and the page's text.
    async fn post(&self, path: &str, fields: &[(&str, &str)], with_token: bool) -> (StatusCode, String) {
        let csrf = with_token.then_some(self.web.csrf.as_str());
        let response = self.web.post_from(path, fields, csrf, &self.web.base).await;
        (response.status(), response.text().await.unwrap())
    }
}

#[tokio::test]
async fn a_decision_that_cannot_be_taken_says_why() {
    let signed = sign_in().await;
    let (status, page) = signed
        .post("/approvals/decide", &[("token", "K7PX2QMD"), ("choice", "maybe")], true)
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(page.contains("The form could not be read"), "{page}");

    let (status, page) = signed
        .post(
            "/approvals/decide",
            &[("token", "not a token!"), ("choice", "approve")],
            true,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");
    assert!(page.contains("The form names no approval token."), "{page}");

    let (status, page) = signed
        .post(
            "/approvals/decide",
            &[("token", "K7PX2QMD"), ("choice", "approve")],
            true,
        )
        .await;
    assert_eq!(status, StatusCode::CONFLICT, "{page}");
    assert!(page.contains("no approval has the token K7PX2QMD"), "{page}");
    assert!(page.contains(r#"<a href="/approvals">Back to Approvals</a>"#), "{page}");

    let (status, page) = signed
        .post(
            "/approvals/decide",
            &[("token", "K7PX2QMD"), ("choice", "approve")],
            false,
        )
        .await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "no token is a form that does not read: {page}"
    );
    let forged = [("token", "K7PX2QMD"), ("choice", "approve"), ("csrf", "forged")];
    let (status, page) = signed.post("/approvals/decide", &forged, false).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(
        page.contains("The form&#x27;s token is not this session&#x27;s"),
        "{page}"
    );
}

#[tokio::test]
async fn an_unknown_rule_or_loop_is_refused_by_name() {
    let signed = sign_in().await;
    let (status, page) = signed.post("/approvals/rules/revoke", &[("id", "41")], true).await;
    assert_eq!(status, StatusCode::CONFLICT, "{page}");
    assert!(page.contains("41"), "{page}");
    let (status, page) = signed.post("/approvals/rules/revoke", &[("id", "-1")], true).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{page}");

    for path in ["/loops/run", "/loops/stop", "/loops/start"] {
        // A Stop is done once confirmed.
        let (status, page) = signed
            .post(path, &[("name", "nope<x>"), ("confirm", "yes")], true)
            .await;
        assert_eq!(status, StatusCode::CONFLICT, "{path}: {page}");
        assert!(
            page.contains("there is no loop &quot;nope&lt;x&gt;&quot;"),
            "{path}: {page}"
        );
        assert!(
            page.contains(r#"<a href="/loops">Back to Loops &amp; tools</a>"#),
            "{page}"
        );
    }
}

#[tokio::test]
async fn the_pages_need_a_session_and_read_their_filters() {
    let signed = sign_in().await;
    for path in ["/approvals", "/loops"] {
        let anonymous = signed
            .web
            .http
            .get(format!("{}{path}", signed.web.base))
            .send()
            .await
            .unwrap();
        assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let filtered = signed
        .web
        .http
        .get(format!("{}/approvals?outcome=denied&gateway=socket", signed.web.base))
        .header(header::COOKIE, &signed.web.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(filtered.status(), StatusCode::OK);
    let page = filtered.text().await.unwrap();
    assert!(page.contains(r#"<option value="denied" selected>"#), "{page}");
    assert!(page.contains("None decided yet with these filters."), "{page}");
    let bad = signed
        .web
        .http
        .get(format!("{}/approvals?revoked=many", signed.web.base))
        .header(header::COOKIE, &signed.web.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_rule_made_from_the_web_reads_as_made_from_the_web() {
    let signed = sign_in().await;
    let mut alice = signed.setup.chat("alice").await;
    let (_, prompt) = ask_for_approval(&mut alice, "the eggs").await;
    let (status, page) = signed
        .post(
            "/approvals/decide",
            &[("token", prompt.token.as_str()), ("choice", "always")],
            true,
        )
        .await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");

    let page = signed
        .web
        .http
        .get(format!("{}/approvals", signed.web.base))
        .header(header::COOKIE, &signed.web.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let rules = &page[page.find("Standing rules").expect("the rules' table")..];
    assert!(rules.contains(r#"<td data-label="Made">from the web</td>"#), "{rules}");
    // When it was asked and decided, by the daemon's clock.
    let decided = &page[page.find("Decided approvals").expect("the decided table")..];
    let decided = &decided[..decided.find("</table>").unwrap()];
    assert!(!decided.contains("—"), "every time shown: {decided}");
    assert!(
        decided.contains(r#"<td data-label="Decided">from the web, just now</td>"#) || decided.contains(" ago</td>"),
        "{decided}"
    );
    assert!(
        !page.contains("socket:web"),
        "the dashboard's account is not a person: {page}"
    );

    let config = signed.setup.daemon.cli_config(&signed.setup.llm);
    let listed = run_cli(&config, &["approvals", "rules"]).await;
    let listed = String::from_utf8(listed.stdout).unwrap();
    let line = listed
        .lines()
        .find(|line| line.contains("socket:alice"))
        .unwrap_or_else(|| panic!("{listed}"));
    assert!(line.ends_with("  from the web"), "{listed}");
    let trail = run_cli(&config, &["approvals", "--all"]).await;
    let trail = String::from_utf8(trail.stdout).unwrap();
    assert!(trail.contains(" made from the web with "), "the audit trail: {trail}");
    assert!(!trail.contains("socket:web"), "{trail}");
}

/// The state of loop `name` as `passepartout loops --json` lists it, once
/// `done` holds of it (within [`WAIT`]).
async fn heartbeat_until(signed: &Signed, done: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
    let mut cli = signed.setup.cli().await;
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let listing = cli
            .ask::<serde_json::Value>(passepartout_socket::AdminRequest::Loops)
            .await
            .expect("the loops");
        let heartbeat = listing
            .as_array()
            .and_then(|loops| loops.iter().find(|l| l["name"] == "heartbeat"))
            .cloned()
            .unwrap_or_default();
        if done(&heartbeat) {
            return heartbeat;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "not there within {WAIT:?}: {listing}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn a_stopped_loop_is_started_again_with_the_token_and_not_without() {
    let signed = sign_in().await;
    // A Stop first says what it does, and stops nothing.
    let (status, page) = signed.post("/loops/stop", &[("name", "heartbeat")], true).await;
    assert_eq!(status, StatusCode::OK, "{page}");
    assert!(page.contains("<h1>Stop loop heartbeat?</h1>"), "{page}");
    assert!(page.contains("periodic backups"), "what stops with it: {page}");
    assert!(
        page.contains(r#"name="confirm" value="yes""#),
        "a button that confirms: {page}"
    );
    assert!(page.contains(r#"<nav id="nav""#), "the navigation stays: {page}");
    let asked = heartbeat_until(&signed, |_| true).await;
    assert_ne!(asked["state"], "stopped", "only asked: {asked}");

    let confirmed = [("name", "heartbeat"), ("confirm", "yes")];
    let (status, page) = signed.post("/loops/stop", &confirmed, true).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{page}");
    heartbeat_until(&signed, |l| l["state"] == "stopped").await;

    let page = signed
        .web
        .http
        .get(format!("{}/loops", signed.web.base))
        .header(header::COOKIE, &signed.web.cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains(r#"action="/loops/start""#), "a Start button: {page}");
    assert!(
        !page.contains(r#"action="/loops/stop""#),
        "no Stop for a stopped loop: {page}"
    );

    let (status, page) = signed.post("/loops/start", &[("name", "heartbeat")], false).await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "no token is a form that does not read: {page}"
    );
    let forged = [("name", "heartbeat"), ("csrf", "forged")];
    let (status, page) = signed.post("/loops/start", &forged, false).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{page}");
    assert!(
        page.contains("The form&#x27;s token is not this session&#x27;s"),
        "{page}"
    );
    let still = heartbeat_until(&signed, |_| true).await;
    assert_eq!(still["state"], "stopped", "refused, so still stopped: {still}");

    let response = signed
        .web
        .http
        .post(format!("{}/loops/start", signed.web.base))
        .header(header::COOKIE, &signed.web.cookie)
        .header(header::ORIGIN, &signed.web.base)
        .form(&[("name", "heartbeat"), ("csrf", &signed.web.csrf)])
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SEE_OTHER);
    assert_eq!(response.headers()[header::LOCATION], "/loops?started=heartbeat");
    let started = heartbeat_until(&signed, |l| l["state"] != "stopped").await;
    assert_eq!(started["iterations"], 0, "it waits for its next time: {started}");

    let (status, page) = signed.post("/loops/start", &[("name", "heartbeat")], true).await;
    assert_eq!(status, StatusCode::CONFLICT, "{page}");
    assert!(page.contains("is already running"), "{page}");
}
