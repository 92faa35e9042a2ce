//! Tests of the `shell` tool's confinement with real processes: what a
//! command may read and write, its private `TMPDIR`, its network, its
//! limits, and the sentence a refusal gets. They run on a kernel offering
//! Landlock; elsewhere they check that the policy says it confines nothing.

use serde_json::json;

use super::tests::{Fixture, fixture};
use super::*;
use crate::config::{DEFAULT_OUTPUT_CAP_BYTES, SandboxConfig, SandboxNetwork};
use crate::safety::sandbox::Support;
use crate::safety::tools::testing;
use crate::skip::{Need, skipped};

/// The tool with the default settings, confined by `sandbox`.
fn confined(f: &Fixture, sandbox: &SandboxConfig) -> ShellTool {
    f.tool_in(ShellConfig::default(), DEFAULT_OUTPUT_CAP_BYTES, sandbox)
}

/// Whether this kernel confines at all, which the tests below need; where
/// it does not, `test` says it skipped.
fn landlock(test: &str) -> bool {
    let there = Support::probe().filesystem();
    if !there {
        skipped(test, Need::Landlock, "this kernel offers no Landlock");
    }
    there
}

#[tokio::test]
async fn a_file_outside_the_workspace_cannot_be_read_or_written() {
    if !landlock("a_file_outside_the_workspace_cannot_be_read_or_written") {
        return;
    }
    let f = fixture();
    let secret = f.temp.path().join("secret.txt");
    std::fs::write(&secret, "canary-7781").unwrap();
    let tool = confined(&f, &SandboxConfig::default());
    let report = f.run(&tool, &format!("cat {}", secret.display())).await;
    assert!(!report.contains("canary-7781"), "{report}");
    assert!(report.contains("Permission denied"), "{report}");
    assert!(
        report.contains("tools.sandbox.allow_read"),
        "the refusal names the rule: {report}"
    );

    let outside = f.temp.path().join("made.txt");
    let report = f.run(&tool, &format!("touch {}", outside.display())).await;
    assert!(!outside.exists(), "{report}");
    let report = f
        .run(
            &tool,
            "touch inside.txt && cat /etc/hostname /usr/bin/env >/dev/null && echo ok",
        )
        .await;
    assert!(f.workspace.root().join("inside.txt").exists(), "{report}");
    assert!(report.contains("ok\n"), "system folders stay readable: {report}");
}

#[tokio::test]
async fn allow_read_and_allow_write_add_folders() {
    if !landlock("allow_read_and_allow_write_add_folders") {
        return;
    }
    let f = fixture();
    let shared = f.temp.path().join("shared");
    std::fs::create_dir(&shared).unwrap();
    std::fs::write(shared.join("note.txt"), "shared-note").unwrap();
    let readable = SandboxConfig {
        allow_read: vec![shared.clone()],
        ..SandboxConfig::default()
    };
    let report = f
        .run(
            &confined(&f, &readable),
            &format!("cat {0}/note.txt; touch {0}/new", shared.display()),
        )
        .await;
    assert!(report.contains("shared-note"), "{report}");
    assert!(!shared.join("new").exists(), "read only: {report}");

    let writable = SandboxConfig {
        allow_write: vec![shared.clone()],
        ..SandboxConfig::default()
    };
    f.run(&confined(&f, &writable), &format!("touch {}/new", shared.display()))
        .await;
    assert!(shared.join("new").exists());
}

#[tokio::test]
async fn tmpdir_is_private_writable_and_removed_afterwards() {
    let f = fixture();
    let tool = confined(&f, &SandboxConfig::default());
    let report = f
        .run(&tool, "echo \"$TMPDIR\"; echo x > \"$TMPDIR/t\" && cat \"$TMPDIR/t\"")
        .await;
    let out = report.split("--- stdout ---\n").nth(1).unwrap();
    let mut lines = out.lines();
    let tmpdir = std::path::PathBuf::from(lines.next().unwrap());
    assert!(tmpdir.starts_with(std::env::temp_dir()), "{report}");
    assert_eq!(lines.next(), Some("x"), "{report}");
    assert!(!tmpdir.exists(), "removed after the call");
    if landlock("tmpdir_is_private_writable_and_removed_afterwards (/tmp unshared)") {
        let report = f.run(&tool, "ls /tmp").await;
        assert!(
            report.contains("Permission denied"),
            "/tmp itself is not shared: {report}"
        );
    }
}

#[tokio::test]
async fn network_none_closes_tcp_and_any_leaves_it_open() {
    if !Support::probe().network() {
        skipped(
            "network_none_closes_tcp_and_any_leaves_it_open",
            Need::LandlockNetwork,
            "this kernel's Landlock has no network rules",
        );
        return;
    }
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let f = fixture();
    // bash's /dev/tcp makes the connection without any other program.
    let connect = format!("exec 3<>/dev/tcp/127.0.0.1/{port} && echo connected");
    let line = format!("/bin/bash -c '{connect}'");
    let closed = SandboxConfig {
        network: SandboxNetwork::None,
        ..SandboxConfig::default()
    };
    let report = f.run(&confined(&f, &closed), &line).await;
    assert!(!report.contains("connected"), "{report}");
    assert!(
        report.contains(r#"network = "none""#),
        "the refusal names the rule: {report}"
    );
    let report = f.run(&confined(&f, &SandboxConfig::default()), &line).await;
    assert!(report.contains("connected"), "{report}");
}

#[tokio::test]
async fn limits_stop_a_runaway_writer_and_cpu_burner() {
    let f = fixture();
    let limited = SandboxConfig {
        cpu_s: 1,
        file_size_mb: 1,
        ..SandboxConfig::default()
    };
    let tool = confined(&f, &limited);
    let report = f.run(&tool, "yes > big.txt").await;
    let size = std::fs::metadata(f.workspace.root().join("big.txt")).unwrap().len();
    assert_eq!(size, 1024 * 1024, "{report}");
    let report = f.run(&tool, "while :; do :; done").await;
    assert!(report.starts_with("[killed by signal"), "{report}");
}

#[tokio::test]
async fn require_refuses_where_landlock_is_missing() {
    let f = fixture();
    let required = SandboxConfig {
        require: true,
        ..SandboxConfig::default()
    };
    let policy = Policy::new(&required, Support::pretend(0)).writable(f.workspace.root());
    let tool = ShellTool::new(
        ShellConfig::default(),
        DEFAULT_OUTPUT_CAP_BYTES,
        f.workspace.clone(),
        policy,
    );
    let error = tool
        .call(&testing::context(), json!({ "command": "echo hi" }))
        .await
        .unwrap_err();
    assert!(error.to_string().contains("tools.sandbox.require"), "{error}");
}
