//! The dashboard's times are the daemon's: a daemon whose clock reads 30
//! days ahead of the wall clock shows its loops' next runs as the core
//! counts them ("in 5 min"), not counted by the page against the wall
//! clock ("in 30 d …").

use std::sync::atomic::AtomicU64;

use passepartout::Extensions;
use passepartout::foundation::clock::Clock;
use passepartout_admin::WebRequest;
use reqwest::header;

use crate::support;
use support::fake_llm::FakeLlm;
use support::harness::TestDaemon;

const DAYS_AHEAD: u64 = 30;

#[tokio::test]
async fn loop_times_are_counted_by_the_daemons_clock() {
    let llm = FakeLlm::start().await;
    let ahead: &'static AtomicU64 = Box::leak(Box::new(AtomicU64::new(DAYS_AHEAD * 86_400_000)));
    let extensions = Extensions {
        clock: Some(Clock::shifted(ahead)),
        ..Extensions::default()
    };
    let daemon = TestDaemon::start_extended(
        &llm,
        |config| {
            config.web.enabled = true;
            config.web.listen = "127.0.0.1:0".parse().unwrap();
        },
        extensions,
    )
    .await;
    let mut client = daemon.client("me").await;
    let link = client
        .ask::<passepartout_socket::WebAnswer>(passepartout_socket::AdminRequest::Web {
            request: WebRequest::Link,
        })
        .await
        .unwrap()
        .link
        .expect("a sign-in link");
    let base = link.split("/sign-in/").next().unwrap().to_owned();
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let response = http.get(&link).send().await.unwrap();
    let cookie = response.headers()[header::SET_COOKIE].to_str().unwrap();
    let cookie = cookie.split(';').next().unwrap().to_owned();
    let page = http
        .get(format!("{base}/loops"))
        .header(header::COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let loops = &page[page.find("<table").expect("a table of loops")..];
    assert!(
        loops.contains(r#"<td data-label="Next run">in "#),
        "a next run ahead: {loops}"
    );
    for wall in [format!("in {} d", DAYS_AHEAD - 1), format!("in {DAYS_AHEAD} d")] {
        assert!(!loops.contains(&wall), "counted against the wall clock: {loops}");
    }
    drop(llm);
}
