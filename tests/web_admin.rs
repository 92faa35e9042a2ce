//! The dashboard's Logs, Configuration (editing), Keys & sessions and
//! Channels pages end to end over plain HTTP, as a browser without
//! scripting uses them, against the real binary (whose log the Logs page
//! reads): a line logged after the page opened reaches its stream, the
//! level filter holds, a configured secret never shows; an edit with a
//! mistake is refused with the file byte for byte as it was, a good one is
//! written with a `.bak` and reloaded, a masked secret kept, an edit of an
//! older version refused; keys made and revoked, a session signed out; a
//! Telegram bot connected against the fake Bot API (a bad token refused
//! with `getMe`'s error and nothing written); a Signal account linked
//! against the fake signal-cli. Every new form refuses a forged origin or
//! CSRF token.

use crate::support;

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::time::Duration;

use futures::StreamExt;
use reqwest::StatusCode;
use reqwest::header;
use support::dashboard::{CANARY, Dashboard, link, start, text_area};
use support::fake_llm::Script;
use support::fake_signal::{FakeSignal, LINK_URI, LINKED_NUMBER};
use support::fake_telegram::FakeTelegram;
use support::harness::WAIT;
use support::process::run_cli;
use support::web::{field, html_unescape};

#[tokio::test]
async fn the_logs_page_shows_lines_live_filtered_and_without_secrets() {
    let dashboard = start("").await;
    // The model refuses, quoting the key: the daemon logs the failure.
    let body = format!(r#"{{"error": {{"message": "Incorrect API key provided: {CANARY}"}}}}"#);
    dashboard.llm.set_responder(move |_| Script::Status {
        code: 400,
        retry_after: None,
        body: Some(body.clone()),
    });
    let page = dashboard.get("/logs").await;
    assert!(page.contains("passepartout ready"), "{page}");
    let stream = field_attr(&page, "data-stream");
    let mut events = dashboard
        .web
        .http
        .get(format!("{}{stream}", dashboard.base))
        .header(header::COOKIE, &dashboard.web.cookie)
        .send()
        .await
        .unwrap()
        .bytes_stream();

    // Logged after the page was opened: the stream says so.
    let send = run_cli(&dashboard.config, &["send", "--timeout-s", "20", "hello"]).await;
    assert!(!String::from_utf8_lossy(&send.stdout).contains(CANARY));
    let news = tokio::time::timeout(WAIT, async {
        let mut seen = String::new();
        while let Some(Ok(chunk)) = events.next().await {
            seen += &*String::from_utf8_lossy(&chunk);
            if seen.contains("event: status") {
                return seen;
            }
        }
        seen
    })
    .await
    .expect("an event for the new lines");
    assert!(news.contains("event: status"), "{news}");
    let page = dashboard.get("/logs").await;
    assert!(page.contains("WARN") || page.contains("ERROR"), "{page}");
    assert!(!page.contains(CANARY), "a configured secret is never shown: {page}");
    // The line that quoted the key is there, the key redacted.
    assert!(page.contains("Incorrect API key provided: [redacted]"), "{page}");
    // And so it is on the daemon's standard error, where the log goes.
    dashboard
        .daemon
        .wait_for_log(&["Incorrect API key provided: [redacted]"])
        .await;
    let logged = dashboard.daemon.logs.lock().unwrap().join("\n");
    assert!(
        !logged.contains(CANARY),
        "a configured secret reached the log: {logged}"
    );

    // Filtered by level: nothing below a warning.
    let warnings = dashboard.get("/logs?level=warn").await;
    assert!(!warnings.contains("passepartout ready"), "{warnings}");
    assert!(warnings.contains(r#"<option value="warn" selected>"#), "{warnings}");
    // And by target.
    let web = dashboard.get("/logs?target=passepartout_web").await;
    assert!(!web.contains("passepartout ready"), "{web}");
    let (status, bad) = dashboard.get_status("/logs?level=loud").await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}");
    assert!(bad.contains("not a level"), "{bad}");
}

/// The value of the first attribute `name` on `page`.
fn field_attr(page: &str, name: &str) -> String {
    let marker = format!(r#"{name}=""#);
    let at = page.find(&marker).unwrap() + marker.len();
    html_unescape(page[at..].split('"').next().unwrap())
}

#[tokio::test]
async fn a_config_edit_with_a_mistake_is_refused_and_the_file_left_byte_for_byte() {
    let dashboard = start("").await;
    let before = dashboard.file();
    let page = dashboard.get("/config").await;
    let shown = text_area(&page);
    assert!(shown.contains("[web]") && !shown.contains(CANARY), "{shown}");

    // A mistake check-config finds.
    let wrong = shown.replace("listen = \"127.0.0.1:0\"", "listen = \"0.0.0.0:0\"");
    let (status, answer) = dashboard.save(&page, &wrong).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(answer.contains("nothing was written"), "{answer}");
    assert!(answer.contains("web.listen"), "the problem is listed: {answer}");
    assert!(
        text_area(&answer).contains("listen = \"0.0.0.0:0\""),
        "the edit kept to fix: {answer}"
    );
    // Not TOML at all.
    let (status, answer) = dashboard.save(&page, "[web\nenabled = true").await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(answer.contains("not valid TOML"), "{answer}");
    assert_eq!(dashboard.file(), before, "the file is byte for byte as it was");
    let bak = dashboard.config.with_extension("toml.bak");
    assert!(!bak.exists());
    let left: Vec<_> = std::fs::read_dir(dashboard.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.starts_with("config.toml."))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn a_good_edit_is_written_kept_as_bak_and_reloaded_with_secrets_kept() {
    let dashboard = start("").await;
    // A secret in the file itself: credentials in the model's address.
    let with_secret = String::from_utf8(dashboard.file())
        .unwrap()
        .replace("base_url = \"http://", "base_url = \"http://me:tv-secret-in-file-42@");
    std::fs::write(&dashboard.config, with_secret).unwrap();
    let before = dashboard.file();
    let page = dashboard.get("/config").await;
    let shown = text_area(&page);
    assert!(
        !shown.contains("tv-secret-in-file-42") && shown.contains("••••••@127.0.0.1"),
        "{shown}"
    );
    assert!(!page.contains("tv-secret-in-file-42"), "{page}");

    // A setting that applies now, one that waits, the masked secret left.
    let edited = shown.replace("[web]\n", "[web]\npublic_url = \"https://pp.example\"\n")
        + "[approvals]\nglobal_approvers = [\"socket:me\"]\n";
    let (status, answer) = dashboard.save(&page, &edited).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer.contains("Wrote"), "{answer}");
    assert!(answer.contains("Applied now:"), "{answer}");
    assert!(
        answer.contains("applied only after a restart:") && answer.contains("web.public_url"),
        "{answer}"
    );
    let after = String::from_utf8(dashboard.file()).unwrap();
    assert!(after.contains("me:tv-secret-in-file-42@"), "the secret kept: {after}");
    assert!(
        after.contains("# the dashboard, on a port of its own"),
        "comments kept: {after}"
    );
    assert!(after.contains("public_url = \"https://pp.example\""), "{after}");
    let bak = PathBuf::from(format!("{}.bak", dashboard.config.display()));
    assert_eq!(std::fs::read(&bak).unwrap(), before, "the file before, as .bak");
    let mode = std::fs::metadata(&dashboard.config).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the file keeps its mode");

    // An edit of the page as it was before: refused, nothing written.
    let (status, answer) = dashboard.save(&page, &shown).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(answer.contains("changed since this page read it"), "{answer}");
    assert_eq!(String::from_utf8(dashboard.file()).unwrap(), after);

    // A secret replaced whole is the new one.
    let page = dashboard.get("/config").await;
    let replaced = text_area(&page).replace("http://••••••@", "http://me:tv-new-secret-43@");
    let (status, answer) = dashboard.save(&page, &replaced).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let after = String::from_utf8(dashboard.file()).unwrap();
    assert!(
        after.contains("tv-new-secret-43") && !after.contains("tv-secret-in-file-42"),
        "{after}"
    );
}

#[tokio::test]
async fn keys_are_made_and_revoked_and_a_session_signed_out_on_the_page() {
    let dashboard = start("").await;
    let (status, made) = dashboard.post("/keys/create", &[("name", "laptop")]).await;
    assert_eq!(status, StatusCode::OK, "{made}");
    let at = made.find(r#"<pre class="key">"#).expect("the key shown") + r#"<pre class="key">"#.len();
    let key = made[at..].split(['\n', '<']).next().unwrap().to_owned();
    assert!(key.starts_with("pp-"), "{key}");
    // The key works on the API, and is listed without itself.
    let models = dashboard
        .web
        .http
        .get(format!("{}/v1/models", dashboard.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), StatusCode::OK);
    let page = dashboard.get("/keys").await;
    assert!(page.contains("laptop") && !page.contains(&key), "{page}");
    let id = field(&page, "key");
    let (status, answer) = dashboard.post("/keys/create", &[("name", "laptop")]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(answer.contains("No key was made"), "{answer}");

    let (status, location) = dashboard.post("/keys/revoke", &[("key", &id)]).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{location}");
    let page = dashboard.get(&location).await;
    assert!(page.contains("API key laptop is revoked."), "{page}");
    let models = dashboard
        .web
        .http
        .get(format!("{}/v1/models", dashboard.base))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    assert_eq!(models.status(), StatusCode::UNAUTHORIZED);

    // Another browser, signed out from this one.
    let other = link(&dashboard.config).await;
    let signed = dashboard
        .web
        .http
        .get(&other)
        .header(header::USER_AGENT, "OtherBrowser/1")
        .send()
        .await
        .unwrap();
    let other_cookie = signed.headers()[header::SET_COOKIE].to_str().unwrap();
    let other_cookie = other_cookie.split(';').next().unwrap().to_owned();
    let page = dashboard.get("/keys").await;
    assert!(
        page.contains("OtherBrowser/1") && page.contains("this browser"),
        "{page}"
    );
    let row = page.find("OtherBrowser/1").unwrap();
    let id = field(&page[row..], "id");
    let (status, location) = dashboard.post("/keys/sessions/revoke", &[("id", &id)]).await;
    assert_eq!(status, StatusCode::SEE_OTHER, "{location}");
    let theirs = dashboard
        .web
        .http
        .get(format!("{}/keys", dashboard.base))
        .header(header::COOKIE, &other_cookie)
        .send()
        .await
        .unwrap();
    assert_ne!(theirs.status(), StatusCode::OK, "the other browser is signed out");

    // This browser's own session: only when confirmed.
    let page = dashboard.get("/keys").await;
    let at = page.rfind(r#"name="confirm""#).unwrap();
    let form = &page[..at];
    let id = form
        .rsplit(r#"name="id" value=""#)
        .next()
        .unwrap()
        .split('"')
        .next()
        .unwrap();
    let (status, answer) = dashboard.post("/keys/sessions/revoke", &[("id", id)]).await;
    assert_eq!(status, StatusCode::CONFLICT, "{answer}");
    assert!(answer.contains("signs you out here"), "{answer}");
    dashboard.get("/keys").await;
    let (status, location) = dashboard
        .post("/keys/sessions/revoke", &[("id", id), ("confirm", "yes")])
        .await;
    assert_eq!((status, location.as_str()), (StatusCode::SEE_OTHER, "/"));
    let (status, _) = dashboard.get_status("/keys").await;
    assert_ne!(status, StatusCode::OK, "signed out");
}

#[tokio::test]
async fn every_new_form_refuses_a_forged_origin_or_token() {
    let dashboard = start("").await;
    let before = dashboard.file();
    let page = dashboard.get("/config").await;
    let based_on = field(&page, "based_on");
    let text = text_area(&page);
    let forms: [(&str, Vec<(&str, &str)>); 7] = [
        ("/config/edit", vec![("text", &text), ("based_on", &based_on)]),
        ("/keys/create", vec![("name", "forged")]),
        ("/keys/revoke", vec![("key", "forged")]),
        ("/keys/sessions/revoke", vec![("id", "abcd")]),
        ("/channels/telegram", vec![("token", "1:forged")]),
        ("/channels/signal", vec![]),
        (
            "/channels/matrix",
            vec![
                ("homeserver", "http://127.0.0.1:9"),
                ("user", "@forged:localhost"),
                ("password", "forged"),
            ],
        ),
    ];
    for (path, fields) in &forms {
        let (status, answer) = dashboard
            .post_as(path, fields, &dashboard.web.csrf, "http://evil.example")
            .await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {answer}");
        assert!(answer.contains("came from another site"), "{path}: {answer}");
        let (status, answer) = dashboard.post_as(path, fields, "forged-token", &dashboard.base).await;
        assert_eq!(status, StatusCode::FORBIDDEN, "{path}: {answer}");
    }
    assert_eq!(dashboard.file(), before);
    let page = dashboard.get("/keys").await;
    assert!(!page.contains("forged"), "{page}");
}

#[tokio::test]
async fn telegram_is_connected_by_its_token_and_a_bad_one_refused_with_nothing_written() {
    const TOKEN: &str = "4242:fake-token-for-the-dashboard";
    let telegram = FakeTelegram::start(TOKEN).await;
    let extra = format!("[telegram]\napi_url = \"{}\"\n", telegram.base_url());
    let dashboard = start(&extra).await;
    let before = dashboard.file();
    let token_file = dashboard.dir.path().join("telegram.token");

    let (status, answer) = dashboard
        .post("/channels/telegram", &[("token", "4242:wrong"), ("owner", "99")])
        .await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(answer.contains("getMe"), "{answer}");
    assert!(answer.contains("Invalid bot token"), "getMe's error: {answer}");
    assert!(answer.contains("nothing was written"), "{answer}");
    assert_eq!(dashboard.file(), before);
    assert!(!token_file.exists());

    // A good token, but nobody let in: check-config refuses the file, and
    // the token's file is taken back.
    let (status, answer) = dashboard.post("/channels/telegram", &[("token", TOKEN)]).await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{answer}");
    assert!(answer.contains("telegram.allowed_users"), "{answer}");
    assert_eq!(dashboard.file(), before);
    assert!(!token_file.exists());

    let (status, answer) = dashboard
        .post("/channels/telegram", &[("token", TOKEN), ("owner", "99")])
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer.contains("The bot @fake_bot answers"), "{answer}");
    assert!(
        answer.contains("telegram.enabled"),
        "what waits for a restart: {answer}"
    );
    assert!(!answer.contains(TOKEN), "{answer}");
    let stored = std::fs::read_to_string(&token_file).unwrap();
    assert_eq!(stored, format!("{TOKEN}\n"));
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let after = String::from_utf8(dashboard.file()).unwrap();
    assert!(
        after.contains("enabled = true") && after.contains("allowed_users = [99]"),
        "{after}"
    );
    assert!(!after.contains(TOKEN), "the token is in its file only: {after}");
    assert!(PathBuf::from(format!("{}.bak", dashboard.config.display())).exists());
    assert!(!telegram.calls("getMe").is_empty());
    // The page shows the live state: on in the file, started at a restart.
    let page = dashboard.get("/channels").await;
    assert!(page.contains("Telegram is on in the configuration"), "{page}");
}

#[tokio::test]
async fn a_new_token_for_a_bot_already_connected_is_stored_and_reloaded() {
    const OLD: &str = "4242:the-old-token-of-the-bot";
    const NEW: &str = "4242:the-new-token-of-the-bot";
    let old = FakeTelegram::start(OLD).await;
    let new = FakeTelegram::start(NEW).await;
    let extra = format!("[telegram]\napi_url = \"{}\"\n", old.base_url());
    let dashboard = start(&extra).await;
    let token_file = dashboard.dir.path().join("telegram.token");
    let (status, answer) = dashboard
        .post("/channels/telegram", &[("token", OLD), ("owner", "99")])
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");

    // The same settings, the Bot API now one that knows only the new token:
    // connecting again changes no line of the file, only the token's.
    let text = String::from_utf8(dashboard.file())
        .unwrap()
        .replace(&old.base_url(), &new.base_url());
    std::fs::write(&dashboard.config, &text).unwrap();
    let (status, answer) = dashboard
        .post("/channels/telegram", &[("token", NEW), ("owner", "99")])
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert!(answer.contains("Stored the new token"), "{answer}");
    assert!(answer.contains("takes it when the daemon restarts"), "{answer}");
    assert!(!answer.contains(NEW) && !answer.contains(OLD), "{answer}");
    assert_eq!(std::fs::read_to_string(&token_file).unwrap(), format!("{NEW}\n"));
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(String::from_utf8(dashboard.file()).unwrap(), text);
}

#[tokio::test]
async fn a_signal_account_is_linked_from_the_page_with_its_code_shown() {
    let signal = FakeSignal::start().await;
    signal.hold_next("finishLink");
    let extra = format!("[signal]\nendpoint = \"{}\"\n", signal.tcp_endpoint());
    let dashboard = start(&extra).await;
    let (status, location) = dashboard.post("/channels/signal", &[]).await;
    assert_eq!((status, location.as_str()), (StatusCode::SEE_OTHER, "/channels"));
    signal.wait_for_calls("finishLink", 1).await;
    let page = wait_for_page(&dashboard, "/channels", "<svg").await;
    assert!(page.contains(&LINK_URI.replace('&', "&amp;")), "{page}");
    assert!(page.contains("Check again"), "{page}");
    signal.release_held();
    dashboard
        .daemon
        .wait_for_log(&["configuration file changed from the dashboard"])
        .await;
    let page = wait_for_page(&dashboard, "/channels", "Linked:").await;
    assert!(page.contains(LINKED_NUMBER), "{page}");
    assert!(page.contains("Wrote"), "{page}");
    let after = String::from_utf8(dashboard.file()).unwrap();
    assert!(
        after.contains(&format!("account = \"{LINKED_NUMBER}\"")) && after.contains("note_to_self = true"),
        "{after}"
    );
}

/// `path`, once it holds `needle`.
async fn wait_for_page(dashboard: &Dashboard, path: &str, needle: &str) -> String {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let page = dashboard.get(path).await;
        if page.contains(needle) {
            return page;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{path} never showed {needle}: {page}"
        );
        // The page is read again as a person presses "Check again"; what
        // it waits for has happened (the callers waited on it), and is
        // only being recorded.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
