//! The Conversations, Usage and Configuration pages in a real headless
//! Chromium: signed in with a link, each page opened as a person would
//! (the conversation by its link, the search by its box, Reload by its
//! button), each left as a screenshot in `target/screenshots/`.

use crate::support::browser::Browser;
use crate::support::web_pages::{ME, start};

#[tokio::test]
async fn each_page_opens_in_a_browser_and_is_screenshot() {
    let Some(browser) = Browser::start("web_pages_browser").await else {
        return;
    };
    let pages = start().await;
    browser.goto(&pages.link).await;
    browser.wait_for_text("h1", "Overview").await;

    browser.goto(&format!("{}/conversations", pages.base)).await;
    browser.type_into("#q", "zebra").await;
    browser.click(".search button").await;
    browser.wait_for_text("main", "Found for").await;
    browser.screenshot("web-conversations").await;

    browser.click(&format!(r#"a[href="{ME}"]"#)).await;
    browser.wait_for_text("h1", "Conversation socket:me").await;
    browser.click("details.tool summary").await;
    browser.wait_for_text("details.tool", "Result").await;
    browser.screenshot("web-conversation").await;

    browser.goto(&format!("{}/usage", pages.base)).await;
    browser.wait_for("svg.chart").await;
    browser.screenshot("web-usage").await;

    browser.goto(&format!("{}/config", pages.base)).await;
    browser.wait_for_text("pre.config", "[web]").await;
    browser.click(r#"form[action="/config/reload"] button"#).await;
    browser.wait_for_text(".result", "Reload").await;
    browser.screenshot("web-config").await;
}
