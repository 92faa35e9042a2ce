//! The Logs, Configuration, Keys & sessions and Channels pages in a real
//! headless Chromium against the real binary, used as a person would: the
//! Logs page shows a line logged after it opened by itself and filters by
//! level with its form; a config edit with a mistake is refused and the
//! file left as it was, a good one applies; a key is made and revoked;
//! Telegram is connected against the fake Bot API and a Signal account
//! linked against the fake signal-cli, its QR code on the page; a Matrix
//! login to a homeserver that does not answer is refused on the page with
//! nothing written. Each page
//! is left as screenshots at 1280×800 and 390×844 in `target/screenshots/`.

use std::time::Duration;

use serde_json::json;

use crate::support::browser::Browser;
use crate::support::dashboard::{Dashboard, link, start};
use crate::support::fake_signal::{FakeSignal, LINKED_NUMBER};
use crate::support::fake_telegram::FakeTelegram;
use crate::support::process::run_cli;

const TOKEN: &str = "4242:fake-token-for-the-browser";

#[tokio::test]
async fn the_admin_pages_work_in_a_browser_and_are_screenshot() {
    let Some(mut browser) = Browser::start("web_admin_browser").await else {
        return;
    };
    browser.set_wait(Duration::from_secs(20));
    let telegram = FakeTelegram::start(TOKEN).await;
    let signal = FakeSignal::start().await;
    signal.hold_next("finishLink");
    let extra = format!(
        "[telegram]\napi_url = \"{}\"\n[signal]\nendpoint = \"{}\"\n",
        telegram.base_url(),
        signal.tcp_endpoint()
    );
    let dashboard = start(&extra).await;
    browser.goto(&link(&dashboard.config).await).await;
    browser.wait_for_text("h1", "Overview").await;

    logs(&browser, &dashboard).await;
    config(&browser, &dashboard).await;
    keys(&browser, &dashboard).await;
    channels(&browser, &dashboard, &signal).await;
}

async fn logs(browser: &Browser, dashboard: &Dashboard) {
    dashboard
        .llm
        .set_responder(|_| crate::support::fake_llm::Script::status(503));
    browser.goto(&format!("{}/logs", dashboard.base)).await;
    browser.wait_for_text("main", "passepartout ready").await;
    browser.wait_for("#live.on").await;
    // Logged after the page opened: it shows by itself.
    let sent = run_cli(&dashboard.config, &["send", "--timeout-s", "5", "hello"]).await;
    let _ = sent;
    browser.wait_for_text("main", "provider failed").await;
    shots(browser, "web-logs").await;
    // The level filter, by its form.
    let level = browser.find(r#"select[name="level"]"#).await;
    level
        .find(thirtyfour::By::Css(r#"option[value="warn"]"#))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    browser.click(r#"form.filters button"#).await;
    browser
        .wait_until("the filtered page", || async {
            let url = browser.driver().current_url().await.unwrap();
            url.as_str().contains("level=warn").then_some(())
        })
        .await;
    let main = browser.text("main").await;
    assert!(main.contains("provider failed"), "{main}");
    assert!(!main.contains("passepartout ready"), "{main}");
}

async fn config(browser: &Browser, dashboard: &Dashboard) {
    let before = std::fs::read(&dashboard.config).unwrap();
    browser.goto(&format!("{}/config", dashboard.base)).await;
    browser.click("details.edit summary").await;
    browser.wait_for("textarea#config-text").await;
    shots_at(browser, "web-config-edit", "details.edit").await;
    let area = browser.find("textarea#config-text").await;
    let text: String = area.prop("value").await.unwrap().unwrap_or_default();
    set_value(
        browser,
        "textarea#config-text",
        &text.replace("127.0.0.1:0", "0.0.0.0:0"),
    )
    .await;
    browser.click(r#"form[action="/config/edit"] button"#).await;
    browser.wait_for_text(".saved", "nothing was written").await;
    assert!(browser.text(".saved").await.contains("web.listen"));
    assert_eq!(std::fs::read(&dashboard.config).unwrap(), before, "the file unchanged");
    shots(browser, "web-config-refused").await;

    browser.goto(&format!("{}/config", dashboard.base)).await;
    browser.click("details.edit summary").await;
    let area = browser.wait_for("textarea#config-text").await;
    let text: String = area.prop("value").await.unwrap().unwrap_or_default();
    set_value(
        browser,
        "textarea#config-text",
        &format!("{text}[approvals]\nglobal_approvers = [\"socket:me\"]\n"),
    )
    .await;
    browser.click(r#"form[action="/config/edit"] button"#).await;
    browser.wait_for_text(".saved", "Wrote").await;
    browser.wait_for_text("main", "approvals.global_approvers").await;
    shots(browser, "web-config-saved").await;
}

async fn keys(browser: &Browser, dashboard: &Dashboard) {
    browser.goto(&format!("{}/keys", dashboard.base)).await;
    browser.type_into(r#"input[name="name"]"#, "laptop").await;
    browser.click(r#"form[action="/keys/create"] button"#).await;
    let key = browser.wait_for_text("pre.key", "pp-").await;
    shots_at(browser, "web-keys-made", "section.made").await;
    browser.goto(&format!("{}/keys", dashboard.base)).await;
    let page = browser.text("main").await;
    assert!(page.contains("laptop") && !page.contains(key.lines().next().unwrap()));
    shots(browser, "web-keys").await;
    browser.click(r#"form[action="/keys/revoke"] button"#).await;
    browser.wait_for_text(".notice", "API key laptop is revoked.").await;
}

async fn channels(browser: &Browser, dashboard: &Dashboard, signal: &FakeSignal) {
    browser.goto(&format!("{}/channels", dashboard.base)).await;
    browser.type_into(r#"input[name="token"]"#, "4242:wrong").await;
    browser.click(r#"form[action="/channels/telegram"] button"#).await;
    browser.wait_for_text(".saved", "Invalid bot token").await;
    assert!(!dashboard.dir.path().join("telegram.token").exists());
    browser.type_into(r#"input[name="token"]"#, TOKEN).await;
    browser
        .type_into(r#"form[action="/channels/telegram"] input[name="owner"]"#, "99")
        .await;
    browser.click(r#"form[action="/channels/telegram"] button"#).await;
    browser.wait_for_text(".saved", "answers").await;
    shots(browser, "web-channels-telegram").await;

    browser.click(r#"form[action="/channels/signal"] button"#).await;
    browser.wait_for("figure.qr svg").await;
    shots_at(browser, "web-channels-signal-qr", "section.signal").await;
    signal.release_held();
    // The page follows the link by itself (or "Check again" would).
    browser.wait_for_text("section.signal", "Linked:").await;
    assert!(browser.text("section.signal").await.contains(LINKED_NUMBER));
    shots_at(browser, "web-channels-linked", "section.signal").await;

    // A homeserver that does not answer: said on the page, nothing written.
    let matrix = r#"form[action="/channels/matrix"]"#;
    browser
        .type_into(&format!(r#"{matrix} input[name="homeserver"]"#), "http://127.0.0.1:9")
        .await;
    browser
        .type_into(&format!(r#"{matrix} input[name="user"]"#), "@assistant:localhost")
        .await;
    browser
        .type_into(&format!(r#"{matrix} input[name="password"]"#), "not-kept-anywhere")
        .await;
    browser
        .type_into(&format!(r#"{matrix} input[name="owner"]"#), "@ada:localhost")
        .await;
    browser.click(&format!("{matrix} button")).await;
    browser.wait_for_text(".saved", "did not log").await;
    assert!(!browser.text("main").await.contains("not-kept-anywhere"));
    assert!(!dashboard.dir.path().join("matrix.token").exists());
    shots_at(browser, "web-channels-matrix", "section.matrix").await;
}

/// Sets a text area's value as typing it would (a config file is long to
/// type key by key).
async fn set_value(browser: &Browser, css: &str, value: &str) {
    browser
        .driver()
        .execute(
            "document.querySelector(arguments[0]).value = arguments[1];",
            vec![json!(css), json!(value)],
        )
        .await
        .unwrap();
}

/// Screenshots of the page at a phone's size and a laptop's (its
/// viewport), the window left at the laptop's.
async fn shots(browser: &Browser, name: &str) {
    shots_at(browser, name, "h1").await;
}

/// [`shots`], scrolled to the element `css` selects.
async fn shots_at(browser: &Browser, name: &str, css: &str) {
    for (suffix, width, height) in [("390", 390, 844), ("1280", 1280, 800)] {
        let driver = browser.driver();
        driver.set_window_rect(0, 0, width, height).await.unwrap();
        // The window's outer size holds the browser's own frame: make the
        // page's viewport the size asked for.
        let inner: Vec<u32> = driver
            .execute("return [window.innerWidth, window.innerHeight];", vec![])
            .await
            .unwrap()
            .convert()
            .unwrap();
        let (outer_w, outer_h) = (
            width + (width - inner[0].min(width)),
            height + (height - inner[1].min(height)),
        );
        driver.set_window_rect(0, 0, outer_w, outer_h).await.unwrap();
        driver
            .execute(
                "document.querySelector(arguments[0]).scrollIntoView();",
                vec![json!(css)],
            )
            .await
            .unwrap();
        // Nothing pushes the page sideways, in whatever state it is shown.
        let (scroll, client): (u32, u32) = driver
            .execute(
                "return [document.documentElement.scrollWidth, document.documentElement.clientWidth];",
                vec![],
            )
            .await
            .unwrap()
            .convert()
            .unwrap();
        assert!(
            scroll <= client,
            "{name} at {width} px scrolls sideways: {scroll} > {client}"
        );
        browser.screenshot(&format!("{name}-{suffix}")).await;
    }
}
