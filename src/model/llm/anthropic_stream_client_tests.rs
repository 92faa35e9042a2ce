//! The Anthropic client streaming from the fake server of
//! `tests/support/fake_anthropic.rs`, over real loopback HTTP: the same
//! answers as the whole path, text seen piece by piece, and every way a
//! stream can fail turned into a typed error.

use std::time::Duration;

use serde_json::json;

use super::anthropic::tests::fake_anthropic::{FakeAnthropic, Script, StreamEnd, Streamed, text_block, tool_use_block};
use super::anthropic::tests::{client, hello};
use super::stream::testing::Pieces;
use super::*;

/// Streams one answer to `script`; returns it and the pieces the sink saw.
async fn streamed(script: Script) -> (Result<ChatResponse, LlmError>, Vec<String>) {
    let fake = FakeAnthropic::start().await;
    fake.push(script);
    let sink = Pieces::default();
    let answer = client(&fake).stream(&hello(), &sink).await;
    (answer, sink.0.into_inner().unwrap())
}

/// The whole (non-streamed) answer to `script`.
async fn whole(script: Script) -> ChatResponse {
    let fake = FakeAnthropic::start().await;
    fake.push(script);
    client(&fake).complete(&hello()).await.unwrap()
}

#[tokio::test]
async fn a_streamed_reply_arrives_in_pieces_and_equals_the_whole_answer() {
    let script = Script::Text("Grüß dich, 猫 and friends".to_owned());

    let (answer, pieces) = streamed(script.clone()).await;

    assert_eq!(pieces, ["Grüß ", "dich, ", "猫 ", "and ", "friends"]);
    assert_eq!(answer.unwrap(), whole(script).await, "same text, model and usage");
}

#[tokio::test]
async fn only_a_streamed_request_says_stream() {
    let fake = FakeAnthropic::start().await;
    let client = client(&fake);

    client.stream(&hello(), &()).await.unwrap();
    client.complete(&hello()).await.unwrap();

    let requests = fake.message_requests();
    assert_eq!(requests[0]["stream"], true);
    assert!(requests[1].get("stream").is_none(), "{}", requests[1]);
}

#[tokio::test]
async fn text_and_tool_use_deltas_become_the_same_answer_as_the_whole_path() {
    let script = Script::Message {
        content: vec![
            text_block("Let me look."),
            tool_use_block("toolu_1", "read_file", json!({"path": "~/grüße.md", "limit": 10})),
            tool_use_block("toolu_2", "clock", json!({})),
        ],
        stop_reason: "tool_use".to_owned(),
        usage: (42, 17),
    };

    let (answer, pieces) = streamed(script.clone()).await;

    assert_eq!(pieces, ["Let me look."]);
    assert_eq!(answer.unwrap(), whole(script).await);
}

#[tokio::test]
async fn tool_input_cut_mid_json_and_mid_character_is_joined() {
    let script = Script::Stream(Streamed::text(&["On it."]).with_tool_use(
        "toolu_9",
        "clock",
        &[r#"{"zo"#, r#"ne": "Europe/Z"#, r#"ürich"}"#],
    ));

    let answer = streamed(script).await.0.unwrap();

    assert_eq!(
        answer.tool_calls,
        [ToolCall {
            id: "toolu_9".to_owned(),
            name: "clock".to_owned(),
            arguments: json!({"zone": "Europe/Zürich"}).to_string(),
        }]
    );
}

#[tokio::test]
async fn a_stream_that_closes_before_message_stop_is_an_error_after_its_preview() {
    let script = Script::Stream(Streamed::text(&["Half ", "an ", "ans"]).ending(StreamEnd::Close));

    let (answer, pieces) = streamed(script).await;

    assert_eq!(pieces.concat(), "Half an ans");
    assert_eq!(answer, Err(stream::cut_short()));
}

#[tokio::test]
async fn a_broken_connection_mid_stream_is_unreachable() {
    let script = Script::Stream(Streamed::text(&["Half "]).ending(StreamEnd::Abort));

    let (answer, _) = streamed(script).await;

    assert!(matches!(answer, Err(LlmError::Unreachable { .. })), "{answer:?}");
}

#[tokio::test]
async fn an_error_event_is_classified_by_its_type() {
    let end = StreamEnd::Error {
        kind: "overloaded_error".to_owned(),
        message: "Overloaded".to_owned(),
    };
    let (answer, pieces) = streamed(Script::Stream(Streamed::text(&["Hi"]).ending(end))).await;

    assert_eq!(pieces, ["Hi"]);
    assert_eq!(answer, Err(LlmError::Server { status: 529 }));
}

#[tokio::test]
async fn an_error_answer_before_the_stream_is_classified_as_before() {
    let script = Script::Error {
        status: 429,
        kind: "rate_limit_error".to_owned(),
        message: "slow down".to_owned(),
        retry_after: Some(3),
    };

    let (answer, pieces) = streamed(script).await;

    assert!(pieces.is_empty());
    assert_eq!(
        answer,
        Err(LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(3))
        })
    );
}

#[tokio::test]
async fn a_silence_longer_than_the_idle_timeout_is_a_timeout() {
    let fake = FakeAnthropic::start().await;
    fake.push(Script::Stream(
        Streamed::text(&["a", "b"]).spaced(Duration::from_secs(5)),
    ));
    let client = client(&fake).with_idle_timeout(Duration::from_millis(200));

    assert_eq!(client.stream(&hello(), &()).await, Err(LlmError::Timeout));
}

#[tokio::test]
async fn a_stream_over_the_size_cap_is_malformed() {
    let fake = FakeAnthropic::start().await;
    let piece = "x".repeat(1000);
    fake.push(Script::Stream(Streamed::text(&[piece.as_str(); 10])));
    let client = client(&fake).with_stream_cap(4000);

    let answer = client.stream(&hello(), &()).await;

    assert!(matches!(answer, Err(LlmError::Malformed { .. })), "{answer:?}");
}
