//! Signal gateway throughput against the fake signal-cli daemon on a Unix
//! socket: how many messages a second the gateway takes in (notification →
//! normalize → hand to the core, one at a time as it must), with a core that
//! acknowledges at once, and how many replies a second it sends.
//!
//! `cargo bench --bench signal` prints one JSON line. `PP_BENCH_MESSAGES`
//! (default 5000) and `PP_BENCH_REPLIES` (default 2000) set the counts.

#[path = "../tests/support/fake_signal.rs"]
mod fake_signal;

use std::time::{Duration, Instant};

use passepartout_gateway::{
    Ack, ChatId, ConversationKey, Deliver, GatewayId, Intake, IntakeEvent, Listen, Outbound, OutboundBody, ReplyKind,
};
use passepartout_signal::{SignalGateway, SignalSettings};
use tokio_util::sync::CancellationToken;

const SENDER: &str = "0a0a0a0a-0000-4000-8000-00000000000a";

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() {
    let messages = env_number("PP_BENCH_MESSAGES", 5_000).max(1);
    let replies = env_number("PP_BENCH_REPLIES", 2_000).max(1);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let signal = fake_signal::FakeSignal::start().await;
        for n in 0..messages {
            let timestamp = 1_700_000_000_000 + n as u64;
            signal.push_envelope(fake_signal::text_envelope(SENDER, timestamp, &format!("message {n}")));
        }
        let settings = SignalSettings::new(
            signal.unix_endpoint().parse().expect("the fake's endpoint"),
            fake_signal::ACCOUNT,
        );
        let gateway = SignalGateway::new(settings);

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
                    if seen == messages
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
        let took_in = finished.await.expect("every message handed in") - started;

        let conversation = ConversationKey::new(GatewayId::new("signal").unwrap(), ChatId::new(SENDER).unwrap());
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
            "bench": "signal",
            "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
            "messages": messages,
            "messages_per_s": (messages as f64 / took_in.as_secs_f64()).round(),
            "replies": replies,
            "replies_per_s": (replies as f64 / sent_in.as_secs_f64()).round(),
            "reply_mean_ms": sent_in.as_secs_f64() * 1000.0 / replies as f64,
        });
        println!("{report}");
    });
}
