//! The signal-cli JSON-RPC client against the fake daemon: matching responses
//! that come out of order, notifications in between, error objects, timeouts,
//! bad lines, unknown ids, a dropped connection, over Unix sockets and TCP.
//!
//! Every wait is on an event, under a timeout.

use crate::support;

use std::time::Duration;

use passepartout_signal::{
    Endpoint, ErrorCode, Notification, Notifications, Received, RpcClient, RpcError, RpcOptions,
};
use serde_json::{Value, json};
use support::fake_signal::{self, ACCOUNT, FakeSignal, VERSION, codes};
use tokio::task::JoinHandle;

const WAIT: Duration = Duration::from_secs(5);
const ADA: &str = "a1a1a1a1-1111-4111-8111-111111111111";

async fn connect(endpoint: &str) -> (RpcClient, Notifications) {
    let endpoint: Endpoint = endpoint.parse().expect("the fake's endpoint parses");
    let options = RpcOptions {
        call_timeout: WAIT,
        ..RpcOptions::default()
    };
    RpcClient::connect(&endpoint, options)
        .await
        .expect("connect to the fake")
}

async fn next(notifications: &mut Notifications) -> Notification {
    tokio::time::timeout(WAIT, notifications.recv())
        .await
        .expect("a notification in time")
        .expect("the notification channel is open")
}

async fn next_envelope(notifications: &mut Notifications) -> Received {
    match next(notifications).await {
        Notification::Receive(received) => received,
        other => panic!("expected a receive notification, got {other:?}"),
    }
}

type PendingCall = JoinHandle<Result<Value, RpcError>>;

/// Runs a call in its own task, so the test can act while it waits.
fn spawn_call(client: &RpcClient, method: &'static str) -> PendingCall {
    let client = client.clone();
    tokio::spawn(async move { client.call(method, Value::Null).await })
}

/// Starts a `version` call and waits until the fake has it: the fake holds
/// its response back until released.
async fn held_version_call(fake: &FakeSignal, client: &RpcClient) -> PendingCall {
    fake.hold_next("version");
    let pending = spawn_call(client, "version");
    fake.wait_for_calls("version", 1).await;
    pending
}

/// What a call running in its own task came to.
async fn outcome(pending: PendingCall) -> Result<Value, RpcError> {
    tokio::time::timeout(WAIT, pending)
        .await
        .expect("in time")
        .expect("the task runs")
}

#[tokio::test]
async fn calls_work_over_unix_sockets_and_tcp() {
    let fake = FakeSignal::start().await;
    for endpoint in [fake.unix_endpoint(), fake.tcp_endpoint()] {
        let (client, _notifications) = connect(&endpoint).await;
        assert_eq!(client.endpoint().to_string(), endpoint);
        let version = client.call("version", Value::Null).await.expect("version answers");
        assert_eq!(version, json!({ "version": VERSION }));
        let accounts = client
            .call("listAccounts", Value::Null)
            .await
            .expect("listAccounts answers");
        assert_eq!(accounts, json!([{ "number": ACCOUNT }]));
    }
    assert_eq!(fake.calls("version").len(), 2);
}

#[tokio::test]
async fn responses_out_of_order_reach_their_callers() {
    let fake = FakeSignal::start().await;
    let (client, _notifications) = connect(&fake.unix_endpoint()).await;
    let first = held_version_call(&fake, &client).await;
    // The second call is answered while the first one's response is held back.
    let second = client
        .call("listAccounts", Value::Null)
        .await
        .expect("listAccounts answers");
    assert_eq!(second, json!([{ "number": ACCOUNT }]));
    assert!(
        !first.is_finished(),
        "the first call got an answer that was not sent yet"
    );
    fake.release_held();
    let first = outcome(first).await;
    assert_eq!(first.expect("version answers"), json!({ "version": VERSION }));
    let ids: Vec<Value> = ["version", "listAccounts"]
        .iter()
        .map(|m| fake.calls(m)[0].id.clone())
        .collect();
    assert_ne!(ids[0], ids[1], "every request has its own id");
}

#[tokio::test]
async fn notifications_come_between_responses() {
    let fake = FakeSignal::start().await;
    let (client, mut notifications) = connect(&fake.tcp_endpoint()).await;
    let subscription = client.call("subscribeReceive", json!({})).await.expect("subscribe");
    assert_eq!(subscription, json!(0));

    let pending = held_version_call(&fake, &client).await;
    fake.push_envelope(fake_signal::text_envelope(ADA, 1_000, "first"));
    fake.push_envelope(fake_signal::text_envelope(ADA, 1_001, "second"));
    let first = next_envelope(&mut notifications).await;
    assert_eq!(first.subscription, Some(0));
    assert_eq!(first.account.as_deref(), Some(ACCOUNT));
    assert_eq!(first.envelope["dataMessage"]["message"], "first");
    assert_eq!(next_envelope(&mut notifications).await.envelope["timestamp"], 1_001);
    fake.release_held();
    let version = outcome(pending).await;
    assert_eq!(version.expect("version answers"), json!({ "version": VERSION }));
    // And the connection goes on: a notification after the late response.
    fake.push_envelope(fake_signal::text_envelope(ADA, 1_002, "third"));
    assert_eq!(next_envelope(&mut notifications).await.envelope["timestamp"], 1_002);
}

#[tokio::test]
async fn envelopes_wait_for_the_subscription() {
    let fake = FakeSignal::start().await;
    fake.push_envelope(fake_signal::text_envelope(ADA, 2_000, "sent while we were away"));
    let (client, mut notifications) = connect(&fake.unix_endpoint()).await;
    client.call("version", Value::Null).await.expect("version answers");
    assert_eq!(fake.queued(), 1, "manual receive mode: nothing before subscribeReceive");
    client.call("subscribeReceive", json!({})).await.expect("subscribe");
    assert_eq!(next_envelope(&mut notifications).await.envelope["timestamp"], 2_000);
    assert_eq!(fake.delivered(), 1);
}

#[tokio::test]
async fn error_objects_keep_their_codes() {
    let fake = FakeSignal::start().await;
    let (client, _notifications) = connect(&fake.unix_endpoint()).await;
    let cases = [
        (
            codes::INVALID_PARAMS,
            ErrorCode::InvalidParams,
            "Specified account does not exist",
        ),
        (codes::USER_ERROR, ErrorCode::UserError, "Invalid group id"),
        (codes::IO_ERROR, ErrorCode::Io, "Failed to send message"),
        (codes::UNTRUSTED_KEY, ErrorCode::UntrustedKey, "Untrusted identity"),
        (codes::RATE_LIMIT, ErrorCode::RateLimit, "Rate limit exceeded"),
        (codes::INTERNAL_ERROR, ErrorCode::Internal, "boom"),
        (-2, ErrorCode::Other(-2), "something else"),
    ];
    for (code, expected, message) in cases {
        fake.fail_next("send", code, message);
        let error = client
            .call("send", json!({ "recipient": [ADA], "message": "hi" }))
            .await
            .expect_err("the injected error");
        let RpcError::Remote(remote) = &error else {
            panic!("expected an error object, got {error:?}");
        };
        assert_eq!(remote.code, expected);
        assert_eq!(remote.code.code(), code);
        assert_eq!(remote.message, message);
        assert!(!error.is_connection_lost());
    }
    let unknown = client
        .call("noSuchMethod", json!({}))
        .await
        .expect_err("no such method");
    assert_eq!(unknown.code(), Some(ErrorCode::MethodNotFound));
    // Errors leave the connection usable.
    client.call("version", Value::Null).await.expect("version answers");
}

#[tokio::test]
async fn a_call_times_out_and_its_late_response_is_ignored() {
    let fake = FakeSignal::start().await;
    let (client, _notifications) = connect(&fake.unix_endpoint()).await;
    fake.hold_next("version");
    let error = client
        .call_with_timeout("version", Value::Null, Duration::from_millis(200))
        .await
        .expect_err("no answer comes");
    assert!(
        matches!(&error, RpcError::Timeout { method, .. } if method == "version"),
        "{error:?}"
    );
    fake.release_held();
    let accounts = client
        .call("listAccounts", Value::Null)
        .await
        .expect("the connection is still usable");
    assert_eq!(accounts, json!([{ "number": ACCOUNT }]));
}

#[tokio::test]
async fn malformed_and_giant_lines_are_skipped_without_stalling() {
    let fake = FakeSignal::start().await;
    let (client, mut notifications) = connect(&fake.tcp_endpoint()).await;
    client.call("subscribeReceive", json!({})).await.expect("subscribe");

    let pending = held_version_call(&fake, &client).await;
    fake.send_raw("this is not JSON");
    fake.send_raw("[1, 2, 3]");
    fake.send_raw(r#"{"jsonrpc":"2.0"}"#);
    fake.send_raw(r#"{"jsonrpc":"2.0","method":"receive","params":{"subscription":0,"result":{"exception":{}}}}"#);
    // Two MiB on one line, past the 1 MiB cap; valid JSON, so only the cap drops it.
    let giant = format!(
        r#"{{"jsonrpc":"2.0","method":"receive","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2 << 20)
    );
    fake.send_raw(giant);
    fake.push_envelope(fake_signal::text_envelope(ADA, 3_000, "after the garbage"));
    fake.release_held();

    // The receive without an envelope surfaces as another notification; the
    // giant one never does.
    match next(&mut notifications).await {
        Notification::Other { method, .. } => assert_eq!(method, "receive"),
        other => panic!("expected the envelope-less receive, got {other:?}"),
    }
    assert_eq!(next_envelope(&mut notifications).await.envelope["timestamp"], 3_000);
    let version = outcome(pending).await;
    assert_eq!(version.expect("version answers"), json!({ "version": VERSION }));
}

#[tokio::test]
async fn responses_to_unknown_ids_are_ignored() {
    let fake = FakeSignal::start().await;
    let (client, _notifications) = connect(&fake.unix_endpoint()).await;
    fake.hold_next("version");
    let pending = spawn_call(&client, "version");
    let call = fake.wait_for_calls("version", 1).await.remove(0);
    let id = call.id.as_u64().expect("numeric request ids");
    fake.send_raw(json!({ "jsonrpc": "2.0", "id": id + 1000, "result": "not yours" }).to_string());
    fake.send_raw(json!({ "jsonrpc": "2.0", "id": id.to_string(), "result": "a string id" }).to_string());
    fake.send_raw(json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32700, "message": "x" } }).to_string());
    // A round trip after the strays: they were read, and ignored.
    client
        .call("listAccounts", Value::Null)
        .await
        .expect("listAccounts answers");
    assert!(!pending.is_finished(), "a stray response completed the pending call");
    fake.release_held();
    let version = outcome(pending).await;
    assert_eq!(version.expect("version answers"), json!({ "version": VERSION }));
}

#[tokio::test]
async fn a_dropped_connection_fails_pending_calls_and_reports_the_loss() {
    let fake = FakeSignal::start().await;
    let (client, mut notifications) = connect(&fake.unix_endpoint()).await;
    client.call("subscribeReceive", json!({})).await.expect("subscribe");
    let pending = held_version_call(&fake, &client).await;
    fake.push_envelope(fake_signal::text_envelope(ADA, 4_000, "just before"));
    assert_eq!(next_envelope(&mut notifications).await.envelope["timestamp"], 4_000);

    fake.drop_connections();
    let error = outcome(pending).await.expect_err("the connection went away");
    assert!(matches!(error, RpcError::Closed { .. }), "{error:?}");
    assert!(error.is_connection_lost());
    match next(&mut notifications).await {
        Notification::Lost(RpcError::Closed { .. }) => {}
        other => panic!("expected the loss, got {other:?}"),
    }
    assert!(
        tokio::time::timeout(WAIT, notifications.recv())
            .await
            .expect("in time")
            .is_none(),
        "nothing follows the loss"
    );
    assert!(client.is_closed());
    let after = client
        .call("version", Value::Null)
        .await
        .expect_err("the connection is gone");
    assert!(matches!(after, RpcError::Closed { .. }), "{after:?}");
}

#[tokio::test]
async fn closing_the_client_fails_pending_calls() {
    let fake = FakeSignal::start().await;
    let (client, mut notifications) = connect(&fake.tcp_endpoint()).await;
    let pending = held_version_call(&fake, &client).await;
    client.close();
    let error = outcome(pending).await;
    assert!(matches!(error, Err(RpcError::Closed { .. })), "{error:?}");
    assert!(matches!(next(&mut notifications).await, Notification::Lost(_)));
    fake.wait_for_connections(0).await;
}

#[tokio::test]
async fn connection_failures_are_typed() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let missing = Endpoint::Unix(dir.path().join("no-such.sock"));
    let error = RpcClient::connect(&missing, RpcOptions::default())
        .await
        .expect_err("no socket");
    assert!(
        matches!(
            &error,
            RpcError::Connect {
                kind: std::io::ErrorKind::NotFound,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(error.is_connection_lost());

    let closed = Endpoint::Tcp(crate::support::closed::address().to_string());
    let error = RpcClient::connect(&closed, RpcOptions::default())
        .await
        .expect_err("nobody listens");
    assert!(matches!(error, RpcError::Connect { .. }), "{error:?}");
}

#[tokio::test]
async fn send_checks_text_styles_as_signal_cli_parses_them() {
    let fake = FakeSignal::start().await;
    let (client, _notifications) = connect(&fake.unix_endpoint()).await;
    // "😀 bold": the emoji is two UTF-16 units, so "bold" is 3:4.
    let message = "😀 bold";
    client
        .call(
            "send",
            json!({ "recipient": [ADA], "message": message, "textStyle": ["3:4:BOLD", "0:7:ITALIC"] }),
        )
        .await
        .expect("valid styles are sent");
    client
        .call(
            "send",
            json!({ "recipient": [ADA], "message": message, "textStyle": "3:4:MONOSPACE" }),
        )
        .await
        .expect("one style may be a single string");
    assert_eq!(fake.sent()[0].text_styles, ["3:4:BOLD", "0:7:ITALIC"]);
    assert_eq!(fake.sent()[1].text_styles, ["3:4:MONOSPACE"]);

    let refused = [
        ("3:4", "Invalid textStyle syntax"),
        ("a:4:BOLD", "Invalid textStyle syntax"),
        ("3:4:UNDERLINE", "Invalid style: UNDERLINE"),
        ("3:5:BOLD", "outside the message"),
        ("3:0:BOLD", "outside the message"),
    ];
    for (style, expected) in refused {
        let error = client
            .call(
                "send",
                json!({ "recipient": [ADA], "message": message, "textStyle": [style] }),
            )
            .await
            .expect_err(style);
        let RpcError::Remote(remote) = &error else {
            panic!("expected an error object, got {error:?}");
        };
        assert_eq!(remote.code, ErrorCode::UserError, "{style}");
        assert!(remote.message.contains(expected), "{style}: {}", remote.message);
    }
    assert_eq!(fake.sent().len(), 2, "nothing refused was sent");
}
