//! Starting and idling: the real binary's time from start to ready on an
//! empty store and on one holding 100,000 messages (each journaled and
//! answered, its turn in the history), and its resident memory at rest with
//! the socket alone and with all three gateways on (Telegram against the
//! fake Bot API, Signal against the fake signal-cli). Each figure is the
//! median of `STARTUP_RUNS` starts (5); the store's size is
//! `STARTUP_MESSAGES`.
//!
//! `cargo bench --bench startup` prints one JSON line.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[path = "../tests/support/fake_signal.rs"]
mod fake_signal;
#[path = "../tests/support/fake_telegram/mod.rs"]
mod fake_telegram;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use passepartout::config::Config;
use passepartout::engine::pipeline::TurnRecord;
use passepartout::model::llm::ChatMessage;
use passepartout::store::{Store, TurnCommit};
use passepartout_gateway::{ChatId, ConversationKey, GatewayId, Inbound, InboundBody, MessageId, Sender, UserId};

const TOKEN: &str = "123456:startup-bench";
/// Messages journaled (and answered) in one batch while filling the store.
const BATCH: usize = 1000;
/// Conversations the messages are spread over.
const CONVERSATIONS: usize = 100;
/// How long the daemon rests after it is ready before its memory is read.
const REST: Duration = Duration::from_secs(2);

/// Which gateways a start runs.
#[derive(Clone, Copy)]
enum Gateways {
    SocketOnly,
    All,
}

struct Fakes {
    llm: fake_llm::FakeLlm,
    telegram: fake_telegram::FakeTelegram,
    signal: fake_signal::FakeSignal,
}

/// Writes the config for a daemon in `dir` with `gateways` on.
fn write_config(dir: &Path, fakes: &Fakes, gateways: Gateways) -> PathBuf {
    let token = dir.join("token");
    std::fs::write(&token, TOKEN).expect("token file");
    let mut text = format!(
        "data_dir = {data:?}\n[store]\nbackup_every_s = 0\n[pipeline]\nshutdown_grace_s = 5\n\
         [[llm.providers]]\nname = \"loopback\"\nbase_url = {llm:?}\nmodel = \"instant\"\n",
        data = dir.join("data").display().to_string(),
        llm = fakes.llm.base_url(),
    );
    if let Gateways::All = gateways {
        text.push_str(&format!(
            "[telegram]\nenabled = true\ntoken_file = {token:?}\napi_url = {api:?}\nallowed_users = [42]\npoll_timeout_s = 25\n\
             [signal]\nenabled = true\naccount = \"+15550000001\"\nendpoint = {signal:?}\n\
             allowed_senders = [\"+15550000002\"]\n",
            token = token.display().to_string(),
            api = fakes.telegram.base_url(),
            signal = fakes.signal.tcp_endpoint(),
        ));
    }
    let path = dir.join(match gateways {
        Gateways::SocketOnly => "socket.toml",
        Gateways::All => "all.toml",
    });
    std::fs::write(&path, text).expect("config file");
    path
}

/// Journals `messages` messages and commits an answered turn for each,
/// straight into the store the daemon will open.
async fn fill(config: &Config, messages: usize) -> Duration {
    let started = Instant::now();
    let store = Store::open(&config.store_dir(), &config.store).expect("store opens");
    let gateway = GatewayId::new("socket").unwrap();
    let now_ms = 1_700_000_000_000;
    for first in (0..messages).step_by(BATCH) {
        let batch: Vec<Inbound> = (first..(first + BATCH).min(messages))
            .map(|n| Inbound {
                conversation: ConversationKey::new(
                    gateway.clone(),
                    ChatId::new(format!("c{}", n % CONVERSATIONS)).unwrap(),
                ),
                sender: Sender::new(UserId::new(format!("u{}", n % CONVERSATIONS)).unwrap()),
                message_id: MessageId::new(format!("m{n}")).unwrap(),
                reply_to: None,
                body: InboundBody::Text {
                    text: format!("message {n}: what is on the calendar for tomorrow afternoon?"),
                },
                received_at_ms: now_ms,
                overheard: false,
                by_reply_only: false,
                client: None,
            })
            .collect();
        let accepted = store.journal_accept_batch(&batch, now_ms).expect("journaled");
        for (inbound, accepted) in batch.iter().zip(accepted) {
            let passepartout::store::Accepted::New(seq) = accepted else {
                panic!("a duplicate in the fill");
            };
            let InboundBody::Text { text } = &inbound.body else {
                unreachable!()
            };
            let record = TurnRecord {
                messages: vec![
                    ChatMessage::user(text.clone()),
                    ChatMessage::assistant("Two meetings: design review at 2, and a call at 4."),
                ],
                at_ms: Some(now_ms),
                by: Some(inbound.sender.id.clone()),
            };
            let commit = TurnCommit {
                journal_seq: Some(seq),
                history_record: Some(serde_json::to_vec(&record).unwrap()),
                ..TurnCommit::default()
            };
            store.commit_turn(&inbound.conversation, commit).expect("committed");
        }
    }
    store.durable().await.expect("flushed");
    drop(store);
    started.elapsed()
}

/// One start of the real binary on `config`: the time until it says it is
/// ready, and its resident memory after resting.
fn start_once(config: &Path) -> (Duration, u64) {
    let started = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_passepartout"))
        .args(["--config", config.to_str().unwrap(), "run"])
        .env("RUST_LOG", "info")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the daemon starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.contains("passepartout ready"));
    assert!(ready, "the daemon did not get ready");
    let to_ready = started.elapsed();
    // Drained while it rests, so it never blocks on a full pipe.
    let drain = std::thread::spawn(move || lines.map_while(Result::ok).count());
    std::thread::sleep(REST);
    let rss = rss_kib(child.id());
    let pid = rustix::process::Pid::from_raw(child.id() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).expect("SIGTERM");
    let status = child.wait().expect("waited");
    assert!(status.success(), "the daemon stopped badly: {status:?}");
    let _ = drain.join();
    (to_ready, rss)
}

fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The median time to ready (ms) and median idle memory (MiB) of `runs` starts.
fn starts(config: &Path, runs: usize) -> (f64, f64) {
    let mut times = Vec::with_capacity(runs);
    let mut memory = Vec::with_capacity(runs);
    for _ in 0..runs {
        let (to_ready, rss) = start_once(config);
        times.push(to_ready.as_secs_f64() * 1000.0);
        memory.push(rss as f64 / 1024.0);
    }
    (median(&mut times), median(&mut memory))
}

/// A count from the environment, or `default`.
fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let runs = env_number("STARTUP_RUNS", 5);
    let messages = env_number("STARTUP_MESSAGES", 100_000);
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let fakes = runtime.block_on(async {
        Fakes {
            llm: fake_llm::FakeLlm::start().await,
            telegram: fake_telegram::FakeTelegram::start(TOKEN).await,
            signal: fake_signal::FakeSignal::start().await,
        }
    });
    fakes.llm.set_recording(false);
    let socket_only = write_config(dir.path(), &fakes, Gateways::SocketOnly);
    let all = write_config(dir.path(), &fakes, Gateways::All);
    let config = passepartout::config::load(Some(&socket_only), Some(Default::default())).expect("config loads");

    let (empty_ready_ms, empty_socket_mib) = starts(&socket_only, runs);
    let (_, empty_all_mib) = starts(&all, runs);
    let filled_in = runtime.block_on(fill(&config, messages));
    let (full_ready_ms, full_socket_mib) = starts(&socket_only, runs);
    let (full_all_ready_ms, full_all_mib) = starts(&all, runs);
    let store_mib = dir_size(&config.store_dir()) as f64 / (1024.0 * 1024.0);

    let report = serde_json::json!({
        "bench": "startup",
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "runs": runs,
        "messages": messages,
        "fill_s": filled_in.as_secs_f64(),
        "store_mib": store_mib,
        "ready_ms_empty_store": empty_ready_ms,
        "ready_ms_filled_store": full_ready_ms,
        "ready_ms_filled_store_all_gateways": full_all_ready_ms,
        "idle_rss_mib_socket_only_empty_store": empty_socket_mib,
        "idle_rss_mib_all_gateways_empty_store": empty_all_mib,
        "idle_rss_mib_socket_only_filled_store": full_socket_mib,
        "idle_rss_mib_all_gateways_filled_store": full_all_mib,
    });
    println!("{report}");
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| match entry.metadata() {
            Ok(meta) if meta.is_dir() => dir_size(&entry.path()),
            Ok(meta) => meta.len(),
            Err(_) => 0,
        })
        .sum()
}
