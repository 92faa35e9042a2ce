//! For the MCP tests: the reference servers (installed by
//! `.ci/install-mcp-servers` when missing, its output shown if that fails)
//! and the fixture server in `tests/fixtures/`, as `[[mcp.servers]]`
//! entries granted nothing of their own (what their programs and scripts
//! need is the daemon's to work out); a fake model that calls the tool a message names; and a wait on
//! the daemon's servers reaching a state.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

use passepartout::Daemon;
use passepartout::config::{McpServerConfig, McpTrust};
use passepartout::safety::mcp::ServerStatus;
use serde_json::Value;

use super::fake_llm::{Script, last_message, last_user_text};

/// How long the servers get to reach a state: past the daemon's own
/// handshake bound (30 s by default), so a server that never comes up is
/// seen failed, with its error, rather than timed out here. A Python
/// server's imports alone take over a second of processor, and many
/// times that on a two-core machine running the suite's tests at once.
pub const SERVERS_WAIT: Duration = Duration::from_secs(60);

/// The versions `.ci/install-mcp-servers` installs: the npm servers', and
/// mcp-server-time's.
pub const NPM_VERSION: &str = "2026.8.31";
pub const TIME_VERSION: &str = "2026.10.19";

/// The tools directory, with the reference servers installed in it (once
/// per test binary).
pub fn tools_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-mcp-servers");
        let output = Command::new("bash")
            .arg(script)
            .output()
            .expect("run .ci/install-mcp-servers");
        assert!(
            output.status.success(),
            "installing the MCP servers failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        PathBuf::from(String::from_utf8(output.stdout).unwrap().trim())
    })
}

/// `server-everything` on stdio, as `everything`.
pub fn everything(trust: McpTrust) -> McpServerConfig {
    let script =
        tools_dir().join("mcp-npm-2026.8.31/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    McpServerConfig {
        name: "everything".into(),
        command: Some("node".into()),
        args: vec![script.display().to_string()],
        trust,
        ..McpServerConfig::default()
    }
}

/// `server-filesystem` on stdio, as `files`, confined to `root`, trusted.
pub fn filesystem(root: &Path) -> McpServerConfig {
    let script =
        tools_dir().join("mcp-npm-2026.8.31/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    McpServerConfig {
        name: "files".into(),
        command: Some("node".into()),
        args: vec![script.display().to_string(), root.display().to_string()],
        trust: McpTrust::Allow,
        allow_write: vec![root.to_path_buf()],
        ..McpServerConfig::default()
    }
}

/// `mcp-server-time` (Python) on stdio, as `time`.
pub fn time(trust: McpTrust) -> McpServerConfig {
    McpServerConfig {
        name: "time".into(),
        command: Some(tools_dir().join("mcp-server-time-2026.10.19/bin/mcp-server-time")),
        args: vec!["--local-timezone".into(), "UTC".into()],
        trust,
        ..McpServerConfig::default()
    }
}

/// The fixture server, as `fixture`, trusted, its calls cut at `timeout_s`.
pub fn fixture(timeout_s: u64) -> McpServerConfig {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp_fixture.py");
    McpServerConfig {
        name: "fixture".into(),
        command: Some("python3".into()),
        args: vec![script.display().to_string()],
        env: [("GREETING".to_owned(), "hi".to_owned())].into(),
        timeout_s,
        trust: McpTrust::Allow,
        ..McpServerConfig::default()
    }
}

/// What a person is told after an approval starts with this.
pub const OUTCOME: &str = "[passepartout] ";

/// The fake model: `call TOOL {json}` calls TOOL with those arguments; a
/// tool's result is answered `done: RESULT`, an approval's outcome
/// `final: OUTCOME`; anything else is echoed.
pub fn model(request: &Value) -> Script {
    let last = last_message(request);
    if last["role"] == "tool" {
        return Script::Reply(format!("done: {}", last["content"].as_str().unwrap_or_default()));
    }
    let text = last_user_text(request);
    if text.starts_with(OUTCOME) {
        return Script::Reply(format!("final: {text}"));
    }
    match text.strip_prefix("call ").and_then(|rest| rest.split_once(' ')) {
        Some((name, arguments)) => Script::ToolCall {
            name: name.into(),
            arguments: arguments.into(),
        },
        None => Script::Echo,
    }
}

/// Waits until the daemon's servers satisfy `check`; their states then.
pub async fn wait_for_servers(daemon: &Daemon, check: impl Fn(&[ServerStatus]) -> bool) -> Vec<ServerStatus> {
    let mut changes = daemon.mcp().changes();
    let waited = tokio::time::timeout(SERVERS_WAIT, async {
        loop {
            let servers = daemon.mcp().status();
            if check(&servers) {
                return servers;
            }
            changes.changed().await.expect("the servers are still there");
        }
    })
    .await;
    waited.unwrap_or_else(|_| panic!("the servers did not get there in time: {:#?}", daemon.mcp().status()))
}

/// The server called `name` among `servers`.
pub fn server<'a>(servers: &'a [ServerStatus], name: &str) -> &'a ServerStatus {
    servers.iter().find(|s| s.name == name).expect("configured")
}
