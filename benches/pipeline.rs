//! Whole-system benchmark: socket → intake (journal, durable) → pipeline →
//! loopback model over HTTP → outbox → socket, with N concurrent
//! conversations, each sending its next message when the previous is answered.
//!
//! `cargo bench --bench pipeline` prints one JSON line. Settings from the
//! environment: `PP_BENCH_MESSAGES` (default 20000), `PP_BENCH_CONVERSATIONS`
//! (default 32), `PP_BENCH_STREAMING` (default 1: replies streamed as
//! drafts; 0: whole completions). It samples its own resident memory when the 10,000th message
//! is answered and at the end (run 100000 messages for the growth figure),
//! starts the real binary once to read its idle resident memory, and measures
//! start-to-ready on the store the run filled.
//!
//! Then one conversation at a time, `PP_BENCH_TOOL_ROUNDS` (default 2000)
//! plain turns and as many tool rounds (model → `current_time` → model →
//! reply), to report what a tool round costs beside a plain reply.
//!
//! Last, `PP_BENCH_APPROVALS` (default 300) actions held for approval, each
//! approved by replying "yes" to its prompt: the time from sending the answer
//! to the tool starting (the answer is journaled, decided, the start is made
//! durable, then the tool runs).

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use passepartout::config::{Config, ProviderConfig};
use passepartout::model::llm::ToolSpec;
use passepartout::safety::tools::{Tool, ToolContext, ToolError};
use passepartout::{Daemon, Extensions};
use passepartout_gateway::ChatId;
use passepartout_socket::{Client, ServerFrame};

/// Answered messages at which memory is sampled, to compare with the end of
/// the run (DESIGN: growth between 10k and 100k processed messages).
const CHECKPOINT: usize = 10_000;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn config(dir: &std::path::Path, llm_url: &str) -> Config {
    let mut config = Config {
        data_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.store.backup_every_s = 0;
    // Thousands of tool calls a minute are the point here, not a runaway
    // model: with the limit on, the rounds past it would measure refusals.
    config.skills.tool_calls_per_minute = 0;
    config.llm.providers = vec![ProviderConfig {
        name: "loopback".into(),
        base_url: llm_url.to_owned(),
        model: "instant".into(),
        ..ProviderConfig::default()
    }];
    // Replies streamed to the socket as drafts, as by default; 0 measures
    // the whole completions instead.
    config.pipeline.stream = env_number("PP_BENCH_STREAMING", 1) != 0;
    config
}

/// Resident memory of process `pid` (`self` for this one), in KiB: current and peak.
fn rss_kib(pid: &str) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// Counts answered messages across conversations and notes this process's
/// resident memory when the count reaches [`Progress::checkpoint`].
struct Progress {
    answered: AtomicUsize,
    checkpoint: usize,
    rss_at_checkpoint_kib: AtomicU64,
}

impl Progress {
    fn answered_one(&self) {
        if self.answered.fetch_add(1, Ordering::Relaxed) + 1 == self.checkpoint {
            self.rss_at_checkpoint_kib.store(rss_kib("self").0, Ordering::Relaxed);
        }
    }
}

async fn conversation(
    socket: std::path::PathBuf,
    chat: String,
    prefix: &'static str,
    messages: usize,
    progress: Arc<Progress>,
) -> Vec<Duration> {
    let chat = ChatId::new(chat).unwrap();
    let mut client = Client::connect(&socket, Some(chat)).await.expect("connect");
    let mut latencies = Vec::with_capacity(messages);
    for n in 0..messages {
        let started = Instant::now();
        let (id, _) = client.send(None, &format!("{prefix} {n}"), None).await.expect("send");
        loop {
            match client.next_event().await.expect("reply") {
                ServerFrame::Reply {
                    in_reply_to: Some(answered),
                    ..
                } if answered == id => break,
                _ => {}
            }
        }
        latencies.push(started.elapsed());
        progress.answered_one();
    }
    latencies
}

/// A tool that reports when it starts; it is held for approval.
struct Mark(tokio::sync::mpsc::UnboundedSender<Instant>);

#[async_trait]
impl Tool for Mark {
    fn spec(&self) -> ToolSpec {
        ToolSpec {
            name: "mark".into(),
            description: "notes the time".into(),
            parameters: serde_json::json!({"type": "object"}),
        }
    }
    async fn call(&self, _: &ToolContext, _: serde_json::Value) -> Result<String, ToolError> {
        let _ = self.0.send(Instant::now());
        Ok("marked".into())
    }
}

/// Asks for `mark` `rounds` times, approving each by replying "yes" to the
/// prompt; returns the times from sending the answer to the tool starting.
async fn approvals(
    socket: std::path::PathBuf,
    rounds: usize,
    mut started: tokio::sync::mpsc::UnboundedReceiver<Instant>,
) -> Vec<Duration> {
    let chat = ChatId::new("approvals").unwrap();
    let mut client = Client::connect(&socket, Some(chat)).await.expect("connect");
    let mut latencies = Vec::with_capacity(rounds);
    for n in 0..rounds {
        let (id, _) = client.send(None, &format!("approve-me {n}"), None).await.expect("send");
        let prompt = loop {
            match client.next_event().await.expect("prompt") {
                ServerFrame::Approval {
                    id: prompt,
                    in_reply_to: Some(answered),
                    ..
                } if answered == id => break prompt,
                _ => {}
            }
        };
        let answered_at = Instant::now();
        client.send(None, "yes", Some(prompt)).await.expect("answer");
        let ran_at = started.recv().await.expect("the tool ran");
        latencies.push(ran_at - answered_at);
        // The model's answer after the run closes the round.
        loop {
            match client.next_event().await.expect("reply") {
                ServerFrame::Reply {
                    in_reply_to: Some(answered),
                    kind: passepartout_gateway::ReplyKind::Answer,
                    ..
                } if answered == id => break,
                _ => {}
            }
        }
    }
    latencies
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

/// Starts the real binary on `config_path` and returns its resident memory
/// once ready and idle, in KiB.
fn idle_rss_of_binary(dir: &std::path::Path, llm_url: &str) -> Option<u64> {
    use std::io::{BufRead, BufReader};
    let data = dir.join("idle");
    let path = dir.join("idle.toml");
    let text = format!(
        "data_dir = {:?}\n[store]\nbackup_every_s = 0\n[[llm.providers]]\nname = \"loopback\"\nbase_url = {llm_url:?}\nmodel = \"instant\"\n",
        data.display().to_string()
    );
    std::fs::write(&path, text).ok()?;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_passepartout"))
        .args(["--config", path.to_str()?, "run"])
        .env("RUST_LOG", "info")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .ok()?;
    let stderr = child.stderr.take()?;
    let mut lines = BufReader::new(stderr).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|l| l.contains("passepartout ready"));
    let rss = ready.then(|| rss_kib(&child.id().to_string()).0);
    let _ = child.kill();
    let _ = child.wait();
    rss
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    runtime.block_on(async {
        let llm = loopback_model().await;
        // The restart runs without the bench's own tool, so without its rule.
        let plain = config(dir.path(), &llm.base_url());
        let mut config = plain.clone();
        config.tools.require_approval.push("mark".into());
        let (marks, started_marks) = tokio::sync::mpsc::unbounded_channel();
        let extensions = Extensions {
            tools: vec![Arc::new(Mark(marks))],
            ..Extensions::default()
        };
        let daemon = Daemon::start_with(config.clone(), extensions)
            .await
            .expect("daemon starts");
        let socket = config.socket_path();

        let main_run = main_run(&socket).await;
        let sequential = one_at_a_time(&socket).await;
        let approved = approval_run(&socket, started_marks).await;
        daemon.shutdown().await.expect("shutdown");
        let startup = startup(&plain, dir.path(), &llm.base_url()).await;

        println!("{}", report(&main_run, &sequential, &approved, &startup));
    });
}

/// The loopback model: "tool N" asks for the time, then answers;
/// "approve-me N" asks for `mark`; everything else is echoed.
async fn loopback_model() -> fake_llm::FakeLlm {
    let llm = fake_llm::FakeLlm::start().await;
    // Keeping every request body would dominate the memory figures.
    llm.set_recording(false);
    llm.set_responder(|request| {
        let last = fake_llm::last_message(request);
        let text = fake_llm::last_user_text(request);
        if last["role"] == "tool" {
            fake_llm::Script::Reply("it is now".into())
        } else if text.starts_with("tool") {
            fake_llm::Script::ToolCall {
                name: "current_time".into(),
                arguments: "{}".into(),
            }
        } else if text.starts_with("approve-me") {
            fake_llm::Script::ToolCall {
                name: "mark".into(),
                arguments: "{}".into(),
            }
        } else {
            fake_llm::Script::Echo
        }
    });
    llm
}

/// What the concurrent run measured.
struct MainRun {
    conversations: usize,
    /// Each message's latency, sorted.
    latencies: Vec<Duration>,
    elapsed: Duration,
    checkpoint: usize,
    checkpoint_kib: u64,
    end_kib: u64,
    peak_kib: u64,
}

/// `PP_BENCH_MESSAGES` spread over `PP_BENCH_CONVERSATIONS` concurrent
/// conversations, with this process's memory at the checkpoint and the end.
async fn main_run(socket: &std::path::Path) -> MainRun {
    let messages = env_number("PP_BENCH_MESSAGES", 20_000);
    let conversations = env_number("PP_BENCH_CONVERSATIONS", 32).max(1);
    let per_conversation = (messages / conversations).max(1);
    let progress = Arc::new(Progress {
        answered: AtomicUsize::new(0),
        checkpoint: CHECKPOINT.min(per_conversation * conversations),
        rss_at_checkpoint_kib: AtomicU64::new(0),
    });
    let started = Instant::now();
    let tasks: Vec<_> = (0..conversations)
        .map(|index| {
            let chat = format!("bench-{index}");
            tokio::spawn(conversation(
                socket.to_path_buf(),
                chat,
                "message",
                per_conversation,
                progress.clone(),
            ))
        })
        .collect();
    let mut latencies = Vec::with_capacity(per_conversation * conversations);
    for task in tasks {
        latencies.extend(task.await.expect("conversation task"));
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let (end_kib, peak_kib) = rss_kib("self");
    MainRun {
        conversations,
        latencies,
        elapsed,
        checkpoint: progress.checkpoint,
        checkpoint_kib: progress.rss_at_checkpoint_kib.load(Ordering::Relaxed),
        end_kib,
        peak_kib,
    }
}

/// Latencies of one conversation at a time, plain turns beside tool rounds.
struct Sequential {
    rounds: usize,
    /// Sorted.
    plain: Vec<Duration>,
    /// Sorted.
    tool: Vec<Duration>,
}

/// `PP_BENCH_TOOL_ROUNDS` plain turns, then as many tool rounds, each in a
/// conversation of its own.
async fn one_at_a_time(socket: &std::path::Path) -> Sequential {
    let rounds = env_number("PP_BENCH_TOOL_ROUNDS", 2_000).max(1);
    let quiet = Arc::new(Progress {
        answered: AtomicUsize::new(0),
        checkpoint: usize::MAX,
        rss_at_checkpoint_kib: AtomicU64::new(0),
    });
    let mut plain = conversation(socket.to_path_buf(), "plain".into(), "message", rounds, quiet.clone()).await;
    let mut tool = conversation(socket.to_path_buf(), "tool".into(), "tool", rounds, quiet).await;
    plain.sort();
    tool.sort();
    Sequential { rounds, plain, tool }
}

/// Times from answering an approval to the action starting.
struct Approved {
    rounds: usize,
    /// Sorted.
    latencies: Vec<Duration>,
}

/// `PP_BENCH_APPROVALS` actions held for approval, each approved.
async fn approval_run(
    socket: &std::path::Path,
    started_marks: tokio::sync::mpsc::UnboundedReceiver<Instant>,
) -> Approved {
    let rounds = env_number("PP_BENCH_APPROVALS", 300).max(1);
    let mut latencies = approvals(socket.to_path_buf(), rounds, started_marks).await;
    latencies.sort();
    Approved { rounds, latencies }
}

/// Starting on a filled store, and the real binary's memory at rest.
struct Startup {
    ready_ms: f64,
    idle_kib: Option<u64>,
}

/// Restarts the daemon on the store the runs filled, timing start to
/// ready, then reads the idle memory of the real binary.
async fn startup(config: &Config, dir: &std::path::Path, llm_url: &str) -> Startup {
    let ready_started = Instant::now();
    let daemon = Daemon::start(config.clone()).await.expect("daemon restarts");
    let ready_ms = ready_started.elapsed().as_secs_f64() * 1000.0;
    daemon.shutdown().await.expect("shutdown");
    Startup {
        ready_ms,
        idle_kib: idle_rss_of_binary(dir, llm_url),
    }
}

/// The one JSON line the bench prints.
fn report(main_run: &MainRun, sequential: &Sequential, approved: &Approved, startup: &Startup) -> serde_json::Value {
    let MainRun {
        conversations,
        latencies,
        elapsed,
        checkpoint,
        checkpoint_kib,
        end_kib,
        peak_kib,
    } = main_run;
    let Sequential { rounds, plain, tool } = sequential;
    serde_json::json!({
        "bench": "pipeline",
        "cores": std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1),
        "conversations": conversations,
        "messages": latencies.len(),
        "durability": "journal and turn commits flushed (group commit)",
        "messages_per_s": (latencies.len() as f64 / elapsed.as_secs_f64()).round(),
        "p50_ms": percentile(latencies, 0.50),
        "p99_ms": percentile(latencies, 0.99),
        "max_ms": percentile(latencies, 1.0),
        "peak_rss_mb_bench_process": *peak_kib as f64 / 1024.0,
        "rss_mb_at_checkpoint": *checkpoint_kib as f64 / 1024.0,
        "checkpoint_messages": checkpoint,
        "rss_mb_at_end": *end_kib as f64 / 1024.0,
        "rss_growth_checkpoint_to_end": (*end_kib as f64 / (*checkpoint_kib).max(1) as f64) - 1.0,
        "idle_rss_mb_binary": startup.idle_kib.map(|k| k as f64 / 1024.0),
        "start_to_ready_ms_with_store": startup.ready_ms,
        "sequential_turns": rounds,
        "plain_turn_p50_ms": percentile(plain, 0.50),
        "plain_turn_p99_ms": percentile(plain, 0.99),
        "tool_round_p50_ms": percentile(tool, 0.50),
        "tool_round_p99_ms": percentile(tool, 0.99),
        "tool_round_overhead_p50_ms": percentile(tool, 0.50) - percentile(plain, 0.50),
        "tool_round_to_plain_ratio_p50": percentile(tool, 0.50) / percentile(plain, 0.50),
        "approvals": approved.rounds,
        "approval_answer_to_action_p50_ms": percentile(&approved.latencies, 0.50),
        "approval_answer_to_action_p99_ms": percentile(&approved.latencies, 0.99),
    })
}
