//! Telegram gateway throughput against the fake Bot API on loopback: how
//! many updates a second the gateway takes in (long poll → normalize → hand
//! to the core → offset saved), with a core that acknowledges at once, and
//! how many replies a second it sends. Telegram itself lets a bot send about
//! 30 messages a second, so the gateway must be far from the bottleneck.
//!
//! `cargo bench --bench telegram` prints one JSON line. `PP_BENCH_UPDATES`
//! (default 5000) and `PP_BENCH_REPLIES` (default 2000) set the counts.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[path = "../tests/support/fake_telegram/mod.rs"]
mod fake_telegram;
#[path = "support/gateway.rs"]
mod gateway_bench;

use std::sync::Arc;

use passepartout_gateway::{ChatId, ConversationKey, GatewayId};
use passepartout_telegram::{MemoryOffsetStore, TelegramGateway, TelegramSettings};

const TOKEN: &str = "123456:bench-token";
const USER: i64 = 42;

fn main() {
    let updates = gateway_bench::env_number("PP_BENCH_UPDATES", 5_000).max(1);
    let replies = gateway_bench::env_number("PP_BENCH_REPLIES", 2_000).max(1);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let telegram = fake_telegram::FakeTelegram::start(TOKEN).await;
        for n in 0..updates {
            telegram.push_update(telegram.text_message(USER, USER, &format!("message {n}")));
        }
        let mut settings = TelegramSettings::new(TOKEN);
        settings.api_url = telegram.base_url();
        settings.poll_timeout_s = 1;
        // The gateway's own speed, not Telegram's limits.
        settings.pacing = passepartout_telegram::pacing::Limits::unpaced();
        let gateway = TelegramGateway::new(settings, Arc::new(MemoryOffsetStore::default()));

        let conversation = ConversationKey::new(
            GatewayId::new("telegram").unwrap(),
            ChatId::new(USER.to_string()).unwrap(),
        );
        let measured = gateway_bench::measure(gateway, updates, conversation, replies).await;
        let report = gateway_bench::report("telegram", ("updates", updates), &measured, replies);
        println!("{report}");
    });
}
