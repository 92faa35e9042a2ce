//! No Markdown the model writes makes a reply fail to send: property tests
//! of the real Telegram and Signal gateways against the fakes, which check
//! entities and text styles as Telegram and signal-cli do.

use crate::support;

use std::time::Duration;

use passepartout_gateway::markup::{Flavor, render};
use passepartout_gateway::{Deliver, GatewayError};
use passepartout_gateway_testing::build;
use passepartout_gateway_testing::json::config;
use passepartout_gateway_testing::markdown::long_markdown;
use passepartout_signal::{SignalGateway, SignalSettings};
use passepartout_telegram::{MemoryOffsetStore, TelegramGateway, TelegramSettings};
use proptest::prelude::*;
use support::fake_signal::{ACCOUNT, FakeSignal};
use support::fake_telegram::FakeTelegram;

const TOKEN: &str = "123456:markup-token";
const CHAT: i64 = 77;
const ADA: &str = "a1a1a1a1-1111-4111-8111-111111111111";
/// Each case sends over HTTP and JSON-RPC: fewer cases than the pure tests.
const CASES: u32 = 64;

/// Sent, or refused only because nothing readable was left to send.
fn assert_sent(outcome: Result<passepartout_gateway::Delivered, GatewayError>, blank: bool, markdown: &str) {
    match outcome {
        Ok(delivered) => assert!(!blank && !delivered.message_ids.is_empty(), "{markdown:?}"),
        Err(GatewayError::Rejected { reason }) if blank && reason.contains("empty") => {}
        Err(error) => panic!("{markdown:?} was not sent: {error:?}"),
    }
}

#[test]
fn no_markdown_makes_a_send_fail() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (telegram, signal, fake_telegram, fake_signal) = runtime.block_on(async {
        let fake_telegram = FakeTelegram::start(TOKEN).await;
        // What is sent, not how fast: Telegram's pacing would space the
        // cases a second apart.
        let mut settings = TelegramSettings::new(TOKEN).with_api_url(fake_telegram.base_url());
        settings.pacing = passepartout_telegram::pacing::Limits::unpaced();
        let telegram = TelegramGateway::new(settings, std::sync::Arc::new(MemoryOffsetStore::default()));
        let fake_signal = FakeSignal::start().await;
        let settings = SignalSettings {
            call_timeout: Duration::from_secs(5),
            ..SignalSettings::new(fake_signal.unix_endpoint().parse().unwrap(), ACCOUNT)
        };
        (telegram, SignalGateway::new(settings), fake_telegram, fake_signal)
    });
    let telegram_chat = build::conversation("telegram", &CHAT.to_string());
    let signal_chat = build::conversation("signal", ADA);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases: CASES,
        ..config()
    });
    runner
        .run(&long_markdown(), |markdown| {
            let blank = render(&markdown, Flavor::RICH).text.is_empty();
            let sent = runtime.block_on(telegram.deliver(&build::outbound(
                telegram_chat.clone(),
                None,
                build::answer(&markdown),
            )));
            assert_sent(sent, blank, &markdown);
            let blank = render(&markdown, Flavor::SPELLED).text.is_empty();
            let sent =
                runtime.block_on(signal.deliver(&build::outbound(signal_chat.clone(), None, build::answer(&markdown))));
            assert_sent(sent, blank, &markdown);
            Ok(())
        })
        .unwrap();
    assert!(fake_telegram.sent().len() >= CASES as usize / 2, "the cases were sent");
    assert!(fake_signal.sent().len() >= CASES as usize / 2, "the cases were sent");
}
