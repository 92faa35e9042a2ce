//! What streaming buys a person waiting on a slow model: the time from
//! asking to the first piece of text, against the time to the whole reply,
//! with a loopback model that streams 50 words a second (a 50-word reply),
//! through the OpenAI-compatible client's `stream`, and the same reply
//! asked for whole with `complete` from a model as slow, for comparison.
//!
//! Then what a person on Telegram sees, through the whole daemon against a
//! fake Bot API: the time from their message to the bot's first message (the
//! draft) and to the reply's final text in it, with a 100-word reply written
//! at 50 words a second.
//!
//! `cargo bench --bench stream` prints two JSON lines. `PP_BENCH_STREAM`
//! (default 5) sets the replies of each kind; each takes a few seconds.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[path = "../tests/support/fake_telegram/mod.rs"]
mod fake_telegram;
#[path = "support/telegram_daemon.rs"]
mod telegram_daemon;

use std::sync::OnceLock;
use std::time::{Duration, Instant};

use fake_llm::{FakeLlm, Script, Streamed};
use fake_telegram::FakeTelegram;
use passepartout::model::llm::{ChatMessage, ChatModel, ChatRequest, Endpoint, OpenAiClient, TextSink};

/// Fifty words, one piece each.
const WORDS: usize = 50;
/// One word every 20 ms: 50 a second.
const GAP: Duration = Duration::from_millis(20);

/// Notes when the first piece of text came.
#[derive(Default)]
struct FirstPiece(OnceLock<Instant>);

impl TextSink for FirstPiece {
    fn text(&self, _delta: &str) {
        let _ = self.0.set(Instant::now());
    }
}

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

fn main() {
    let count = env_number("PP_BENCH_STREAM", 5).max(1);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let fake = FakeLlm::start().await;
        fake.set_recording(false);
        let reply: String = (0..WORDS).map(|index| format!("word{index} ")).collect();
        // Asked whole, the same model takes as long to write it all.
        fake.set_responder(move |request| {
            if request["stream"] == true {
                Script::Stream(Streamed::words(&reply).spaced(GAP))
            } else {
                Script::Delay(GAP * WORDS as u32, Box::new(Script::Reply(reply.clone())))
            }
        });
        let client = OpenAiClient::new(Endpoint {
            name: "loopback".to_owned(),
            base_url: fake.base_url(),
            model: "slow".to_owned(),
            api_key: None,
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(60),
            vision: false,
            proxy: None,
        })
        .expect("client");
        let request = ChatRequest {
            messages: vec![ChatMessage::user("tell me a long story")],
            tools: Vec::new().into(),
            max_tokens: None,
        };

        let (mut first, mut full) = (Vec::new(), Vec::new());
        for _ in 0..count {
            let sink = FirstPiece::default();
            let started = Instant::now();
            client.stream(&request, &sink).await.expect("streamed reply");
            full.push(started.elapsed());
            first.push(*sink.0.get().expect("a first piece") - started);
        }
        let mut whole = Vec::new();
        for _ in 0..count {
            let started = Instant::now();
            client.complete(&request).await.expect("whole reply");
            whole.push(started.elapsed());
        }
        println!(
            "{{\"bench\":\"stream\",\"replies\":{count},\"words\":{WORDS},\"words_per_s\":50,\
             \"first_text_ms_p50\":{:.1},\"streamed_full_ms_p50\":{:.1},\"whole_ms_p50\":{:.1}}}",
            median_ms(first),
            median_ms(full),
            median_ms(whole)
        );
        telegram(count).await;
    });
}

/// The Telegram half: first visible text against the whole reply.
async fn telegram(count: usize) {
    const TOKEN: &str = "123456:bench-token";
    const PERSON: i64 = 42;
    const TELEGRAM_WORDS: usize = 100;
    let fake = FakeLlm::start().await;
    fake.set_recording(false);
    let reply: String = (0..TELEGRAM_WORDS).map(|index| format!("word{index} ")).collect();
    let answer = reply.clone();
    fake.set_responder(move |_| Script::Stream(Streamed::words(&answer).spaced(GAP)));
    let telegram = FakeTelegram::start(TOKEN).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let config =
        telegram_daemon::telegram_config(dir.path(), "slow", fake.base_url(), TOKEN, telegram.base_url(), PERSON);
    let daemon = passepartout::Daemon::start(config).await.expect("daemon");
    let finished = reply.trim_end().to_owned();
    let (mut first, mut full) = (Vec::new(), Vec::new());
    for _ in 0..count {
        let (sent_before, calls_before) = (telegram.sent().len(), telegram.calls("sendMessage").len());
        let started = Instant::now();
        telegram.push_update(telegram.text_message(PERSON, PERSON, "tell me a long story"));
        // Visible once Telegram has it.
        telegram
            .wait_for_calls("sendMessage", calls_before + 1, Duration::from_secs(30))
            .await;
        first.push(started.elapsed());
        let draft = loop {
            if let Some(sent) = telegram.sent().get(sent_before) {
                break sent.message_id;
            }
            tokio::task::yield_now().await;
        };
        loop {
            let shown = telegram.bot_messages(PERSON);
            if shown.iter().any(|(id, text, _)| *id == draft && *text == finished) {
                full.push(started.elapsed());
                break;
            }
            let edits = telegram.calls("editMessageText").len();
            let _ = tokio::time::timeout(
                Duration::from_millis(100),
                telegram.wait_for_calls("editMessageText", edits + 1, Duration::from_secs(30)),
            )
            .await;
        }
    }
    daemon.shutdown().await.expect("shutdown");
    println!(
        "{{\"bench\":\"stream_telegram\",\"replies\":{count},\"words\":{TELEGRAM_WORDS},\"words_per_s\":50,\
         \"first_visible_ms_p50\":{:.1},\"full_reply_ms_p50\":{:.1}}}",
        median_ms(first),
        median_ms(full)
    );
}
