//! Python snippets run with the official OpenAI client at hand: the
//! interpreter of the virtual environment `.ci/install-openai-client` makes
//! (run here when it is missing, its output shown if that fails), so that a
//! test can call the daemon's OpenAI-compatible API exactly as the people
//! who use that client do, and read what the snippet prints.
//!
//! The snippet runs as a child the test awaits, never blocking the runtime:
//! the daemon it talks to may be running in the same one.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;
use std::time::Duration;

use tokio::process::Command;

/// How long a snippet may run: a client's first import and a request to a
/// daemon on a busy machine, with room.
pub const RUN_BOUND: Duration = Duration::from_secs(60);

/// The version `.ci/install-openai-client` pins.
pub fn openai_version() -> &'static str {
    const SCRIPT: &str = include_str!("../../.ci/install-openai-client");
    SCRIPT
        .lines()
        .find_map(|line| line.strip_prefix("OPENAI_VERSION="))
        .expect("the script pins OPENAI_VERSION")
        .trim()
}

/// The virtual environment's interpreter, installed once per test binary.
pub fn interpreter() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(|| {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join(".ci/install-openai-client");
        let output = std::process::Command::new("bash")
            .arg(script)
            .output()
            .expect("run .ci/install-openai-client");
        assert!(
            output.status.success(),
            "installing the OpenAI client failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let venv = String::from_utf8(output.stdout).expect("a path in UTF-8");
        PathBuf::from(venv.trim()).join("bin/python")
    })
}

/// Runs `snippet` with the environment's interpreter; what it printed.
/// Fails the test, showing its stderr, if it fails or outlasts
/// [`RUN_BOUND`].
pub async fn run(snippet: &str) -> String {
    let child = Command::new(interpreter())
        .arg("-c")
        .arg(snippet)
        // Loopback requests go straight to the daemon, whatever proxy the
        // machine names.
        .env("NO_PROXY", "127.0.0.1,localhost")
        .env("no_proxy", "127.0.0.1,localhost")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start python");
    let output = tokio::time::timeout(RUN_BOUND, child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("the Python snippet ran past {RUN_BOUND:?}:\n{snippet}"))
        .expect("python's output");
    assert!(
        output.status.success(),
        "the Python snippet failed ({}):\n{snippet}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).expect("python printed UTF-8")
}

/// Runs `snippet`, which prints one JSON document (`print(x.model_dump_json())`
/// or `json.dumps(...)`); that document.
pub async fn run_json(snippet: &str) -> serde_json::Value {
    let printed = run(snippet).await;
    serde_json::from_str(&printed).unwrap_or_else(|error| panic!("the snippet printed no JSON ({error}):\n{printed}"))
}
