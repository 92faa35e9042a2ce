//! The OpenAI-compatible client streaming from the fake server of
//! `tests/support/fake_llm.rs`, over real loopback HTTP: the same answers as
//! the whole path, text seen piece by piece, and every way a stream can fail
//! turned into a typed error.

use std::time::Duration;

use serde_json::json;
use tokio::sync::mpsc;

use super::stream::testing::Pieces;
use super::tests::fake_llm::{FakeLlm, Script, StreamEnd, Streamed};
use super::tests::{client, hello};
use super::*;

/// Streams one answer to `script`; returns it and the pieces the sink saw.
async fn streamed(script: Script) -> (Result<ChatResponse, LlmError>, Vec<String>) {
    let fake = FakeLlm::start().await;
    fake.push(script);
    let sink = Pieces::default();
    let answer = client(&fake).stream(&hello(), &sink).await;
    (answer, sink.0.into_inner().unwrap())
}

/// The whole (non-streamed) answer to `script`.
async fn whole(script: Script) -> ChatResponse {
    let fake = FakeLlm::start().await;
    fake.push(script);
    client(&fake).complete(&hello()).await.unwrap()
}

#[tokio::test]
async fn a_streamed_reply_arrives_in_pieces_and_equals_the_whole_answer() {
    let script = Script::Reply("Grüß dich, 猫 and friends".to_owned());

    let (answer, pieces) = streamed(script.clone()).await;

    assert_eq!(pieces, ["Grüß ", "dich, ", "猫 ", "and ", "friends"]);
    assert_eq!(answer.unwrap(), whole(script).await, "same text, model and usage");
}

#[tokio::test]
async fn the_request_asks_for_a_stream_with_usage_and_a_whole_one_does_not() {
    let fake = FakeLlm::start().await;
    let client = client(&fake);

    client.stream(&hello(), &()).await.unwrap();
    client.complete(&hello()).await.unwrap();

    let requests = fake.requests();
    assert_eq!(requests[0]["stream"], true);
    assert_eq!(requests[0]["stream_options"], json!({"include_usage": true}));
    assert!(requests[1].get("stream").is_none(), "{}", requests[1]);
    assert!(requests[1].get("stream_options").is_none());
}

#[tokio::test]
async fn tool_call_deltas_become_the_same_call_as_the_whole_answer() {
    let script = Script::ToolCall {
        name: "read_file".to_owned(),
        arguments: r#"{"path": "~/grüße.md", "limit": 10}"#.to_owned(),
    };

    let (answer, pieces) = streamed(script.clone()).await;

    assert!(pieces.is_empty(), "tool calls are not shown: {pieces:?}");
    assert_eq!(answer.unwrap(), whole(script).await);
}

#[tokio::test]
async fn text_then_a_call_cut_mid_json_are_both_kept() {
    let script = Script::Stream(Streamed {
        text: vec!["Let me ".to_owned(), "look.".to_owned()],
        ..Streamed::tool_call("clock", &[r#"{"zo"#, r#"ne": "Europe/Z"#, r#"ürich"}"#])
    });

    let (answer, pieces) = streamed(script).await;

    let answer = answer.unwrap();
    assert_eq!(pieces.concat(), "Let me look.");
    assert_eq!(answer.content.as_deref(), Some("Let me look."));
    assert_eq!(
        answer.tool_calls,
        [ToolCall {
            id: "call_1".to_owned(),
            name: "clock".to_owned(),
            arguments: r#"{"zone": "Europe/Zürich"}"#.to_owned(),
        }]
    );
}

#[tokio::test]
async fn a_stream_that_closes_before_its_end_is_an_error_after_its_preview() {
    let script = Script::Stream(Streamed::text(&["Half ", "an ", "ans"]).ending(StreamEnd::Close));

    let (answer, pieces) = streamed(script).await;

    assert_eq!(pieces.concat(), "Half an ans");
    let error = answer.unwrap_err();
    assert_eq!(error, stream::cut_short());
    assert!(error.is_transient(), "another provider may answer");
}

#[tokio::test]
async fn a_broken_connection_mid_stream_is_unreachable() {
    let script = Script::Stream(Streamed::text(&["Half ", "an "]).ending(StreamEnd::Abort));

    let (answer, _) = streamed(script).await;

    assert!(matches!(answer, Err(LlmError::Unreachable { .. })), "{answer:?}");
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_a_typed_error() {
    let error = json!({"message": "model overloaded", "type": "server_error", "code": 503});
    let script = Script::Stream(Streamed::text(&["Hi"]).ending(StreamEnd::Error(error)));

    let (answer, pieces) = streamed(script).await;

    assert_eq!(pieces, ["Hi"]);
    assert_eq!(answer, Err(LlmError::Server { status: 503 }));
}

#[tokio::test]
async fn an_error_status_before_the_stream_is_classified_as_before() {
    let (answer, pieces) = streamed(Script::Status {
        code: 429,
        retry_after: Some(7),
        body: None,
    })
    .await;

    assert!(pieces.is_empty());
    assert_eq!(
        answer,
        Err(LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(7))
        })
    );
}

#[tokio::test]
async fn a_server_that_answers_whole_anyway_is_understood() {
    let body = json!({"model": "m", "choices": [{"message": {"role": "assistant", "content": "all at once"}}]});
    let script = Script::Status {
        code: 200,
        retry_after: None,
        body: Some(body.to_string()),
    };

    let (answer, pieces) = streamed(script).await;

    assert_eq!(pieces, ["all at once"]);
    assert_eq!(answer.unwrap().content.as_deref(), Some("all at once"));
}

#[tokio::test]
async fn a_silence_longer_than_the_idle_timeout_is_a_timeout() {
    let fake = FakeLlm::start().await;
    let slow = Streamed::text(&["a", "b"]).spaced(Duration::from_secs(5));
    fake.push(Script::Stream(slow));
    let client = client(&fake).with_idle_timeout(Duration::from_millis(200));

    let answer = client.stream(&hello(), &()).await;

    assert_eq!(answer, Err(LlmError::Timeout));
}

#[tokio::test]
async fn a_stream_over_the_size_cap_is_malformed() {
    let fake = FakeLlm::start().await;
    let piece = "x".repeat(1000);
    fake.push(Script::Stream(Streamed::text(&[piece.as_str(); 10])));
    let client = client(&fake).with_stream_cap(4000);

    let answer = client.stream(&hello(), &()).await;

    assert!(matches!(answer, Err(LlmError::Malformed { .. })), "{answer:?}");
}

#[tokio::test]
async fn a_slow_stream_hands_every_piece_to_a_channel_in_order() {
    let fake = FakeLlm::start().await;
    let slow = Streamed::text(&["first ", "second ", "third"]).spaced(Duration::from_millis(50));
    fake.push(Script::Stream(slow));
    let (sender, mut receiver) = mpsc::unbounded_channel();
    let client = client(&fake);

    let answer = client.stream(&hello(), &sender).await.unwrap();

    let mut seen = Vec::new();
    while let Ok(piece) = receiver.try_recv() {
        seen.push(piece);
    }
    assert_eq!(seen, ["first ", "second ", "third"]);
    assert_eq!(answer.content.as_deref(), Some("first second third"));
}

#[tokio::test]
async fn a_model_that_cannot_stream_hands_the_whole_text_at_once() {
    let model = testing::Scripted::new("plain", Vec::new());
    let sink = Pieces::default();

    let answer = model.stream(&hello(), &sink).await.unwrap();

    assert_eq!(sink.0.into_inner().unwrap(), ["ok from plain"]);
    assert_eq!(answer.content.as_deref(), Some("ok from plain"));
}
