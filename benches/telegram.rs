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

use std::sync::Arc;
use std::time::{Duration, Instant};

use passepartout_gateway::{
    Ack, ChatId, ConversationKey, Deliver, GatewayId, Intake, IntakeEvent, Listen, Outbound, OutboundBody, ReplyKind,
};
use passepartout_telegram::{MemoryOffsetStore, TelegramGateway, TelegramSettings};
use tokio_util::sync::CancellationToken;

const TOKEN: &str = "123456:bench-token";
const USER: i64 = 42;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let updates = env_number("PP_BENCH_UPDATES", 5_000).max(1);
    let replies = env_number("PP_BENCH_REPLIES", 2_000).max(1);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let telegram = fake_telegram::FakeTelegram::start(TOKEN).await;
        for n in 0..updates {
            telegram.push_update(telegram.text_message(USER, USER, &format!("message {n}")));
        }
        let mut settings = TelegramSettings::new(TOKEN);
        settings.api_url = telegram.base_url();
        settings.poll_timeout_s = 1;
        let gateway = TelegramGateway::new(settings, Arc::new(MemoryOffsetStore::default()));

        // A core that acknowledges every message at once, and counts them.
        let (intake, mut queue) = Intake::channel(1024);
        let (done, finished) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut seen = 0;
            let mut done = Some(done);
            while let Some(event) = queue.recv().await {
                if let IntakeEvent::Inbound { ack, .. } = event {
                    let _ = ack.send(Ack::Accepted);
                    seen += 1;
                    if seen == updates
                        && let Some(done) = done.take()
                    {
                        let _ = done.send(Instant::now());
                    }
                }
            }
        });
        let stop = CancellationToken::new();
        let started = Instant::now();
        let listening = {
            let gateway = gateway.clone();
            let stop = stop.clone();
            tokio::spawn(async move { gateway.listen(intake, stop).await })
        };
        let took_in = finished.await.expect("every update handed in") - started;

        let conversation = ConversationKey::new(
            GatewayId::new("telegram").unwrap(),
            ChatId::new(USER.to_string()).unwrap(),
        );
        let sending = Instant::now();
        for n in 0..replies {
            let outbound = Outbound {
                id: format!("r-{n}"),
                conversation: conversation.clone(),
                in_reply_to: None,
                body: OutboundBody::Text {
                    text: format!("reply {n}"),
                    kind: ReplyKind::Answer,
                },
            };
            gateway.deliver(&outbound).await.expect("delivered");
        }
        let sent_in = sending.elapsed();
        stop.cancel();
        let _ = tokio::time::timeout(Duration::from_secs(10), listening).await;

        let report = serde_json::json!({
            "bench": "telegram",
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "updates": updates,
            "updates_per_s": (updates as f64 / took_in.as_secs_f64()).round(),
            "replies": replies,
            "replies_per_s": (replies as f64 / sent_in.as_secs_f64()).round(),
            "reply_mean_ms": sent_in.as_secs_f64() * 1000.0 / replies as f64,
        });
        println!("{report}");
    });
}
