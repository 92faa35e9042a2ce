//! Lines that are not good frames: each gets its error code, and the
//! connection stays usable afterwards.

use crate::common;

use common::{Daemon, Raw};
use passepartout_socket::{ErrorCode, ServerFrame};
use serde_json::json;

#[tokio::test]
async fn a_line_over_the_limit_is_refused_and_the_next_line_works() {
    // Far longer than one read, so the reader has to skip the rest of the line.
    let (daemon, _core) = Daemon::start_tweaked(|config| config.max_line_bytes = 1024).await;
    let mut raw = Raw::connect(&daemon.path).await;
    let long = json!({"type": "message", "id": "big", "text": "x".repeat(200_000)});
    raw.send_json(long).await;
    raw.expect_error(ErrorCode::LineTooLong).await;
    raw.send_json(json!({"type": "message", "id": "small", "text": "fits"}))
        .await;
    assert_eq!(raw.frame().await, ServerFrame::Accepted { id: "small".into() });
}

#[tokio::test]
async fn an_over_long_line_is_refused_naming_the_message_limit_in_words() {
    let (daemon, _core) = Daemon::start_tweaked(|config| {
        config.max_line_bytes = 64 * 1024;
        config.max_message_bytes = Some(16 * 1024);
    })
    .await;
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_json(json!({"type": "message", "id": "big", "text": "x".repeat(5 * 1024 * 1024)}))
        .await;
    let ServerFrame::Error { message, .. } = raw.expect_error(ErrorCode::LineTooLong).await else {
        unreachable!("expect_error returns an error frame")
    };
    // Only a lower bound is known: the rest of the line was skipped unread.
    assert!(
        message.starts_with("messages are limited to 16 KB; this one is over ") && message.ends_with(" KB"),
        "{message}"
    );
}

#[tokio::test]
async fn welcome_tells_the_client_the_message_limit_and_the_client_keeps_to_it() {
    let (daemon, _core) = Daemon::start_tweaked(|config| config.max_message_bytes = Some(2048)).await;
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_json(json!({"type": "hello", "version": 1})).await;
    assert!(matches!(
        raw.frame().await,
        ServerFrame::Welcome {
            max_message_bytes: Some(2048),
            ..
        }
    ));
    let mut client = passepartout_socket::Client::connect(&daemon.path, None).await.unwrap();
    let refused = client.send(None, "z".repeat(3000), None).await.unwrap_err();
    assert!(refused.is_too_large(), "{refused:?}");
    assert_eq!(refused.to_string(), "messages are limited to 2 KB; this one is 3 KB");
}

#[tokio::test]
async fn a_line_of_exactly_the_limit_is_read() {
    let (daemon, _core) = Daemon::start_tweaked(|config| config.max_line_bytes = 256).await;
    let mut raw = Raw::connect(&daemon.path).await;
    let frame = |text: &str| format!(r#"{{"type":"message","id":"edge","text":"{text}"}}"#);
    let line = frame(&"y".repeat(256 - frame("").len()));
    assert_eq!(line.len(), 256);
    raw.send_line(line.as_bytes()).await;
    assert_eq!(raw.frame().await, ServerFrame::Accepted { id: "edge".into() });
}

#[tokio::test]
async fn invalid_json_is_reported_and_the_connection_stays_usable() {
    let (daemon, _core) = Daemon::start().await;
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_line(b"{\"type\": \"ping\"").await;
    raw.expect_error(ErrorCode::InvalidJson).await;
    raw.assert_usable().await;
}

#[tokio::test]
async fn an_unknown_type_is_reported_as_such() {
    let (daemon, _core) = Daemon::start().await;
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_json(json!({"type": "subscribe", "topic": "all"})).await;
    raw.expect_error(ErrorCode::UnknownType).await;
    raw.assert_usable().await;
}

#[tokio::test]
async fn invalid_utf8_is_reported_and_the_connection_stays_usable() {
    let (daemon, _core) = Daemon::start().await;
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_line(b"{\"type\":\"message\",\"text\":\"\xc3\x28\"}").await;
    raw.expect_error(ErrorCode::InvalidUtf8).await;
    raw.assert_usable().await;
}

#[tokio::test]
async fn a_known_type_with_a_missing_field_is_a_bad_frame_naming_its_id() {
    let (daemon, _core) = Daemon::start().await;
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_json(json!({"type": "message", "id": "m3"})).await;
    let frame = raw.expect_error(ErrorCode::BadFrame).await;
    assert!(matches!(frame, ServerFrame::Error { id: Some(id), .. } if id == "m3"));
    raw.send_json(json!({"type": "hello", "version": 1, "chat": ""})).await;
    raw.expect_error(ErrorCode::BadFrame).await;
    raw.assert_usable().await;
}

#[tokio::test]
async fn hello_with_version_2_is_unsupported_and_version_1_still_works() {
    let (daemon, _core) = Daemon::start().await;
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_json(json!({"type": "hello", "version": 2})).await;
    raw.expect_error(ErrorCode::UnsupportedVersion).await;
    raw.send_json(json!({"type": "hello", "version": 1})).await;
    assert!(matches!(raw.frame().await, ServerFrame::Welcome { version: 1, .. }));
}

#[tokio::test]
async fn blank_lines_and_crlf_are_tolerated() {
    let (daemon, _core) = Daemon::start().await;
    let mut raw = Raw::connect(&daemon.path).await;
    raw.send_line(b"").await;
    raw.send_line(b"  \r").await;
    raw.send_line(b"{\"type\":\"ping\"}\r").await;
    assert_eq!(raw.frame().await, ServerFrame::Pong {}, "blank lines get no answer");
}
