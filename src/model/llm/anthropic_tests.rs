//! The Anthropic client against the fake Messages API of
//! `tests/support/fake_anthropic.rs`, over real loopback HTTP: what goes on the
//! wire (and that the fake, enforcing the real API's rules, accepts it), what
//! comes back, and how every kind of failure is classified.

#[path = "../../../tests/support/fake_anthropic.rs"]
pub(in crate::model::llm) mod fake_anthropic;

use crate::config::Secret;
use std::time::Duration;

use serde_json::json;

use self::fake_anthropic::{FakeAnthropic, Script, text_block, tool_use_block};
use super::*;

const KEY: &str = "sk-ant-test-0123456789-secret";
/// Upper bound for waits on the fake; only reached when a test fails.
const WAIT: Duration = Duration::from_secs(5);

fn settings(base_url: String) -> AnthropicSettings {
    AnthropicSettings {
        endpoint: Endpoint {
            name: "claude".to_owned(),
            base_url,
            model: "claude-test".to_owned(),
            api_key: Some(Secret::new(KEY)),
            connect_timeout: Duration::from_secs(2),
            timeout: Duration::from_secs(10),
            vision: false,
            proxy: None,
        },
        max_tokens: 1024,
    }
}

pub(in crate::model::llm) fn client(fake: &FakeAnthropic) -> AnthropicClient {
    AnthropicClient::new(settings(fake.base_url())).expect("valid settings")
}

pub(in crate::model::llm) fn hello() -> ChatRequest {
    ChatRequest {
        max_tokens: None,
        messages: vec![ChatMessage::user("hello there")],
        tools: Vec::new().into(),
    }
}

fn call(id: &str, arguments: &str) -> ToolCall {
    ToolCall {
        id: id.to_owned(),
        name: "read_file".to_owned(),
        arguments: arguments.to_owned(),
    }
}

fn api_error(status: u16, kind: &str, message: &str) -> Script {
    Script::Error {
        status,
        kind: kind.to_owned(),
        message: message.to_owned(),
        retry_after: None,
    }
}

/// Answer one request with `script` and return the error the client reports.
async fn failure(script: Script) -> LlmError {
    let fake = FakeAnthropic::start().await;
    fake.push(script);
    client(&fake)
        .complete(&hello())
        .await
        .expect_err("the scripted failure must surface as an error")
}

#[tokio::test]
async fn tool_call_round_trip() {
    let fake = FakeAnthropic::start().await;
    fake.push(Script::Message {
        content: vec![
            text_block("One more file."),
            tool_use_block("toolu_02", "read_file", json!({"path": "later.md", "limit": 10})),
        ],
        stop_reason: "tool_use".to_owned(),
        usage: (42, 7),
    });
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    });
    let mut asking = ChatMessage::assistant_tool_calls(vec![
        call("toolu_a", r#"{"path":"todo.md"}"#),
        call("toolu_b", r#"{"path":"notes.md"}"#),
    ]);
    asking.content = "Let me look.".to_owned();
    let request = ChatRequest {
        max_tokens: None,
        messages: vec![
            ChatMessage::system("You are passepartout."),
            ChatMessage::user("what's in todo.md and notes.md?"),
            ChatMessage::system("Be brief."),
            asking,
            ChatMessage::tool_result("toolu_a", "buy milk"),
            ChatMessage::tool_result("toolu_b", "call mom"),
        ],
        tools: vec![ToolSpec {
            name: "read_file".to_owned(),
            description: "Read a file in the workspace".to_owned(),
            parameters: schema.clone(),
        }]
        .into(),
    };

    let response = client(&fake)
        .complete(&request)
        .await
        .expect("the fake accepts the request");

    assert_eq!(
        fake.message_requests(),
        [json!({
            "model": "claude-test",
            "max_tokens": 1024,
            "system": "You are passepartout.\n\nBe brief.",
            "messages": [
                {"role": "user", "content": [{"type": "text", "text": "what's in todo.md and notes.md?"}]},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "todo.md"}},
                    {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {"path": "notes.md"}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_a", "content": "buy milk"},
                    {"type": "tool_result", "tool_use_id": "toolu_b", "content": "call mom"},
                ]},
            ],
            "tools": [{"name": "read_file", "description": "Read a file in the workspace", "input_schema": schema}],
        })]
    );
    assert_eq!(
        response,
        ChatResponse {
            content: Some("One more file.".to_owned()),
            tool_calls: vec![ToolCall {
                id: "toolu_02".to_owned(),
                name: "read_file".to_owned(),
                arguments: r#"{"path":"later.md","limit":10}"#.to_owned(),
            }],
            usage: Usage {
                input_tokens: 42,
                output_tokens: 7
            },
            model: "claude-test".to_owned(),
        }
    );
}

#[tokio::test]
async fn plain_text_reply_without_system_or_tools() {
    let fake = FakeAnthropic::start().await;

    let response = client(&fake).complete(&hello()).await.unwrap();

    assert_eq!(
        response,
        ChatResponse {
            content: Some("echo: hello there".to_owned()),
            tool_calls: Vec::new(),
            usage: Usage {
                input_tokens: 2,
                output_tokens: 3
            },
            model: "claude-test".to_owned(),
        }
    );
    let body = &fake.message_requests()[0];
    assert!(body.get("system").is_none(), "{body}");
    assert!(body.get("tools").is_none(), "{body}");
}

#[tokio::test]
async fn api_key_goes_in_x_api_key_with_the_version() {
    let fake = FakeAnthropic::start().await;
    fake.require_api_key(KEY);

    client(&fake).complete(&hello()).await.unwrap();

    let headers = &fake.received()[0].headers;
    assert_eq!(headers["x-api-key"], KEY);
    assert_eq!(headers["anthropic-version"], "2023-06-01");
    assert_eq!(headers["content-type"], "application/json");
    assert!(!headers.contains_key("authorization"), "{headers:?}");
}

#[test]
fn debug_output_never_shows_the_api_key() {
    let settings = settings("http://127.0.0.1:9/v1".to_owned());
    let client = AnthropicClient::new(settings.clone()).unwrap();

    for text in [format!("{settings:?}"), format!("{client:?}"), format!("{client:#?}")] {
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("redacted"), "{text}");
    }
}

#[tokio::test]
async fn rate_limit_reports_retry_after() {
    let error = failure(Script::Error {
        status: 429,
        kind: "rate_limit_error".to_owned(),
        message: "Number of request tokens has exceeded your per-minute rate limit".to_owned(),
        retry_after: Some(3),
    })
    .await;
    assert_eq!(
        error,
        LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(3))
        }
    );
}

#[tokio::test]
async fn overloaded_is_a_server_error() {
    let error = failure(api_error(529, "overloaded_error", "Overloaded")).await;
    assert_eq!(error, LlmError::Server { status: 529 });
    assert!(error.is_transient());
}

#[tokio::test]
async fn bad_credentials_are_unauthorized() {
    let fake = FakeAnthropic::start().await;
    fake.require_api_key("another-key");
    let client = client(&fake);
    assert_eq!(
        client.complete(&hello()).await,
        Err(LlmError::Unauthorized { status: 401 })
    );
    assert_eq!(client.probe().await, Err(LlmError::Unauthorized { status: 401 }));

    let error = failure(api_error(
        403,
        "permission_error",
        "Your API key does not have permission",
    ))
    .await;
    assert_eq!(error, LlmError::Unauthorized { status: 403 });
}

#[tokio::test]
async fn prompt_too_long_is_context_too_long() {
    let error = failure(api_error(
        400,
        "invalid_request_error",
        "prompt is too long: 212345 tokens > 200000 maximum",
    ))
    .await;
    assert_eq!(error, LlmError::ContextTooLong);

    let error = failure(api_error(400, "invalid_request_error", "max_tokens: Field required")).await;
    assert_eq!(
        error,
        LlmError::Rejected {
            status: 400,
            message: "max_tokens: Field required".to_owned()
        }
    );
}

#[tokio::test]
async fn a_success_that_is_not_a_message_is_malformed() {
    let error = failure(Script::Raw("<html><body>this is not JSON</body></html>".to_owned())).await;
    assert!(matches!(error, LlmError::Malformed { .. }), "{error:?}");

    let error = failure(Script::Raw(r#"{"type":"message","role":"assistant"}"#.to_owned())).await;
    assert!(matches!(error, LlmError::Malformed { .. }), "{error:?}");
}

#[tokio::test]
async fn nothing_listening_is_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = AnthropicClient::new(settings(format!("http://127.0.0.1:{port}/v1"))).unwrap();

    let error = client.complete(&hello()).await.unwrap_err();
    assert!(matches!(error, LlmError::Unreachable { .. }), "{error:?}");
    assert!(matches!(client.probe().await, Err(LlmError::Unreachable { .. })));
}

#[tokio::test]
async fn a_hanging_provider_times_out() {
    let fake = FakeAnthropic::start().await;
    fake.push(Script::Hang);
    let mut settings = settings(fake.base_url());
    settings.endpoint.timeout = Duration::from_millis(300);
    let client = AnthropicClient::new(settings).unwrap();

    assert_eq!(client.complete(&hello()).await, Err(LlmError::Timeout));
    let received = fake.wait_for_requests(1, WAIT).await;
    assert_eq!(received[0].path, "/v1/messages", "the request did reach the server");
}

#[tokio::test]
async fn probe_lists_models_with_the_same_headers() {
    let fake = FakeAnthropic::start().await;
    fake.require_api_key(KEY);
    let client = AnthropicClient::new(settings(format!("{}/", fake.base_url()))).unwrap();

    client.probe().await.unwrap();

    let received = fake.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].path, "/v1/models");
    assert_eq!(received[0].headers["anthropic-version"], "2023-06-01");
    assert!(fake.message_requests().is_empty(), "a probe is not a message");
}

#[tokio::test]
async fn the_fake_enforces_alternation_so_the_round_trip_test_can_fail() {
    let fake = FakeAnthropic::start().await;
    let body = json!({
        "model": "claude-test",
        "max_tokens": 16,
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "one"}]},
            {"role": "user", "content": [{"type": "text", "text": "two"}]},
        ],
    });
    let response = reqwest::Client::new()
        .post(format!("{}/messages", fake.base_url()))
        .header("anthropic-version", "2023-06-01")
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 400);
    let answer: serde_json::Value = response.json().await.unwrap();
    assert_eq!(answer["error"]["type"], "invalid_request_error");
}

#[test]
fn tool_input_keeps_objects_and_wraps_everything_else() {
    assert_eq!(tool_input(r#"{"path": "a"}"#), json!({"path": "a"}));
    assert_eq!(tool_input(""), json!({}));
    assert_eq!(tool_input("  "), json!({}));
    for raw in ["not json", "[1, 2]", "\"text\"", "{\"unterminated\":"] {
        assert_eq!(tool_input(raw), json!({ "_raw": raw }), "{raw}");
    }
}

#[test]
fn consecutive_messages_of_one_role_merge_with_tool_results_first() {
    let messages = vec![
        ChatMessage::user("first"),
        ChatMessage::user("second"),
        ChatMessage::assistant_tool_calls(vec![call("toolu_a", "{}"), call("toolu_b", "oops")]),
        ChatMessage::tool_result("toolu_a", "done"),
        ChatMessage::user("and also"),
        ChatMessage::tool_result("toolu_b", "bad arguments"),
        ChatMessage::user(""),
        ChatMessage::assistant("ok"),
        ChatMessage::assistant("really"),
    ];

    let wire = serde_json::to_value(wire_messages(&messages, false)).unwrap();

    assert_eq!(
        wire,
        json!([
            {"role": "user", "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}]},
            {"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {}},
                {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {"_raw": "oops"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_a", "content": "done"},
                {"type": "tool_result", "tool_use_id": "toolu_b", "content": "bad arguments"},
                {"type": "text", "text": "and also"},
            ]},
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "text", "text": "really"}]},
        ])
    );
}

#[test]
fn unknown_blocks_are_skipped_and_a_bare_max_tokens_stop_is_empty() {
    let body = json!({
        "model": "claude-real",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "abc"},
            {"type": "text", "text": "Hel"},
            {"type": "text", "text": "lo"},
        ],
        "usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 2},
    });
    let response = parse_message(body.to_string().as_bytes(), "claude-test").unwrap();
    assert_eq!(response.content.as_deref(), Some("Hello"));
    assert_eq!(response.model, "claude-real");
    assert_eq!(
        response.usage,
        Usage {
            input_tokens: 105,
            output_tokens: 2
        }
    );

    let cut = json!({"content": [], "stop_reason": "max_tokens", "usage": {"input_tokens": 9, "output_tokens": 1}});
    let response = parse_message(cut.to_string().as_bytes(), "claude-test").unwrap();
    assert_eq!((response.content, response.tool_calls.len()), (None, 0));
    assert_eq!(response.model, "claude-test");
}

#[test]
fn invalid_settings_are_rejected_at_construction() {
    let cases = [
        settings("localhost:8080/v1".to_owned()),
        settings("ftp://127.0.0.1/v1".to_owned()),
        {
            let mut settings = settings("http://127.0.0.1:9/v1".to_owned());
            settings.endpoint.api_key = Some(Secret::new("sk-with\na-newline"));
            settings
        },
        AnthropicSettings {
            max_tokens: 0,
            ..settings("http://127.0.0.1:9/v1".to_owned())
        },
    ];
    for case in cases {
        let result = AnthropicClient::new(case.clone());
        assert!(matches!(result, Err(LlmError::Config { .. })), "{case:?}");
    }
}

#[test]
fn name_and_endpoint_come_from_the_settings() {
    let client = AnthropicClient::new(settings(AnthropicSettings::DEFAULT_BASE_URL.to_owned())).unwrap();
    let model: &dyn ChatModel = &client;
    assert_eq!(model.name(), "claude");
    assert_eq!(model.endpoint(), "https://api.anthropic.com/v1");
}

#[tokio::test]
async fn a_vision_model_gets_the_photo_as_a_base64_image_block_before_the_text() {
    let fake = FakeAnthropic::start().await;
    let mut vision = settings(fake.base_url());
    vision.endpoint.vision = true;
    let image = crate::model::llm::Image {
        media: "ab12.png".into(),
        mime: "image/png".into(),
        bytes: Some(std::sync::Arc::from(&b"\x89PNG"[..])),
        tool: None,
    };
    let request = ChatRequest {
        messages: vec![ChatMessage::user_with_images("what is this?", vec![image.clone()])],
        ..ChatRequest::default()
    };

    AnthropicClient::new(vision).unwrap().complete(&request).await.unwrap();
    client(&fake).complete(&request).await.unwrap();

    let requests = fake.message_requests();
    assert_eq!(
        requests[0]["messages"][0]["content"],
        json!([
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
            {"type": "text", "text": "what is this?"},
        ])
    );
    assert_eq!(
        requests[1]["messages"][0]["content"],
        json!([
            {"type": "text", "text": "[a photo (ab12.png) that this model cannot see]"},
            {"type": "text", "text": "what is this?"},
        ])
    );
}

#[tokio::test]
async fn a_tools_image_goes_inside_its_tool_result_as_an_image_block() {
    let fake = FakeAnthropic::start().await;
    let mut vision = settings(fake.base_url());
    vision.endpoint.vision = true;
    let image = crate::model::llm::Image::from_tool("shot", "image/png", b"\x89PNG".to_vec());
    let request = ChatRequest {
        messages: vec![
            ChatMessage::user("take a screenshot"),
            ChatMessage::assistant_tool_calls(vec![crate::model::llm::ToolCall {
                id: "call_1".into(),
                name: "shot".into(),
                arguments: "{}".into(),
            }]),
            ChatMessage::tool_result_with_images("call_1", "here it is", vec![image]),
        ],
        ..ChatRequest::default()
    };

    AnthropicClient::new(vision).unwrap().complete(&request).await.unwrap();
    client(&fake).complete(&request).await.unwrap();

    let requests = fake.message_requests();
    assert_eq!(
        requests[0]["messages"][2]["content"],
        json!([{"type": "tool_result", "tool_use_id": "call_1", "content": [
            {"type": "text", "text": "here it is"},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw=="}},
        ]}])
    );
    assert_eq!(
        requests[1]["messages"][2]["content"][0]["content"],
        json!([
            {"type": "text", "text": "here it is"},
            {"type": "text", "text": "[an image (image/png) from shot that this model cannot see]"},
        ])
    );
}
