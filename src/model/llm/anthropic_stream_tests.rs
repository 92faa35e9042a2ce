//! Assembling Anthropic Messages streams, fed in network chunks of every size.

use serde_json::{Value, json};

use super::*;
use crate::model::llm::stream::testing::assemble;

/// Each value as an event named by its `type`.
fn body(events: &[Value]) -> String {
    events
        .iter()
        .map(|event| format!("event: {}\ndata: {event}\n\n", event["type"].as_str().unwrap()))
        .collect()
}

fn start() -> Value {
    json!({"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
        "model": "claude-x", "content": [], "stop_reason": null,
        "usage": {"input_tokens": 20, "cache_read_input_tokens": 5, "output_tokens": 1}}})
}

fn text_start(index: u64) -> Value {
    json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}})
}

fn text(index: u64, piece: &str) -> Value {
    json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": piece}})
}

fn tool_start(index: u64, id: &str, name: &str) -> Value {
    json!({"type": "content_block_start", "index": index,
        "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}})
}

fn json_piece(index: u64, piece: &str) -> Value {
    json!({"type": "content_block_delta", "index": index,
        "delta": {"type": "input_json_delta", "partial_json": piece}})
}

fn stop_block(index: u64) -> Value {
    json!({"type": "content_block_stop", "index": index})
}

fn end(reason: &str, output: u64) -> [Value; 2] {
    [
        json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null},
            "usage": {"output_tokens": output}}),
        json!({"type": "message_stop"}),
    ]
}

/// Runs `body` through the assembly in chunks of every size; every run must agree.
fn assembled(body: &str) -> (Result<ChatResponse, LlmError>, String) {
    let first = assemble(body, body.len(), EventAssembly::new("asked"));
    for size in 1..body.len() {
        let run = assemble(body, size, EventAssembly::new("asked"));
        assert_eq!(run, first, "chunks of {size} bytes");
    }
    first
}

#[test]
fn text_deltas_reach_the_sink_and_make_the_reply() {
    let mut events = vec![
        start(),
        text_start(0),
        json!({"type": "ping"}),
        text(0, "Grüß "),
        text(0, "dich 猫"),
    ];
    events.push(stop_block(0));
    events.extend(end("end_turn", 7));

    let (answer, seen) = assembled(&body(&events));

    assert_eq!(seen, "Grüß dich 猫");
    assert_eq!(
        answer.unwrap(),
        ChatResponse {
            content: Some("Grüß dich 猫".to_owned()),
            tool_calls: Vec::new(),
            usage: Usage {
                input_tokens: 25,
                output_tokens: 7
            },
            model: "claude-x".to_owned(),
        }
    );
}

#[test]
fn tool_input_split_mid_json_becomes_the_same_call_as_a_whole_answer() {
    let mut events = vec![start(), text_start(0), text(0, "Let me look."), stop_block(0)];
    events.extend([
        tool_start(1, "toolu_a", "read_file"),
        json_piece(1, ""),
        json_piece(1, r#"{"path": "~/gr"#),
        json_piece(1, r#"ü.md", "li"#),
        json_piece(1, r#"mit": 10}"#),
        stop_block(1),
        tool_start(2, "toolu_b", "clock"),
        stop_block(2),
    ]);
    events.extend(end("tool_use", 30));

    let (answer, seen) = assembled(&body(&events));

    assert_eq!(seen, "Let me look.");
    let answer = answer.unwrap();
    assert_eq!(answer.content.as_deref(), Some("Let me look."));
    assert_eq!(
        answer.tool_calls,
        [
            ToolCall {
                id: "toolu_a".to_owned(),
                name: "read_file".to_owned(),
                // As the whole answer's `input` object prints.
                arguments: json!({"path": "~/grü.md", "limit": 10}).to_string(),
            },
            ToolCall {
                id: "toolu_b".to_owned(),
                name: "clock".to_owned(),
                arguments: "{}".to_owned(),
            },
        ]
    );
}

#[test]
fn tool_input_that_is_not_json_is_kept_as_it_came() {
    let mut events = vec![start(), tool_start(0, "", "shell"), json_piece(0, "{\"cmd\": ")];
    events.extend(end("max_tokens", 3));

    let answer = assembled(&body(&events)).0.unwrap();

    assert_eq!(answer.tool_calls[0].id, "toolu_0");
    assert_eq!(answer.tool_calls[0].arguments, "{\"cmd\": ");
}

#[test]
fn a_stream_without_message_stop_is_cut_not_half_an_answer() {
    let events = [start(), text_start(0), text(0, "Half an ans"), text(0, "wer")];

    let (answer, seen) = assembled(&body(&events));

    assert_eq!(seen, "Half an answer", "the preview was shown");
    assert_eq!(answer, Err(crate::model::llm::stream::cut_short()));

    // Even the stop reason is not enough: only `message_stop` ends it.
    let mut events = vec![start(), text_start(0), text(0, "all")];
    events.push(end("end_turn", 1)[0].clone());
    assert_eq!(assembled(&body(&events)).0, Err(crate::model::llm::stream::cut_short()));
}

#[test]
fn error_events_are_classified_as_their_http_answers_would_be() {
    let error = |kind: &str, message: &str| json!({"type": "error", "error": {"type": kind, "message": message}});
    let cases = [
        (
            error("overloaded_error", "Overloaded"),
            LlmError::Server { status: 529 },
        ),
        (error("api_error", "boom"), LlmError::Server { status: 500 }),
        (
            error("rate_limit_error", "slow down"),
            LlmError::RateLimited { retry_after: None },
        ),
        (
            error("authentication_error", "bad key"),
            LlmError::Unauthorized { status: 401 },
        ),
        (
            error(
                "invalid_request_error",
                "prompt is too long: 300000 tokens > 200000 maximum",
            ),
            LlmError::ContextTooLong,
        ),
        (error("something_new", "?"), LlmError::Server { status: 500 }),
    ];
    for (event, expected) in cases {
        let events = [start(), text_start(0), text(0, "a"), event.clone()];
        assert_eq!(assembled(&body(&events)).0, Err(expected), "{event}");
    }
}

#[test]
fn input_for_a_block_that_is_no_tool_is_malformed() {
    let events = [start(), text_start(0), json_piece(0, "{}")];
    assert!(matches!(assembled(&body(&events)).0, Err(LlmError::Malformed { .. })));
}

#[test]
fn an_event_that_is_not_json_is_malformed() {
    let (answer, _) = assembled("event: message_start\ndata: {oops\n\n");
    assert!(matches!(answer, Err(LlmError::Malformed { .. })), "{answer:?}");
}
