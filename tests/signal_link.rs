//! `passepartout signal link` against a fake multi-account signal-cli over
//! its real wire protocol (`startLink`, `finishLink`): the flow as a
//! library call and as the command a person types, the configuration it
//! writes, and each way it fails, told clearly.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use passepartout::config::Config;
use passepartout::gateways::signal::link::{LinkFailure, LinkRequest, link};
use passepartout_signal::LinkError;
use serde_json::json;
use support::fake_signal::{FakeSignal, LINK_URI, LINKED_NUMBER, codes};
use support::process::run_cli;

/// A configuration reaching `endpoint`.
fn config_at(endpoint: &str) -> Config {
    let mut config = Config::default();
    config.signal.endpoint = endpoint.to_owned();
    config
}

fn request(wait: Duration) -> LinkRequest {
    LinkRequest {
        device_name: "Laptop".into(),
        wait,
    }
}

/// Links through `config`, returning the URIs shown on the way too.
async fn linking(config: &Config, wait: Duration) -> (Result<passepartout_signal::Linked, LinkFailure>, Vec<String>) {
    let shown = Arc::new(Mutex::new(Vec::new()));
    let seen = shown.clone();
    let linked = link(config, &request(wait), move |uri| {
        seen.lock().unwrap().push(uri.as_str().to_owned())
    })
    .await;
    let shown = shown.lock().unwrap().clone();
    (linked, shown)
}

const WAIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn linking_shows_the_uri_then_names_the_account_the_phone_linked() {
    let signal = FakeSignal::start().await;
    let (linked, shown) = linking(&config_at(&signal.tcp_endpoint()), WAIT).await;
    assert_eq!(linked.unwrap().number, LINKED_NUMBER);
    assert_eq!(shown, [LINK_URI], "shown once, before waiting for the phone");
    let finish = signal.calls("finishLink");
    assert_eq!(finish.len(), 1);
    assert_eq!(finish[0].params["deviceLinkUri"], LINK_URI);
    assert_eq!(finish[0].params["deviceName"], "Laptop");
    assert!(
        finish[0].params.get("account").is_none(),
        "linking names no account: {}",
        finish[0].params
    );
}

#[tokio::test]
async fn a_refusal_is_told_as_one() {
    let signal = FakeSignal::start().await;
    signal.fail_next("finishLink", codes::USER_ERROR, "Invalid device link uri");
    let (linked, shown) = linking(&config_at(&signal.unix_endpoint()), WAIT).await;
    let error = linked.unwrap_err();
    assert!(matches!(error, LinkFailure::Link(LinkError::Refused(_))), "{error:?}");
    assert!(error.to_string().starts_with("signal-cli refused to link"), "{error}");
    assert_eq!(shown.len(), 1, "the code was shown before the refusal");
}

#[tokio::test]
async fn signal_servers_out_of_reach_are_told_apart() {
    // What the genuine signal-cli answers on a machine that is offline.
    let signal = FakeSignal::start().await;
    signal.fail_next("startLink", codes::IO_ERROR, "Link request error: Connection closed!");
    let (linked, shown) = linking(&config_at(&signal.tcp_endpoint()), WAIT).await;
    let error = linked.unwrap_err();
    assert!(matches!(error, LinkFailure::Link(LinkError::Servers(_))), "{error:?}");
    assert!(error.to_string().contains("cannot reach the Signal servers"), "{error}");
    assert!(shown.is_empty());
}

#[tokio::test]
async fn a_phone_that_never_links_times_out() {
    let signal = FakeSignal::start().await;
    signal.hold_next("finishLink");
    let (linked, _) = linking(&config_at(&signal.tcp_endpoint()), Duration::from_millis(300)).await;
    let error = linked.unwrap_err();
    assert!(matches!(error, LinkFailure::Link(LinkError::TimedOut(_))), "{error:?}");
    assert!(error.to_string().contains("no phone linked within"), "{error}");
}

/// A Unix socket a daemon left behind when it died: the file is there,
/// nobody listens (never a TCP port, which another test's fake may take).
fn dead_socket(dir: &std::path::Path) -> String {
    let path = dir.join("dead.sock");
    drop(std::os::unix::net::UnixListener::bind(&path).unwrap());
    format!("unix:{}", path.display())
}

#[tokio::test]
async fn a_dead_endpoint_says_where_and_how_to_start_signal_cli() {
    let dir = tempfile::tempdir().unwrap();
    let endpoint = dead_socket(dir.path());
    let (linked, shown) = linking(&config_at(&endpoint), WAIT).await;
    let error = linked.unwrap_err();
    assert!(matches!(error, LinkFailure::Unreachable(_)), "{error:?}");
    let error = error.to_string();
    assert!(
        error.contains(&format!("no signal-cli daemon at {endpoint}")),
        "{error}"
    );
    assert!(error.contains("signal-cli daemon --tcp"), "how to start one: {error}");
    assert!(shown.is_empty());
}

#[tokio::test]
async fn a_missing_signal_cli_in_spawn_mode_is_named() {
    let mut config = Config::default();
    config.signal.spawn = true;
    config.signal.spawn_program = "/nonexistent/bin/signal-cli".into();
    let (linked, _) = linking(&config, WAIT).await;
    let error = linked.unwrap_err().to_string();
    assert!(
        error.contains("there is no program /nonexistent/bin/signal-cli"),
        "{error}"
    );
}

#[tokio::test]
async fn a_single_account_daemon_is_told_apart() {
    let signal = FakeSignal::start().await;
    signal.fail_next("startLink", codes::METHOD_NOT_FOUND, "Method not implemented");
    let (linked, _) = linking(&config_at(&signal.tcp_endpoint()), WAIT).await;
    let error = linked.unwrap_err();
    assert!(
        matches!(error, LinkFailure::Link(LinkError::SingleAccount { .. })),
        "{error:?}"
    );
    assert!(error.to_string().contains("started without -a"), "{error}");
}

#[tokio::test]
async fn malformed_answers_are_named_as_such() {
    let cases = [
        ("startLink", json!({ "uri": LINK_URI })),
        ("startLink", json!({ "deviceLinkUri": "https://signal.org/install" })),
        ("startLink", json!("sgnl://linkdevice?uuid=x")),
        ("finishLink", json!({})),
        ("finishLink", json!({ "number": 15550000077u64 })),
        ("finishLink", json!({ "number": "me" })),
    ];
    for (method, answer) in cases {
        let signal = FakeSignal::start().await;
        signal.answer_next(method, answer.clone());
        let (linked, _) = linking(&config_at(&signal.tcp_endpoint()), WAIT).await;
        let error = linked.unwrap_err();
        assert!(
            matches!(&error, LinkFailure::Link(LinkError::Malformed { method: named, .. }) if *named == method),
            "{method} answering {answer}: {error:?}"
        );
        assert!(
            !error.to_string().contains("pub_key"),
            "the URI stays out of errors: {error}"
        );
    }
}

#[tokio::test]
async fn a_response_with_neither_result_nor_error_is_malformed() {
    let signal = FakeSignal::start().await;
    signal.hold_next("startLink");
    let config = config_at(&signal.tcp_endpoint());
    let linking = tokio::spawn(async move { linking(&config, WAIT).await.0 });
    let call = signal.wait_for_calls("startLink", 1).await.remove(0);
    signal.send_raw(json!({ "jsonrpc": "2.0", "id": call.id }).to_string());
    let error = linking.await.unwrap().unwrap_err();
    assert!(
        matches!(
            &error,
            LinkFailure::Link(LinkError::Malformed {
                method: "startLink",
                ..
            })
        ),
        "{error:?}"
    );
}

/// A configuration file reaching `endpoint`, with comments and other sections.
fn config_file(dir: &std::path::Path, endpoint: &str) -> std::path::PathBuf {
    let path = dir.join("config.toml");
    let text = format!(
        "# my assistant\ndata_dir = {data:?}\n\n[signal]\n# where my signal-cli listens\nendpoint = {endpoint:?}\n",
        data = dir.join("data").display().to_string()
    );
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test]
async fn the_command_shows_a_qr_code_and_writes_a_configuration_that_loads() {
    let signal = FakeSignal::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(dir.path(), &signal.tcp_endpoint());
    let output = run_cli(&path, &["signal", "link", "--name", "Laptop", "--write"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains(LINK_URI), "the URI as text: {stdout}");
    assert_eq!(decode_qr(&stdout), LINK_URI, "the QR code a phone scans is the link");
    assert!(
        stdout.contains("Settings → Linked devices → Link new device"),
        "{stdout}"
    );
    assert!(stdout.contains(&format!("Linked: {LINKED_NUMBER}")), "{stdout}");
    let written = std::fs::read_to_string(&path).unwrap();
    assert!(
        written.contains("# where my signal-cli listens"),
        "comments kept: {written}"
    );
    let loaded = passepartout::gateways::load(Some(&path), Some(HashMap::new())).expect("the written file loads");
    assert!(loaded.signal.enabled);
    assert_eq!(loaded.signal.account, LINKED_NUMBER);
    assert!(loaded.signal.note_to_self);
    assert!(
        loaded.signal.multi_account,
        "the daemon that linked serves every account"
    );
    assert_eq!(loaded.signal.endpoint, signal.tcp_endpoint());
}

#[tokio::test]
async fn without_write_the_command_prints_the_settings_and_leaves_the_file() {
    let signal = FakeSignal::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(dir.path(), &signal.unix_endpoint());
    let before = std::fs::read_to_string(&path).unwrap();
    let output = run_cli(&path, &["signal", "link"]).await;
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    assert!(stdout.contains(&format!("account = \"{LINKED_NUMBER}\"")), "{stdout}");
    assert!(stdout.contains("note_to_self = true"), "{stdout}");
    assert_eq!(signal.calls("finishLink")[0].params["deviceName"], "passepartout");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
}

#[tokio::test]
async fn the_command_fails_clearly_when_nothing_links() {
    let signal = FakeSignal::start().await;
    let dir = tempfile::tempdir().unwrap();
    let path = config_file(dir.path(), &signal.tcp_endpoint());
    let before = std::fs::read_to_string(&path).unwrap();
    signal.hold_next("finishLink");
    let output = run_cli(&path, &["signal", "link", "--write", "--wait-s", "1"]).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no phone linked within 1s"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), before, "nothing written");
    let dead = config_file(dir.path(), &dead_socket(dir.path()));
    let output = run_cli(&dead, &["signal", "link"]).await;
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("no signal-cli daemon at"), "{stderr}");
}

/// The QR code in a command's output, drawn in half blocks with the light
/// modules as blocks, decoded as a phone's camera would: each character two
/// modules tall, scaled up to pixels, read by a QR decoder.
fn decode_qr(output: &str) -> String {
    const SCALE: usize = 4;
    let rows: Vec<Vec<char>> = output
        .lines()
        .filter(|line| !line.is_empty() && line.chars().all(|c| matches!(c, '█' | '▀' | '▄' | ' ')))
        .filter(|line| line.contains('█'))
        .map(|line| line.chars().collect())
        .collect();
    assert!(rows.len() > 10, "a QR code of half blocks: {output}");
    let width = rows.iter().map(Vec::len).max().unwrap();
    // (upper, lower) light for each glyph.
    let light = |c: char| match c {
        '█' => (true, true),
        '▀' => (true, false),
        '▄' => (false, true),
        _ => (false, false),
    };
    let (w, h) = (width * SCALE, rows.len() * 2 * SCALE);
    let mut image = rqrr::PreparedImage::prepare_from_greyscale(w, h, |x, y| {
        let (column, module_row) = (x / SCALE, y / SCALE);
        let glyph = rows[module_row / 2].get(column).copied().unwrap_or(' ');
        let (upper, lower) = light(glyph);
        let lit = if module_row % 2 == 0 { upper } else { lower };
        if lit { 255 } else { 0 }
    });
    let grids = image.detect_grids();
    assert_eq!(grids.len(), 1, "one QR code found");
    let (_, content) = grids[0].decode().expect("the QR code decodes");
    content
}
