//! The web dashboard end to end: a real daemon with `[web]` on port 0, the
//! real `passepartout web` command for links and sessions, and a real HTTP
//! client whose cookies are handled by hand (no cookie store, no redirects
//! followed), so each test says exactly what a browser would send.

use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use passepartout::Extensions;
use passepartout::foundation::clock::Clock;
use reqwest::StatusCode;
use reqwest::header::{self, HeaderMap};

use crate::support;
use support::fake_llm::FakeLlm;
use support::harness::TestDaemon;
use support::process::run_cli;

/// A provider key that no response may ever show.
const CANARY: &str = "sk-canary-7f3a9c1e5b";

struct Setup {
    daemon: TestDaemon,
    _llm: FakeLlm,
    cli_config: PathBuf,
    /// How far ahead of the wall clock the daemon's clock reads.
    ahead: &'static AtomicU64,
    http: reqwest::Client,
}

/// How a `passepartout` command ended.
#[derive(Debug)]
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

async fn start(web: bool) -> Setup {
    let llm = FakeLlm::start().await;
    let ahead: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(0)));
    let key_dir = tempfile::tempdir().unwrap();
    let key_file = key_dir.path().join("key");
    {
        use std::io::Write as _;
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&key_file)
            .unwrap();
        file.write_all(CANARY.as_bytes()).unwrap();
    }
    let extensions = Extensions {
        clock: Some(Clock::shifted(ahead)),
        ..Extensions::default()
    };
    let daemon = TestDaemon::start_extended(
        &llm,
        |config| {
            config.web.enabled = web;
            config.web.listen = "127.0.0.1:0".parse().unwrap();
            config.llm.providers[0].api_key_file = Some(key_file.clone());
        },
        extensions,
    )
    .await;
    // The key was read at start; the daemon's own directory keeps the CLI's config.
    let cli_config = daemon.cli_config(&llm);
    drop(key_dir);
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    Setup {
        daemon,
        _llm: llm,
        cli_config,
        ahead,
        http,
    }
}

impl Setup {
    async fn cli(&self, args: &[&str]) -> Ran {
        let output = run_cli(&self.cli_config, args).await;
        Ran {
            code: output.status.code(),
            stdout: String::from_utf8(output.stdout).unwrap(),
            stderr: String::from_utf8(output.stderr).unwrap(),
        }
    }

    /// A new sign-in link from `passepartout web`.
    async fn link(&self) -> String {
        let ran = self.cli(&["web"]).await;
        assert_eq!(ran.code, Some(0), "{ran:?}");
        let link = ran.stdout.lines().next().unwrap().to_owned();
        assert!(
            link.starts_with("http://127.0.0.1:") && link.contains("/sign-in/"),
            "{ran:?}"
        );
        link
    }

    /// The dashboard's base address, from a link.
    fn base(link: &str) -> String {
        link.split("/sign-in/").next().unwrap().to_owned()
    }

    async fn get(&self, url: &str, cookie: Option<&str>) -> reqwest::Response {
        let mut request = self.http.get(url).header(header::USER_AGENT, "TestBrowser/1.0");
        if let Some(cookie) = cookie {
            request = request.header(header::COOKIE, cookie);
        }
        request.send().await.unwrap()
    }

    /// Signs in with a new link: the `name=value` of the session cookie.
    async fn sign_in(&self) -> (String, String) {
        let link = self.link().await;
        let response = self.get(&link, None).await;
        assert_eq!(response.status(), StatusCode::SEE_OTHER);
        assert_eq!(response.headers()[header::LOCATION], "/");
        let set_cookie = response.headers()[header::SET_COOKIE].to_str().unwrap().to_owned();
        for attribute in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(set_cookie.contains(attribute), "{set_cookie}");
        }
        assert!(
            !set_cookie.contains("Secure"),
            "plain http on this machine: {set_cookie}"
        );
        let cookie = set_cookie.split(';').next().unwrap().to_owned();
        (Self::base(&link), cookie)
    }
}

fn csrf_of(page: &str) -> String {
    let at = page.find(r#"name="csrf" value=""#).expect("a CSRF field") + r#"name="csrf" value=""#.len();
    page[at..].split('"').next().unwrap().to_owned()
}

fn assert_secure_headers(headers: &HeaderMap) {
    assert_eq!(
        headers[header::CONTENT_SECURITY_POLICY],
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; \
         form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    );
    assert_eq!(headers[header::X_FRAME_OPTIONS], "DENY");
    assert_eq!(headers[header::REFERRER_POLICY], "no-referrer");
    assert_eq!(headers[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
}

#[tokio::test]
async fn the_dashboard_is_off_by_default_and_the_cli_says_how_to_turn_it_on() {
    let setup = start(false).await;
    let status = setup.daemon.daemon.as_ref().unwrap().status();
    let names: Vec<_> = status["gateways"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].clone())
        .collect();
    assert!(!names.contains(&"web".into()), "nothing listens: {names:?}");
    let ran = setup.cli(&["web"]).await;
    assert_eq!(ran.code, Some(1), "{ran:?}");
    assert!(ran.stdout.is_empty());
    assert!(
        ran.stderr
            .contains("the web dashboard is off: set `enabled = true` under [web]"),
        "{ran:?}"
    );
}

#[tokio::test]
async fn a_link_signs_in_once_and_the_overview_shows_the_daemon_and_no_secret() {
    let setup = start(true).await;
    let link = setup.link().await;
    let base = Setup::base(&link);

    // Not signed in: how to sign in, with the headers on that page too.
    let anonymous = setup.get(&format!("{base}/"), None).await;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    assert_secure_headers(anonymous.headers());
    assert!(
        anonymous
            .text()
            .await
            .unwrap()
            .contains("<code>passepartout web</code>")
    );

    let signed_in = setup.get(&link, None).await;
    assert_eq!(signed_in.status(), StatusCode::SEE_OTHER);
    let cookie = signed_in.headers()[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();

    let overview = setup.get(&format!("{base}/"), Some(&cookie)).await;
    assert_eq!(overview.status(), StatusCode::OK);
    assert_secure_headers(overview.headers());
    assert_eq!(overview.headers()[header::CACHE_CONTROL], "no-store");
    assert_eq!(overview.headers()[header::CONTENT_TYPE], "text/html; charset=utf-8");
    let page = overview.text().await.unwrap();
    for fact in [
        "<h1>Overview</h1>",
        r#"<td data-label="Gateway">socket</td>"#,
        r#"<td data-label="Gateway">web</td>"#,
        r#"<td data-label="Provider">fake</td>"#,
        "Waiting for approval",
        "Healthy.",
    ] {
        assert!(page.contains(fact), "{fact} missing: {page}");
    }
    assert!(
        !page.contains("<script>") && !page.contains("style="),
        "no inline script or style"
    );

    // The link was used.
    let replayed = setup.get(&link, None).await;
    assert_eq!(replayed.status(), StatusCode::UNAUTHORIZED);
    assert!(
        replayed
            .text()
            .await
            .unwrap()
            .contains("This sign-in link is not valid")
    );

    // The assets are this origin's own; nothing anywhere shows the key.
    let mut seen = page;
    for asset in ["/assets/style.css", "/assets/live.js"] {
        let response = setup.get(&format!("{base}{asset}"), None).await;
        assert_eq!(response.status(), StatusCode::OK, "{asset}");
        assert_secure_headers(response.headers());
        seen += &*response.text().await.unwrap();
    }
    let missing = setup.get(&format!("{base}/nothing-here"), Some(&cookie)).await;
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
    seen += &*missing.text().await.unwrap();
    assert!(!seen.contains(CANARY), "a secret reached a page");
}

#[tokio::test]
async fn a_link_past_its_five_minutes_is_refused() {
    let setup = start(true).await;
    let link = setup.link().await;
    setup.ahead.store(5 * 60 * 1000, Ordering::Relaxed);
    let late = setup.get(&link, None).await;
    assert_eq!(late.status(), StatusCode::UNAUTHORIZED);
    let page = late.text().await.unwrap();
    assert!(page.contains("This sign-in link is not valid"), "{page}");
    assert!(page.contains("passepartout web"), "says how to get a new one");
}

#[tokio::test]
async fn another_host_and_forms_from_elsewhere_or_without_the_token_are_refused() {
    let setup = start(true).await;
    let (base, cookie) = setup.sign_in().await;
    let port = base.rsplit(':').next().unwrap();

    let rebound = setup
        .http
        .get(format!("{base}/"))
        .header(header::HOST, format!("attacker.example:{port}"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(rebound.status(), StatusCode::MISDIRECTED_REQUEST);
    assert_secure_headers(rebound.headers());
    let localhost = setup
        .http
        .get(format!("{base}/"))
        .header(header::HOST, format!("localhost:{port}"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(
        localhost.status(),
        StatusCode::OK,
        "localhost at its port is this machine"
    );

    let page = setup
        .get(&format!("{base}/"), Some(&cookie))
        .await
        .text()
        .await
        .unwrap();
    let csrf = csrf_of(&page);
    let post = |origin: &str, body: String| {
        setup
            .http
            .post(format!("{base}/sign-out"))
            .header(header::COOKIE, &cookie)
            .header(header::ORIGIN, origin)
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    let foreign = post("https://attacker.example", format!("csrf={csrf}")).await.unwrap();
    assert_eq!(foreign.status(), StatusCode::FORBIDDEN);
    let wrong_token = post(&base, "csrf=not-the-token".into()).await.unwrap();
    assert_eq!(wrong_token.status(), StatusCode::FORBIDDEN);
    let malformed = post(&base, "nothing=here".into()).await.unwrap();
    assert_eq!(malformed.status(), StatusCode::BAD_REQUEST);
    assert!(malformed.text().await.unwrap().contains("The form could not be read"));
    let oversized = post(&base, format!("csrf={csrf}&pad={}", "x".repeat(64 * 1024)))
        .await
        .unwrap();
    assert_eq!(oversized.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let anonymous = setup
        .http
        .post(format!("{base}/sign-out"))
        .header(header::ORIGIN, &base)
        .form(&[("csrf", csrf.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), StatusCode::FORBIDDEN, "no session, no form");

    // Still signed in after all that; the real form signs out.
    assert_eq!(
        setup.get(&format!("{base}/"), Some(&cookie)).await.status(),
        StatusCode::OK
    );
    let signed_out = post(&base, format!("csrf={csrf}")).await.unwrap();
    assert_eq!(signed_out.status(), StatusCode::SEE_OTHER);
    assert_eq!(
        setup.get(&format!("{base}/"), Some(&cookie)).await.status(),
        StatusCode::UNAUTHORIZED
    );
}

#[tokio::test]
async fn web_open_hands_the_opener_a_private_page_and_never_the_link() {
    use std::os::unix::fs::PermissionsExt as _;
    let setup = start(true).await;
    let dir = tempfile::tempdir().unwrap();
    // A stand-in for xdg-open: it records what it was given.
    let opener = dir.path().join("opener");
    let recorded = dir.path().join("argv");
    std::fs::write(
        &opener,
        format!("#!/bin/sh\nprintf '%s\\n' \"$0\" \"$@\" > {recorded:?}\n"),
    )
    .unwrap();
    std::fs::set_permissions(&opener, std::fs::Permissions::from_mode(0o755)).unwrap();
    let runtime = dir.path().join("runtime");
    std::fs::create_dir(&runtime).unwrap();
    let command = tokio::process::Command::new(support::process::binary())
        .arg("--config")
        .arg(&setup.cli_config)
        .args(["web", "--open"])
        .env("PASSEPARTOUT_OPENER", &opener)
        .env("XDG_RUNTIME_DIR", &runtime)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(support::harness::WAIT, command)
        .await
        .unwrap()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let link = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let token = link.rsplit('/').next().unwrap();
    assert!(token.len() >= 16, "{link}");

    let argv = std::fs::read_to_string(&recorded).expect("the opener ran");
    assert!(!argv.contains(token), "the link is on no command line: {argv}");
    let page = PathBuf::from(argv.lines().nth(1).expect("one argument"));
    assert!(page.starts_with(&runtime), "{page:?}");
    let mode = std::fs::metadata(&page).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "the page is the user's alone");
    let folder = std::fs::metadata(page.parent().unwrap()).unwrap().permissions().mode() & 0o777;
    assert_eq!(folder, 0o700, "in a folder of the user's own");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        html.contains(&format!("<meta http-equiv=\"refresh\" content=\"0;url={link}\">")),
        "{html}"
    );
    // Followed from that page (another site, to the browser), the link
    // signs in and the dashboard's own page sends the browser on, so the
    // SameSite=Strict cookie goes along.
    let signed_in = setup
        .http
        .get(&link)
        .header("sec-fetch-site", "cross-site")
        .send()
        .await
        .unwrap();
    assert_eq!(signed_in.status(), StatusCode::OK);
    assert_eq!(signed_in.headers()[header::REFRESH], "0; url=/");
    let cookie = signed_in.headers()[header::SET_COOKIE].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let base = Setup::base(&link);
    assert_eq!(
        setup.get(&format!("{base}/"), Some(&cookie)).await.status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn sessions_are_listed_and_revoked_with_the_cli() {
    let setup = start(true).await;
    let (base, cookie) = setup.sign_in().await;
    let listed = setup.cli(&["web", "sessions"]).await;
    assert_eq!(listed.code, Some(0), "{listed:?}");
    let line = listed.stdout.lines().nth(1).expect("one session").to_owned();
    assert!(line.contains("TestBrowser/1.0"), "{listed:?}");
    assert!(
        !listed.stdout.contains(cookie.split('=').nth(1).unwrap()),
        "never the session id"
    );
    let id = line.split_whitespace().next().unwrap().to_owned();

    let unknown = setup.cli(&["web", "sessions", "revoke", "ffffffff0000"]).await;
    assert_eq!(unknown.code, Some(1), "{unknown:?}");
    assert!(unknown.stderr.contains("no session ffffffff0000"), "{unknown:?}");

    let revoked = setup.cli(&["web", "sessions", "revoke", &id]).await;
    assert_eq!(revoked.code, Some(0), "{revoked:?}");
    assert_eq!(revoked.stdout, format!("Session {id} is signed out.\n"));
    assert_eq!(
        setup.get(&format!("{base}/"), Some(&cookie)).await.status(),
        StatusCode::UNAUTHORIZED
    );
    let none = setup.cli(&["web", "sessions"]).await;
    assert_eq!(none.stdout, "No browser is signed in.\n");
}

#[tokio::test]
async fn guessing_links_is_held_after_ten_wrong_ones_and_a_good_link_still_signs_in() {
    let setup = start(true).await;
    let link = setup.link().await;
    let base = Setup::base(&link);
    for n in 0..10 {
        let wrong = setup.get(&format!("{base}/sign-in/guess{n}"), None).await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED, "guess {n}");
    }
    let held = setup.get(&format!("{base}/sign-in/guess10"), None).await;
    assert_eq!(held.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(held.text().await.unwrap().contains("Too many"));
    // Behind a proxy the guesser shares the owner's address: the owner's
    // own link is not held with the guesses.
    let good = setup.get(&link, None).await;
    assert_eq!(good.status(), StatusCode::SEE_OTHER, "a valid link always passes");
}

#[tokio::test]
async fn guessing_session_ids_is_held_and_the_real_session_still_passes() {
    let setup = start(true).await;
    let (base, cookie) = setup.sign_in().await;
    // Wrong session ids on pages: not signed in. The cookie is left alone
    // (it may be another dashboard's on this machine).
    for n in 0..5 {
        let wrong = setup
            .get(&format!("{base}/"), Some(&format!("passepartout_session=guess{n}")))
            .await;
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED, "guess {n}");
        assert!(wrong.headers().get(header::SET_COOKIE).is_none());
    }
    // And on forms, from the page's own origin: counted alike.
    for n in 5..10 {
        let wrong = setup
            .http
            .post(format!("{base}/sign-out"))
            .header(header::ORIGIN, &base)
            .header(header::COOKIE, format!("passepartout_session=guess{n}"))
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .body("csrf=whatever")
            .send()
            .await
            .unwrap();
        assert_eq!(wrong.status(), StatusCode::FORBIDDEN, "guess {n}");
    }
    let held = setup
        .get(&format!("{base}/events"), Some("passepartout_session=guess10"))
        .await;
    assert_eq!(held.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(held.text().await.unwrap().contains("Too many"));
    // The guesser may share the owner's address (a proxy): a live session
    // is never held with the guesses.
    let page = setup.get(&format!("{base}/"), Some(&cookie)).await;
    assert_eq!(page.status(), StatusCode::OK, "a live session always passes");
    // No cookie at all is no guess.
    let none = setup.get(&format!("{base}/"), None).await;
    assert_eq!(none.status(), StatusCode::UNAUTHORIZED);
}
