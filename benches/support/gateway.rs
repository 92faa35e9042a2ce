//! What the gateway benchmarks share: a core that acknowledges every message
//! at once, and the two measurements — messages taken in, replies sent.

use std::sync::Arc;
use std::time::{Duration, Instant};

use passepartout_gateway::{
    Ack, ConversationKey, Deliver, Intake, IntakeEvent, Listen, Outbound, OutboundBody, ReplyKind,
};
use tokio_util::sync::CancellationToken;

/// A count from the environment, or `default`.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// How long the gateway took to hand in `messages` already waiting for it,
/// and to send `replies` to `conversation` one after another.
pub struct Measured {
    pub took_in: Duration,
    pub sent_in: Duration,
}

pub async fn measure<G>(gateway: Arc<G>, messages: usize, conversation: ConversationKey, replies: usize) -> Measured
where
    G: Listen + Deliver + 'static,
{
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

    let sending = Instant::now();
    for n in 0..replies {
        let outbound = Outbound {
            drafts: Vec::new(),
            turn_end: None,
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
    Measured { took_in, sent_in }
}

/// The report's common part: cores, replies/s, mean reply time.
pub fn report(bench: &str, taken: (&str, usize), measured: &Measured, replies: usize) -> serde_json::Value {
    let (what, count) = taken;
    serde_json::json!({
        "bench": bench,
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        what: count,
        format!("{what}_per_s"): (count as f64 / measured.took_in.as_secs_f64()).round(),
        "replies": replies,
        "replies_per_s": (replies as f64 / measured.sent_in.as_secs_f64()).round(),
        "reply_mean_ms": measured.sent_in.as_secs_f64() * 1000.0 / replies as f64,
    })
}
