//! What the approver reads is what runs, read in a real browser: the
//! disguised shell command of `approval_display` (a carriage return, an
//! escape sequence, a right-to-left override and a zero-width space) on the
//! dashboard's Approvals page.

use crate::support;

use passepartout_socket::WebRequest;
use support::approvals::{DISGUISED_SHOWN, Setup};

/// The same waiting command, read on the Approvals page in a real browser
/// (which is where a bidi override would reorder it): shown escaped, and
/// left as a screenshot in `target/screenshots/`.
#[tokio::test]
async fn a_disguised_command_reads_escaped_in_a_browser() {
    let Some(browser) = support::browser::Browser::start("approval_display").await else {
        return;
    };
    let setup = Setup::start_with(|config| {
        config.web.enabled = true;
        config.web.listen = "127.0.0.1:0".parse().unwrap();
    })
    .await;
    let mut chat = setup.chat("alice").await;
    let original = chat.send("please run the disguised one").await;
    chat.prompt(&original).await;
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
    let base = link.split("/sign-in/").next().unwrap().to_owned();
    browser.goto(&link).await;
    browser.wait_for_text("h1", "Overview").await;
    browser.goto(&format!("{base}/approvals")).await;
    browser.wait_for_text("main", DISGUISED_SHOWN).await;
    browser.screenshot("web-approvals-disguised").await;
}
