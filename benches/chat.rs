//! What `chat`'s rendering costs a person watching a reply stream in,
//! beside `send --stream`, both on a pseudo-terminal against a running
//! daemon and a loopback model:
//!
//! - the first-text latency: from the message sent (Enter in `chat`; the
//!   command started, for `send --stream`, so its process start counts)
//!   to the reply's first word on the terminal;
//! - the added cost per streamed token: the time from the first word of a
//!   reply of `TOKENS` words written with no gap to its last, less the
//!   same through `send --stream`, divided by the words.
//!
//! `cargo bench --bench chat` prints one JSON line with the medians and
//! the machine's core count. `PP_BENCH_CHAT` (default 5) sets the replies
//! of each kind.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[allow(dead_code)] // the bench starts a daemon, no more
#[path = "../tests/support/process.rs"]
mod process;
#[path = "../tests/support/pty.rs"]
mod pty;

/// What `process` takes from the test harness: its failure bound.
mod harness {
    pub const WAIT: std::time::Duration = super::WAIT;
}

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use fake_llm::{FakeLlm, Script, Streamed};
use process::{Running, binary, write_config};
use pty::Pty;

/// Words in a reply.
const TOKENS: usize = 300;
/// The longest any step may take; a failure bound, not a pace.
const WAIT: Duration = Duration::from_secs(60);

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median_ms(mut samples: Vec<Duration>) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1000.0
}

/// A reply of [`TOKENS`] words with Markdown in it; the last word is `end`.
fn reply() -> String {
    let words: Vec<String> = (0..TOKENS)
        .map(|n| match n % 10 {
            0 => format!("**w{n}**"),
            5 => format!("`w{n}`"),
            _ => format!("w{n}"),
        })
        .collect();
    format!("first {} end", words.join(" "))
}

fn command(config: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(binary());
    command
        .arg("--config")
        .arg(config)
        .args(args)
        .env_remove("PASSEPARTOUT_CONFIG")
        .env_remove("RUST_LOG")
        .env("TERM", "xterm");
    command
}

/// From Enter in an open `chat` to the first word and to the last.
async fn through_chat(pty: &mut Pty) -> (Duration, Duration) {
    let start = Instant::now();
    pty.type_line("go");
    pty.expect("first", WAIT).await;
    let first = start.elapsed();
    pty.expect("end", WAIT).await;
    let whole = start.elapsed();
    pty.expect("› ", WAIT).await;
    (first, whole)
}

/// From starting `send --stream` to the first word and to the last.
async fn through_send(config: &Path) -> (Duration, Duration) {
    let start = Instant::now();
    let mut pty = Pty::spawn(command(config, &["send", "--stream", "go"]));
    pty.expect("first", WAIT).await;
    let first = start.elapsed();
    pty.expect("end", WAIT).await;
    let whole = start.elapsed();
    pty.rest(WAIT).await;
    (first, whole)
}

fn main() {
    let count = env_number("PP_BENCH_CHAT", 5).max(1);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(async {
        let fake = FakeLlm::start().await;
        fake.set_recording(false);
        let text = reply();
        fake.set_responder(move |_| Script::Stream(Streamed::words(&text)));
        let dir = tempfile::tempdir().expect("temp dir");
        let config = write_config(dir.path(), &fake.base_url());
        let daemon = Running::start(&config).await;

        let mut chat = Pty::spawn(command(&config, &["chat"]));
        chat.expect("› ", WAIT).await;
        let mut chat_first = Vec::new();
        let mut chat_whole = Vec::new();
        let mut send_first = Vec::new();
        let mut send_whole = Vec::new();
        for _ in 0..count {
            let (first, whole) = through_chat(&mut chat).await;
            chat_first.push(first);
            chat_whole.push(whole - first);
            let (first, whole) = through_send(&config).await;
            send_first.push(first);
            send_whole.push(whole - first);
        }
        chat.press("\x04");
        chat.rest(WAIT).await;
        let added_us = (median_ms(chat_whole.clone()) - median_ms(send_whole.clone())) * 1000.0 / TOKENS as f64;
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
        println!(
            "{}",
            serde_json::json!({
                "bench": "chat",
                "cores": cores,
                "replies": count,
                "tokens": TOKENS,
                "chat_first_text_ms": median_ms(chat_first),
                "send_stream_first_text_ms": median_ms(send_first),
                "chat_first_to_last_ms": median_ms(chat_whole),
                "send_stream_first_to_last_ms": median_ms(send_whole),
                "chat_added_per_token_us": added_us,
            })
        );
        daemon.terminate().await;
    });
}
