//! Assembling OpenAI-compatible streams, fed in network chunks of every size.

use serde_json::{Value, json};

use super::*;
use crate::model::llm::stream::testing::assemble;

/// One `data:` event per chunk value, then `[DONE]` when `done`.
fn body(chunks: &[Value], done: bool) -> String {
    let mut body: String = chunks.iter().map(|chunk| format!("data: {chunk}\n\n")).collect();
    if done {
        body.push_str("data: [DONE]\n\n");
    }
    body
}

fn text(piece: &str) -> Value {
    json!({"model": "m-1", "choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"model": "m-1", "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}

fn usage(prompt: u64, completion: u64) -> Value {
    json!({"model": "m-1", "choices": [], "usage": {"prompt_tokens": prompt, "completion_tokens": completion}})
}

fn call_delta(index: u64, id: Option<&str>, name: Option<&str>, arguments: &str) -> Value {
    let mut call = json!({"index": index, "function": {"arguments": arguments}});
    if let Some(id) = id {
        call["id"] = json!(id);
        call["type"] = json!("function");
    }
    if let Some(name) = name {
        call["function"]["name"] = json!(name);
    }
    json!({"model": "m-1", "choices": [{"index": 0, "delta": {"tool_calls": [call]}}]})
}

/// Runs `body` through the assembly in chunks of every size; every run must agree.
fn assembled(body: &str) -> (Result<ChatResponse, LlmError>, String) {
    let first = assemble(body, body.len(), ChunkAssembly::new("asked"));
    for size in 1..body.len() {
        let run = assemble(body, size, ChunkAssembly::new("asked"));
        assert_eq!(run, first, "chunks of {size} bytes");
    }
    first
}

#[test]
fn text_pieces_reach_the_sink_and_make_the_reply() {
    let body = body(
        &[text("Grüß "), text("dich, "), text("猫!"), finish("stop"), usage(12, 3)],
        true,
    );

    let (answer, seen) = assembled(&body);

    assert_eq!(seen, "Grüß dich, 猫!");
    assert_eq!(
        answer.unwrap(),
        ChatResponse {
            content: Some("Grüß dich, 猫!".to_owned()),
            tool_calls: Vec::new(),
            usage: Usage {
                input_tokens: 12,
                output_tokens: 3
            },
            model: "m-1".to_owned(),
        }
    );
}

#[test]
fn tool_call_arguments_split_mid_json_are_joined_in_order() {
    let body = body(
        &[
            call_delta(0, Some("call_a"), Some("read_file"), ""),
            call_delta(0, None, None, r#"{"pa"#),
            call_delta(1, Some("call_b"), Some("clock"), "{}"),
            call_delta(0, None, None, r#"th": "~/ü.md", "#),
            call_delta(0, None, None, r#""limit":10}"#),
            finish("tool_calls"),
            usage(5, 9),
        ],
        true,
    );

    let (answer, seen) = assembled(&body);

    assert_eq!(seen, "");
    let answer = answer.unwrap();
    assert_eq!(answer.content, None);
    assert_eq!(
        answer.tool_calls,
        [
            ToolCall {
                id: "call_a".to_owned(),
                name: "read_file".to_owned(),
                arguments: r#"{"path": "~/ü.md", "limit":10}"#.to_owned(),
            },
            ToolCall {
                id: "call_b".to_owned(),
                name: "clock".to_owned(),
                arguments: "{}".to_owned(),
            },
        ]
    );
}

#[test]
fn calls_without_ids_or_indexes_get_them_as_in_a_whole_answer() {
    let whole = json!({"choices": [{"delta": {"tool_calls": [
        {"function": {"name": "a", "arguments": {"x": 1}}},
        {"function": {"name": "b", "arguments": "{}"}},
    ]}, "finish_reason": "tool_calls"}]});

    let (answer, _) = assembled(&body(&[whole], true));

    let answer = answer.unwrap();
    assert_eq!(answer.model, "asked");
    let calls: Vec<_> = answer
        .tool_calls
        .iter()
        .map(|c| (&*c.id, &*c.name, &*c.arguments))
        .collect();
    assert_eq!(calls, [("call_0", "a", r#"{"x":1}"#), ("call_1", "b", "{}")]);
}

#[test]
fn a_stream_cut_before_its_finish_is_an_error_not_a_half_answer() {
    let body = body(&[text("Half an ans"), text("wer")], false);

    let (answer, seen) = assembled(&body);

    assert_eq!(seen, "Half an answer", "the preview was shown");
    assert_eq!(answer, Err(crate::model::llm::stream::cut_short()));
    assert!(answer.unwrap_err().is_transient());
}

#[test]
fn a_half_sent_event_at_the_end_is_a_cut() {
    let mut body = body(&[text("one")], false);
    body.push_str(r#"data: {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}"#);

    assert_eq!(assembled(&body).0, Err(crate::model::llm::stream::cut_short()));
}

#[test]
fn a_finish_reason_without_done_is_whole() {
    let body = body(&[text("all of it"), finish("stop")], false);

    assert_eq!(assembled(&body).0.unwrap().content.as_deref(), Some("all of it"));
}

#[test]
fn an_error_chunk_is_classified_by_the_status_it_names() {
    let overloaded = json!({"error": {"message": "overloaded", "type": "server_error", "code": 503}});
    let (answer, _) = assembled(&body(&[text("a"), overloaded], true));
    assert_eq!(answer, Err(LlmError::Server { status: 503 }));

    let too_long = json!({"error": {"message": "too long", "code": "context_length_exceeded"}});
    let (answer, _) = assembled(&body(&[too_long], true));
    assert_eq!(answer, Err(LlmError::ContextTooLong));

    let unnamed = json!({"error": {"message": "oops"}});
    let (answer, _) = assembled(&body(&[unnamed], true));
    assert_eq!(answer, Err(LlmError::Server { status: 500 }));

    let rejected = json!({"error": {"message": "bad tool", "type": "BadRequestError", "code": 400}});
    let (answer, _) = assembled(&body(&[rejected], true));
    assert_eq!(
        answer,
        Err(LlmError::Rejected {
            status: 400,
            message: "bad tool".to_owned()
        })
    );
}

#[test]
fn a_chunk_that_is_not_json_is_malformed() {
    let (answer, _) = assembled("data: {\"choices\": [\n\n");
    assert!(matches!(answer, Err(LlmError::Malformed { .. })), "{answer:?}");
}
