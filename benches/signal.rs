//! Signal gateway throughput against the fake signal-cli daemon on a Unix
//! socket: how many messages a second the gateway takes in (notification →
//! normalize → hand to the core, one at a time as it must), with a core that
//! acknowledges at once, and how many replies a second it sends.
//!
//! `cargo bench --bench signal` prints one JSON line. `PP_BENCH_MESSAGES`
//! (default 5000) and `PP_BENCH_REPLIES` (default 2000) set the counts.

#[path = "../tests/support/fake_signal.rs"]
mod fake_signal;
#[path = "support/gateway.rs"]
mod gateway_bench;

use passepartout_gateway::{ChatId, ConversationKey, GatewayId};
use passepartout_signal::{SignalGateway, SignalSettings};

const SENDER: &str = "0a0a0a0a-0000-4000-8000-00000000000a";

fn main() {
    let messages = gateway_bench::env_number("PP_BENCH_MESSAGES", 5_000).max(1);
    let replies = gateway_bench::env_number("PP_BENCH_REPLIES", 2_000).max(1);
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

        let conversation = ConversationKey::new(GatewayId::new("signal").unwrap(), ChatId::new(SENDER).unwrap());
        let measured = gateway_bench::measure(gateway, messages, conversation, replies).await;
        let report = gateway_bench::report("signal", ("messages", messages), &measured, replies);
        println!("{report}");
    });
}
