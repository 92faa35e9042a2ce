//! What one MCP tool call costs through the daemon, beside the server's own
//! time: the reference `server-everything` (installed by
//! `.ci/install-mcp-servers` when missing) answering `echo`.
//!
//! `cargo bench --bench mcp` prints one JSON line, with the number of
//! cores: the median and 99th percentile, in milliseconds, of
//! - `server`: one `echo` call made straight to the server by a bare MCP
//!   client (the server's own time, with its transport);
//! - `builtin_round`: a turn in which the model calls the built-in
//!   `current_time` and then answers (socket → pipeline → loopback model →
//!   tool → model → reply), each in a new conversation;
//! - `mcp_round`: the same turn calling the server's `everything__echo`,
//!   taken turn and turn about with the built-in rounds;
//!
//! and `overhead_ms`, the median MCP round less the median built-in round
//! and the server's median: what the daemon adds to a call. `PP_BENCH_MCP_CALLS`
//! (default 500) sets how many of each are timed, after a warm-up.

#[path = "../tests/support/fake_llm.rs"]
mod fake_llm;
#[path = "support/tool_turns.rs"]
mod tool_turns;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use fake_llm::FakeLlm;
use passepartout::config::{Config, McpServerConfig, McpTrust, ProviderConfig};
use passepartout::safety::mcp::Phase;
use passepartout::{Daemon, Extensions};
use passepartout_gateway::{ChatId, ReplyKind};
use passepartout_socket::{Client, ServerFrame};
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use serde_json::json;
use tool_turns::{figures, model, percentiles};

const WARM_UP: usize = 20;

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// The entry point of the installed `server-everything`.
fn everything_script() -> PathBuf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-mcp-servers");
    let output = std::process::Command::new("bash")
        .arg(script)
        .output()
        .expect("run the installer");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let tools = PathBuf::from(String::from_utf8(output.stdout).unwrap().trim());
    tools.join("mcp-npm-2026.8.31/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

/// `calls` echo calls straight to the server.
async fn direct(script: &Path, calls: usize) -> Vec<Duration> {
    let mut command = tokio::process::Command::new("node");
    command.arg(script);
    let transport = rmcp::transport::TokioChildProcess::new(command).expect("start the server");
    let client = ().serve(transport).await.expect("handshake");
    let mut arguments = serde_json::Map::new();
    arguments.insert("message".into(), json!("bench"));
    let mut timed = Vec::with_capacity(calls);
    for n in 0..WARM_UP + calls {
        let request = CallToolRequestParams::new("echo").with_arguments(arguments.clone());
        let started = Instant::now();
        client.peer().call_tool(request).await.expect("echo");
        if n >= WARM_UP {
            timed.push(started.elapsed());
        }
    }
    let _ = client.cancel().await;
    timed
}

/// One turn sending `text` in a conversation of its own (so that no history
/// grows from one to the next), timed from sending to the answer.
async fn turn(socket: &Path, chat: String, text: &str) -> Duration {
    let mut client = Client::connect(socket, Some(ChatId::new(chat).unwrap()))
        .await
        .expect("connect");
    let started = Instant::now();
    let (id, _) = client.send(None, text, None).await.expect("send");
    loop {
        match client.next_event().await.expect("reply") {
            ServerFrame::Reply {
                in_reply_to: Some(to),
                kind: ReplyKind::Answer,
                text,
                ..
            } if to == id => {
                assert_eq!(text, "done");
                return started.elapsed();
            }
            _ => {}
        }
    }
}

#[tokio::main]
async fn main() {
    let calls = env_number("PP_BENCH_MCP_CALLS", 500).max(10);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let script = everything_script();
    let server = percentiles(direct(&script, calls).await);

    let llm = FakeLlm::start().await;
    llm.set_responder(model);
    llm.set_recording(false);
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config {
        data_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    config.store.backup_every_s = 0;
    config.skills.tool_calls_per_minute = 0;
    config.llm.providers = vec![ProviderConfig {
        name: "loopback".into(),
        base_url: llm.base_url(),
        model: "instant".into(),
        ..ProviderConfig::default()
    }];
    config.mcp.servers = vec![McpServerConfig {
        name: "everything".into(),
        command: Some("node".into()),
        args: vec![script.display().to_string()],
        trust: McpTrust::Allow,
        ..McpServerConfig::default()
    }];
    let daemon = Daemon::start_with(config.clone(), Extensions::default())
        .await
        .expect("start");
    let mut changes = daemon.mcp().changes();
    while daemon.mcp().status()[0].state != Phase::Connected {
        tokio::time::timeout(Duration::from_secs(60), changes.changed())
            .await
            .expect("the server connects")
            .expect("still there");
    }
    // Turn and turn about, so that whatever drifts affects both alike.
    let socket = config.socket_path();
    let (mut builtin, mut mcp) = (Vec::with_capacity(calls), Vec::with_capacity(calls));
    for n in 0..WARM_UP + calls {
        let plain = turn(&socket, format!("builtin-{n}"), "call current_time {}").await;
        let served = turn(
            &socket,
            format!("mcp-{n}"),
            r#"call everything__echo {"message":"bench"}"#,
        )
        .await;
        if n >= WARM_UP {
            builtin.push(plain);
            mcp.push(served);
        }
    }
    let (builtin, mcp) = (percentiles(builtin), percentiles(mcp));
    let overhead = mcp.0 - builtin.0 - server.0;
    println!(
        r#"{{"cores":{cores},"calls":{calls},{},{},{},"overhead_ms":{overhead:.3}}}"#,
        figures("server", server),
        figures("builtin_round", builtin),
        figures("mcp_round", mcp),
    );
    daemon.shutdown().await.expect("shutdown");
}
