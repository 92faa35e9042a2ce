//! The dashboard's look, in a real headless Chromium at a phone's size
//! (390×844) and a laptop's (1280×800), in the light and the dark theme:
//! every page the navigation links to (read from the page, so a page added
//! later is covered too), a conversation and the 404 page never scroll
//! sideways, and each is left as a screenshot,
//! `target/screenshots/look-PAGE-SIZE[-dark].png`. On the phone the
//! navigation is a menu that opens and reaches every page and Sign out,
//! its links touch-sized. Stopping the heartbeat asks first. Without the
//! browser: the 404 page keeps the navigation, and the icon is served to
//! be cached for long.

use reqwest::StatusCode;
use reqwest::header;
use serde_json::{Value, json};
use thirtyfour::prelude::*;

use crate::support::browser::Browser;
use crate::support::web_pages::{ME, Pages, start_with};

/// The sizes every page is looked at: name, width, height.
const SIZES: [(&str, u32, u32); 2] = [("390", 390, 844), ("1280", 1280, 800)];

/// The smallest a link or button in the navigation may be, in CSS pixels.
const TOUCH: f64 = 44.0;

/// A page with prices, so that Usage shows costs.
async fn priced() -> Pages {
    start_with("price_in_per_mtok = 3.0\nprice_out_per_mtok = 15.0\n").await
}

#[tokio::test]
async fn the_404_page_keeps_the_navigation_and_the_icon_is_served_for_long() {
    let pages = priced().await;
    let (status, page) = pages.get("/no/such/page").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(page.contains("<h1>Not found</h1>"), "{page}");
    for link in [r#"<a href="/">Overview</a>"#, r#"<a href="/usage">Usage</a>"#] {
        assert!(page.contains(link), "{link} missing: {page}");
    }
    assert!(page.contains(r#"action="/sign-out""#), "{page}");

    // Not signed in: the 404 still answers, without the navigation.
    let client = reqwest::Client::new();
    let anonymous = client.get(format!("{}/no/such/page", pages.base)).send().await.unwrap();
    assert_eq!(anonymous.status(), StatusCode::NOT_FOUND);
    assert!(!anonymous.text().await.unwrap().contains("<nav"));

    let icon = page
        .split(r#"<link rel="icon" href=""#)
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("every page links its icon");
    assert!(icon.starts_with("/assets/favicon.svg?v="), "{icon}");
    let response = client.get(format!("{}{icon}", pages.base)).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()[header::CONTENT_TYPE], "image/svg+xml");
    let cache = response.headers()[header::CACHE_CONTROL].to_str().unwrap().to_owned();
    assert!(cache.contains("max-age=31536000"), "{cache}");
    assert!(response.text().await.unwrap().starts_with("<svg"));
}

#[tokio::test]
async fn every_page_fits_a_phone_and_a_laptop_in_the_light_theme() {
    every_page_fits(false).await;
}

#[tokio::test]
async fn every_page_fits_a_phone_and_a_laptop_in_the_dark_theme() {
    every_page_fits(true).await;
}

/// Signed in, in a browser of its own: the browser, the pages, and the
/// paths of every page the navigation reaches, then a conversation and the
/// 404.
async fn signed_in(test: &str) -> Option<(Browser, Pages, Vec<String>)> {
    let browser = Browser::start(test).await?;
    let pages = priced().await;
    browser.goto(&pages.link).await;
    browser.wait_for_text("h1", "Overview").await;
    let mut paths = nav_paths(&browser).await;
    assert!(paths.len() >= 7, "{paths:?}");
    paths.push(ME.to_owned());
    paths.push("/no-such-page".to_owned());
    Some((browser, pages, paths))
}

/// Every page at both sizes in one theme: no sideways scroll, touch-sized
/// buttons on the phone, each left as a screenshot. A theme to a test, so
/// that the two share the browsers' places with the other tests.
async fn every_page_fits(dark: bool) {
    let test = if dark {
        "web_look_browser::dark"
    } else {
        "web_look_browser::light"
    };
    let Some((browser, pages, paths)) = signed_in(test).await else {
        return;
    };
    set_theme(&browser, dark).await;
    for (size, width, height) in SIZES {
        set_size(&browser, width, height).await;
        for path in &paths {
            browser.goto(&format!("{}{path}", pages.base)).await;
            browser.wait_for("main h1").await;
            // The 404 keeps the navigation too.
            browser.find(r#"nav a[href="/"]"#).await;
            let (scroll, inner) = widths(&browser).await;
            let name = format!("look-{}-{size}{}", page_name(path), if dark { "-dark" } else { "" });
            screenshot(&browser, &name).await;
            assert!(
                scroll <= inner,
                "{path} at {width} px scrolls sideways: {scroll} > {inner} (see {name}.png)"
            );
            if width < 600 {
                let small = small_buttons(&browser).await;
                assert!(small.is_empty(), "{path}: buttons under {TOUCH} px: {small:?}");
            }
        }
    }
}

#[tokio::test]
async fn on_a_phone_the_menu_reaches_every_page_and_stopping_a_loop_asks() {
    let Some((browser, pages, paths)) = signed_in("web_look_browser::menu").await else {
        return;
    };
    // On a phone: the menu is closed, opens, and each of its links is
    // touch-sized and leads to its page.
    set_size(&browser, 390, 844).await;
    for path in &paths[..paths.len() - 2] {
        browser.goto(&format!("{}/", pages.base)).await;
        browser.wait_for_text("h1", "Overview").await;
        let nav = browser.find("nav").await;
        assert!(!nav.is_displayed().await.unwrap(), "the menu starts closed");
        browser.click(".menu-button").await;
        let link = browser.find(&format!(r#"nav a[href="{path}"]"#)).await;
        assert!(link.is_displayed().await.unwrap(), "{path} in the open menu");
        let rect = link.rect().await.unwrap();
        assert!(rect.height >= TOUCH, "{path}'s link is {} px high", rect.height);
        assert!(
            rect.x >= 0.0 && rect.x + rect.width <= 390.0,
            "{path}'s link fits: {rect:?}"
        );
        if path == "/" {
            screenshot(&browser, "look-menu-open-390").await;
        }
        link.click().await.unwrap();
        browser
            .wait_until(&format!("{path} to open"), || async {
                let url = browser.driver().current_url().await.ok()?;
                // `/chat` opens the chat used last, at `/chat/{id}`.
                let opened = url.path() == path.as_str() || url.path().starts_with(&format!("{path}/"));
                opened.then_some(())
            })
            .await;
        browser
            .wait_for(&format!(r#"nav a[href="{path}"][aria-current="page"]"#))
            .await;
    }

    // Stopping the heartbeat says what it does and asks; "Keep it running"
    // leaves it running.
    browser.goto(&format!("{}/loops", pages.base)).await;
    browser.wait_for_text("#loops", "heartbeat").await;
    browser
        .click(r#"form[action="/loops/stop"]:has(input[value="heartbeat"]) button"#)
        .await;
    browser.wait_for_text("h1", "Stop loop heartbeat?").await;
    let asked = browser.text(".confirm").await;
    assert!(asked.contains("periodic backups"), "{asked}");
    let (scroll, inner) = widths(&browser).await;
    assert!(scroll <= inner, "the confirmation scrolls sideways");
    screenshot(&browser, "look-loops-confirm-stop-390").await;
    browser.click(".confirm a.button").await;
    browser.wait_for_text("h1", "Loops & tools").await;
    let loops = browser.text("#loops").await;
    assert!(!loops.contains("stopped"), "still running: {loops}");

    // Sign out, from the phone's menu.
    browser.click(".menu-button").await;
    let sign_out = browser.find("nav .sign-out button").await;
    assert!(sign_out.rect().await.unwrap().height >= TOUCH);
    sign_out.click().await.unwrap();
    browser.wait_for_text("h1", "Sign in").await;
    assert!(
        browser.driver().find(By::Css("nav")).await.is_err(),
        "signed out: no menu"
    );
    screenshot(&browser, "look-signed-out-390").await;
    set_theme(&browser, true).await;
    set_size(&browser, 1280, 800).await;
    screenshot(&browser, "look-signed-out-1280-dark").await;
}

/// The buttons shown on the page that are less than touch-sized high: their text.
async fn small_buttons(browser: &Browser) -> Vec<String> {
    let found = browser
        .driver()
        .execute(
            format!(
                "return [...document.querySelectorAll('button, .button, select, .menu-button')]\
                 .filter(b => b.getClientRects().length > 0 && b.getBoundingClientRect().height < {TOUCH})\
                 .map(b => b.textContent.trim());"
            ),
            Vec::new(),
        )
        .await
        .unwrap();
    found.convert().unwrap()
}

/// The paths the navigation links to, in its order.
async fn nav_paths(browser: &Browser) -> Vec<String> {
    let mut paths = Vec::new();
    for link in browser.driver().find_all(By::Css("nav a")).await.unwrap() {
        let href = link.attr("href").await.unwrap().expect("a link's address");
        assert!(href.starts_with('/'), "a page of the dashboard's own: {href}");
        paths.push(href);
    }
    paths
}

/// The page's name in a screenshot's: `overview`, `loops`, `conversation`, `not-found`.
fn page_name(path: &str) -> String {
    match path {
        "/" => "overview".to_owned(),
        ME => "conversation".to_owned(),
        "/no-such-page" => "not-found".to_owned(),
        path => path.trim_start_matches('/').replace('/', "-"),
    }
}

/// The document's width and the window's, in CSS pixels.
async fn widths(browser: &Browser) -> (u64, u64) {
    let measured = browser
        .driver()
        .execute(
            "return [document.documentElement.scrollWidth, window.innerWidth];",
            Vec::new(),
        )
        .await
        .unwrap();
    let pair: Vec<u64> = measured.convert().unwrap();
    (pair[0], pair[1])
}

/// Emulates a screen `width` × `height` (a phone's below 600 px).
async fn set_size(browser: &Browser, width: u32, height: u32) {
    cdp(
        browser,
        "Emulation.setDeviceMetricsOverride",
        json!({"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600}),
    )
    .await;
}

/// Emulates the system's dark theme, or its light one.
async fn set_theme(browser: &Browser, dark: bool) {
    let scheme = if dark { "dark" } else { "light" };
    cdp(
        browser,
        "Emulation.setEmulatedMedia",
        json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
    )
    .await;
}

async fn cdp(browser: &Browser, method: &str, params: Value) -> Value {
    browser
        .driver()
        .cdp()
        .send_raw(method, params)
        .await
        .unwrap_or_else(|error| panic!("{method}: {error}"))
}

/// The whole page, not only what the window shows, as
/// `target/screenshots/NAME.png`.
async fn screenshot(browser: &Browser, name: &str) {
    use base64::Engine;
    let metrics = cdp(browser, "Page.getLayoutMetrics", json!({})).await;
    let (width, height) = (
        metrics["cssContentSize"]["width"].as_f64().unwrap_or(1280.0),
        metrics["cssContentSize"]["height"].as_f64().unwrap_or(800.0),
    );
    let shot = cdp(
        browser,
        "Page.captureScreenshot",
        json!({
            "format": "png",
            "captureBeyondViewport": true,
            "clip": {"x": 0, "y": 0, "width": width, "height": height.min(6000.0), "scale": 1},
        }),
    )
    .await;
    let png = base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().expect("a screenshot"))
        .expect("base64");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join(format!("{name}.png")), png).unwrap();
}
