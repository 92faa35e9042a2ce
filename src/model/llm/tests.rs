//! The OpenAI-compatible client against the fake server of
//! `tests/support/fake_llm.rs`, over real loopback HTTP: what goes on the wire,
//! what comes back, and how every kind of failure is classified.

#[path = "../../../tests/support/fake_llm.rs"]
pub(super) mod fake_llm;

use crate::config::Secret;
use std::time::Duration;

use serde_json::json;

use self::fake_llm::{FakeLlm, Script, last_user_text};
use super::*;

const KEY: &str = "sk-test-0123456789-secret";
/// Upper bound for waits on the fake; only reached when a test fails.
const WAIT: Duration = Duration::from_secs(5);

fn settings(base_url: String) -> OpenAiSettings {
    OpenAiSettings {
        name: "local".to_owned(),
        base_url,
        model: "test-model".to_owned(),
        api_key: Some(Secret::new(KEY)),
        connect_timeout: Duration::from_secs(2),
        timeout: Duration::from_secs(10),
        vision: false,
        proxy: None,
    }
}

pub(in crate::model::llm) fn client(fake: &FakeLlm) -> OpenAiClient {
    OpenAiClient::new(settings(fake.base_url())).expect("valid settings")
}

pub(in crate::model::llm) fn hello() -> ChatRequest {
    ChatRequest {
        max_tokens: None,
        messages: vec![ChatMessage::user("hello there")],
        tools: Vec::new().into(),
    }
}

/// Answer one request with `script` and return the error the client reports.
async fn failure(script: Script) -> LlmError {
    let fake = FakeLlm::start().await;
    fake.push(script);
    client(&fake)
        .complete(&hello())
        .await
        .expect_err("the scripted failure must surface as an error")
}

fn raw(code: u16, body: serde_json::Value) -> Script {
    Script::Status {
        code,
        retry_after: None,
        body: Some(body.to_string()),
    }
}

#[tokio::test]
async fn default_responder_echoes_the_last_user_message() {
    let fake = FakeLlm::start().await;
    let request = ChatRequest {
        max_tokens: None,
        messages: vec![
            ChatMessage::system("be brief"),
            ChatMessage::user("first"),
            ChatMessage::assistant("ok"),
            ChatMessage::user("ping"),
        ],
        tools: Vec::new().into(),
    };

    let response = client(&fake).complete(&request).await.unwrap();

    assert_eq!(
        response,
        ChatResponse {
            content: Some("echo: ping".to_owned()),
            tool_calls: Vec::new(),
            usage: Usage {
                input_tokens: 5,
                output_tokens: 2
            },
            model: "test-model".to_owned(),
        }
    );
}

#[tokio::test]
async fn scripted_replies_answer_in_order_before_the_responder() {
    let fake = FakeLlm::start().await;
    fake.push(Script::Reply("one".to_owned()));
    fake.push(Script::Reply("two words".to_owned()));
    let client = client(&fake);

    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(client.complete(&hello()).await.unwrap().content);
    }

    assert_eq!(
        answers,
        [
            Some("one".to_owned()),
            Some("two words".to_owned()),
            Some("echo: hello there".to_owned())
        ]
    );
}

#[tokio::test]
async fn tool_call_is_parsed_and_its_arguments_kept_raw() {
    let fake = FakeLlm::start().await;
    // Odd spacing and key order: the client must not re-encode it.
    let arguments = r#"{ "path" :"~/notes/todo.md",  "limit":10 }"#;
    fake.push(Script::ToolCall {
        name: "read_file".to_owned(),
        arguments: arguments.to_owned(),
    });

    let response = client(&fake).complete(&hello()).await.unwrap();

    assert_eq!(response.content, None);
    assert_eq!(
        response.tool_calls,
        [ToolCall {
            id: "call_1".to_owned(),
            name: "read_file".to_owned(),
            arguments: arguments.to_owned(),
        }]
    );
}

#[tokio::test]
async fn responder_decides_from_the_request() {
    let fake = FakeLlm::start().await;
    fake.set_responder(|request| {
        if last_user_text(request).contains("weather") {
            Script::ToolCall {
                name: "http_get".to_owned(),
                arguments: "{}".to_owned(),
            }
        } else {
            Script::Reply("no tool needed".to_owned())
        }
    });
    let client = client(&fake);

    let weather = ChatRequest {
        max_tokens: None,
        messages: vec![ChatMessage::user("what's the weather?")],
        tools: Vec::new().into(),
    };
    assert_eq!(client.complete(&weather).await.unwrap().tool_calls[0].name, "http_get");
    assert_eq!(
        client.complete(&hello()).await.unwrap().content.as_deref(),
        Some("no tool needed")
    );
}

#[tokio::test]
async fn request_carries_model_messages_tools_and_bearer_key() {
    let fake = FakeLlm::start().await;
    let call = ToolCall {
        id: "call_1".to_owned(),
        name: "read_file".to_owned(),
        arguments: r#"{"path":"todo.md"}"#.to_owned(),
    };
    let schema = json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    });
    let request = ChatRequest {
        max_tokens: None,
        messages: vec![
            ChatMessage::system("You are passepartout."),
            ChatMessage::user("what's in todo.md?"),
            ChatMessage::assistant_tool_calls(vec![call]),
            ChatMessage::tool_result("call_1", "buy milk"),
        ],
        tools: vec![ToolSpec {
            name: "read_file".to_owned(),
            description: "Read a file in the workspace".to_owned(),
            parameters: schema.clone(),
        }]
        .into(),
    };

    client(&fake).complete(&request).await.unwrap();

    let bodies = fake.requests();
    assert_eq!(
        bodies,
        [json!({
            "model": "test-model",
            "messages": [
                {"role": "system", "content": "You are passepartout."},
                {"role": "user", "content": "what's in todo.md?"},
                {"role": "assistant", "content": null, "tool_calls": [{
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": "{\"path\":\"todo.md\"}"},
                }]},
                {"role": "tool", "tool_call_id": "call_1", "content": "buy milk"},
            ],
            "tools": [{
                "type": "function",
                "function": {
                    "name": "read_file",
                    "description": "Read a file in the workspace",
                    "parameters": schema,
                },
            }],
        })]
    );
    let headers = &fake.request_headers()[0];
    assert_eq!(headers["authorization"], format!("Bearer {KEY}"));
    assert_eq!(headers["content-type"], "application/json");
}

#[tokio::test]
async fn no_key_means_no_authorization_header_and_no_tools_means_no_tools_field() {
    let fake = FakeLlm::start().await;
    let client = OpenAiClient::new(OpenAiSettings {
        api_key: None,
        ..settings(fake.base_url())
    })
    .unwrap();

    client.complete(&hello()).await.unwrap();

    let body = &fake.requests()[0];
    assert!(body.get("tools").is_none(), "{body}");
    assert!(!fake.request_headers()[0].contains_key("authorization"));
}

#[tokio::test]
async fn trailing_slash_in_base_url_is_tolerated() {
    let fake = FakeLlm::start().await;
    let client = OpenAiClient::new(settings(format!("{}/", fake.base_url()))).unwrap();

    assert!(client.complete(&hello()).await.is_ok());
    client.probe().await.unwrap();
    assert_eq!(fake.requests().len(), 1);
}

#[tokio::test]
async fn rate_limit_reports_retry_after() {
    let error = failure(Script::Status {
        code: 429,
        retry_after: Some(2),
        body: None,
    })
    .await;
    assert_eq!(
        error,
        LlmError::RateLimited {
            retry_after: Some(Duration::from_secs(2))
        }
    );
    assert_eq!(
        failure(Script::status(429)).await,
        LlmError::RateLimited { retry_after: None }
    );
}

#[tokio::test]
async fn bad_credentials_are_unauthorized() {
    for code in [401, 403] {
        assert_eq!(
            failure(Script::status(code)).await,
            LlmError::Unauthorized { status: code }
        );
    }
}

#[tokio::test]
async fn server_errors_keep_their_status() {
    for code in [500, 502, 503] {
        assert_eq!(failure(Script::status(code)).await, LlmError::Server { status: code });
    }
}

#[tokio::test]
async fn context_length_exceeded_is_its_own_variant() {
    let error = failure(raw(
        400,
        json!({"error": {
            "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }}),
    ))
    .await;
    assert_eq!(error, LlmError::ContextTooLong);

    // llama.cpp server says it in `type`, with the HTTP status as `code`.
    let error = failure(raw(
        400,
        json!({"error": {"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}}),
    ))
    .await;
    assert_eq!(error, LlmError::ContextTooLong);

    // Words in the message are not a code: this stays a plain rejection.
    let error = failure(raw(
        400,
        json!({"error": {"message": "context_length_exceeded", "type": "invalid_request_error", "code": null}}),
    ))
    .await;
    assert!(matches!(error, LlmError::Rejected { status: 400, .. }), "{error:?}");
}

#[tokio::test]
async fn other_client_errors_are_rejected_with_the_providers_message() {
    let error = failure(raw(
        400,
        json!({"error": {"message": "tools[0].function.name is invalid", "type": "invalid_request_error", "code": null}}),
    ))
    .await;
    assert_eq!(
        error,
        LlmError::Rejected {
            status: 400,
            message: "tools[0].function.name is invalid".to_owned()
        }
    );
    assert!(matches!(
        failure(Script::status(404)).await,
        LlmError::Rejected { status: 404, .. }
    ));
}

#[tokio::test]
async fn rejection_message_comes_from_any_common_error_shape() {
    let cases = [
        (r#"{"error":"model not found"}"#, "model not found"),
        (
            r#"{"object":"error","message":"unknown model","type":"NotFoundError","code":404}"#,
            "unknown model",
        ),
        ("plain text explanation\n", "plain text explanation"),
        ("", "Not Found"),
    ];
    for (body, expected) in cases {
        let error = failure(Script::Status {
            code: 404,
            retry_after: None,
            body: Some(body.to_owned()),
        })
        .await;
        assert_eq!(
            error,
            LlmError::Rejected {
                status: 404,
                message: expected.to_owned()
            }
        );
    }
}

#[tokio::test]
async fn garbage_is_malformed() {
    assert!(matches!(failure(Script::Garbage).await, LlmError::Malformed { .. }));
}

#[tokio::test]
async fn a_completion_without_choices_is_malformed() {
    let error = failure(raw(200, json!({"id": "x", "object": "chat.completion", "choices": []}))).await;
    assert!(matches!(error, LlmError::Malformed { .. }), "{error:?}");
}

#[tokio::test]
async fn sparse_responses_from_local_servers_are_accepted() {
    // No usage, no model, no tool call id, arguments as an object.
    let fake = FakeLlm::start().await;
    fake.push(raw(
        200,
        json!({"choices": [{"message": {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "read_file", "arguments": {"path": "a"}}}],
        }}]}),
    ));

    let response = client(&fake).complete(&hello()).await.unwrap();

    assert_eq!(
        response,
        ChatResponse {
            content: None,
            tool_calls: vec![ToolCall {
                id: "call_0".to_owned(),
                name: "read_file".to_owned(),
                arguments: r#"{"path":"a"}"#.to_owned(),
            }],
            usage: Usage::default(),
            model: "test-model".to_owned(),
        }
    );
}

#[tokio::test]
async fn a_hanging_provider_times_out() {
    let fake = FakeLlm::start().await;
    fake.push(Script::Hang);
    let client = OpenAiClient::new(OpenAiSettings {
        timeout: Duration::from_millis(200),
        ..settings(fake.base_url())
    })
    .unwrap();

    assert_eq!(client.complete(&hello()).await, Err(LlmError::Timeout));
    assert_eq!(fake.requests().len(), 1, "the request did reach the server");
}

#[tokio::test]
async fn nothing_listening_is_unreachable() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let client = OpenAiClient::new(settings(format!("http://127.0.0.1:{port}/v1"))).unwrap();

    let error = client.complete(&hello()).await.unwrap_err();
    assert!(matches!(error, LlmError::Unreachable { .. }), "{error:?}");
    assert!(matches!(client.probe().await, Err(LlmError::Unreachable { .. })));
}

#[tokio::test]
async fn a_shut_down_provider_is_unreachable_even_over_a_pooled_connection() {
    let fake = FakeLlm::start().await;
    let client = client(&fake);
    client.complete(&hello()).await.unwrap();

    fake.shutdown();

    let error = client.complete(&hello()).await.unwrap_err();
    assert!(matches!(error, LlmError::Unreachable { .. }), "{error:?}");
}

#[tokio::test]
async fn requests_are_recorded_before_a_delay_and_shutdown_cuts_them() {
    let fake = FakeLlm::start().await;
    fake.push(Script::Delay(
        Duration::from_secs(3600),
        Box::new(Script::Reply("too late".to_owned())),
    ));
    let client = client(&fake);
    let call = tokio::spawn(async move { client.complete(&hello()).await });

    let received = fake.wait_for_requests(1, WAIT).await;
    assert_eq!(last_user_text(&received[0]), "hello there");
    assert!(!call.is_finished(), "the answer is still delayed");

    fake.shutdown();

    let error = call.await.unwrap().unwrap_err();
    assert!(matches!(error, LlmError::Unreachable { .. }), "{error:?}");
}

#[tokio::test]
async fn a_short_delay_then_answers() {
    let fake = FakeLlm::start().await;
    fake.push(Script::Delay(
        Duration::from_millis(20),
        Box::new(Script::Reply("done".to_owned())),
    ));

    let response = client(&fake).complete(&hello()).await.unwrap();

    assert_eq!(response.content.as_deref(), Some("done"));
}

#[tokio::test(start_paused = true)]
#[should_panic(expected = "expected at least 2 chat request(s)")]
async fn waiting_for_requests_that_never_come_panics_clearly() {
    let fake = FakeLlm::start().await;
    fake.wait_for_requests(2, WAIT).await;
}

#[tokio::test]
async fn probe_lists_models() {
    let fake = FakeLlm::start().await;
    fake.require_api_key(KEY);

    client(&fake).probe().await.unwrap();
    assert!(fake.requests().is_empty(), "a probe is not a chat request");
}

#[tokio::test]
async fn probe_with_a_wrong_key_is_unauthorized() {
    let fake = FakeLlm::start().await;
    fake.require_api_key("another-key");
    fake.push(Script::Reply("kept for an authorized request".to_owned()));
    let client = client(&fake);

    assert_eq!(client.probe().await, Err(LlmError::Unauthorized { status: 401 }));
    assert_eq!(
        client.complete(&hello()).await,
        Err(LlmError::Unauthorized { status: 401 })
    );
}

#[test]
fn debug_output_never_shows_the_api_key() {
    let settings = settings("http://127.0.0.1:9/v1".to_owned());
    let client = OpenAiClient::new(settings.clone()).unwrap();

    for text in [format!("{settings:?}"), format!("{client:?}"), format!("{client:#?}")] {
        assert!(!text.contains(KEY), "{text}");
        assert!(text.contains("redacted"), "{text}");
    }
}

#[test]
fn invalid_settings_are_rejected_at_construction() {
    let bad_url = OpenAiClient::new(settings("localhost:11434/v1".to_owned()));
    assert!(matches!(bad_url, Err(LlmError::Config { .. })), "{bad_url:?}");

    let not_http = OpenAiClient::new(settings("ftp://127.0.0.1/v1".to_owned()));
    assert!(matches!(not_http, Err(LlmError::Config { .. })), "{not_http:?}");

    let bad_key = OpenAiClient::new(OpenAiSettings {
        api_key: Some(Secret::new("sk-with\na-newline")),
        ..settings("http://127.0.0.1:9/v1".to_owned())
    });
    assert!(matches!(bad_key, Err(LlmError::Config { .. })), "{bad_key:?}");
}

#[test]
fn name_and_endpoint_come_from_the_settings() {
    let client = OpenAiClient::new(settings("http://127.0.0.1:9/v1".to_owned())).unwrap();
    let model: &dyn ChatModel = &client;
    assert_eq!(model.name(), "local");
    assert_eq!(model.endpoint(), "http://127.0.0.1:9/v1");
}

#[test]
fn only_waiting_can_fix_transient_errors() {
    let transient = [
        LlmError::RateLimited { retry_after: None },
        LlmError::Server { status: 502 },
        LlmError::Timeout,
        LlmError::Unreachable {
            reason: "refused".to_owned(),
        },
    ];
    let permanent = [
        LlmError::Unauthorized { status: 401 },
        LlmError::ContextTooLong,
        LlmError::Malformed {
            reason: "html".to_owned(),
        },
        LlmError::Rejected {
            status: 404,
            message: "no such model".to_owned(),
        },
        LlmError::Config {
            reason: "bad url".to_owned(),
        },
    ];
    assert!(transient.iter().all(LlmError::is_transient));
    assert!(!permanent.iter().any(LlmError::is_transient));
}

#[test]
fn messages_persist_as_compact_json() {
    let user = ChatMessage::user("hi");
    assert_eq!(
        serde_json::to_value(&user).unwrap(),
        json!({"role": "user", "content": "hi"})
    );

    let calls = ChatMessage::assistant_tool_calls(vec![ToolCall {
        id: "call_1".to_owned(),
        name: "shell".to_owned(),
        arguments: r#"{"cmd":"git pull"}"#.to_owned(),
    }]);
    let result = ChatMessage::tool_result("call_1", "Already up to date.");
    assert_eq!(
        serde_json::to_value(&result).unwrap(),
        json!({"role": "tool", "content": "Already up to date.", "tool_call_id": "call_1"})
    );
    for message in [user, calls, result] {
        let text = serde_json::to_string(&message).unwrap();
        assert_eq!(serde_json::from_str::<ChatMessage>(&text).unwrap(), message);
    }
}

fn with_photo(bytes: Option<&[u8]>) -> ChatRequest {
    let image = Image {
        media: "ab12.png".into(),
        mime: "image/png".into(),
        bytes: bytes.map(std::sync::Arc::from),
        tool: None,
    };
    ChatRequest {
        messages: vec![ChatMessage::user_with_images("what is this?", vec![image])],
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn a_vision_model_gets_the_photo_as_an_image_url_part() {
    let fake = FakeLlm::start().await;
    let client = OpenAiClient::new(OpenAiSettings {
        vision: true,
        ..settings(fake.base_url())
    })
    .unwrap();

    client.complete(&with_photo(Some(b"\x89PNG"))).await.unwrap();

    assert_eq!(
        fake.requests()[0]["messages"][0]["content"],
        json!([
            {"type": "text", "text": "what is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
        ])
    );
}

#[tokio::test]
async fn a_model_without_vision_and_an_earlier_photo_get_notes_instead() {
    let fake = FakeLlm::start().await;
    client(&fake).complete(&with_photo(Some(b"\x89PNG"))).await.unwrap();
    let vision = OpenAiClient::new(OpenAiSettings {
        vision: true,
        ..settings(fake.base_url())
    })
    .unwrap();
    vision.complete(&with_photo(None)).await.unwrap();

    let requests = fake.requests();
    assert_eq!(
        requests[0]["messages"][0]["content"],
        "what is this?\n[a photo (ab12.png) that this model cannot see]"
    );
    assert_eq!(
        requests[1]["messages"][0]["content"],
        "what is this?\n[a photo sent earlier (ab12.png); not shown again]"
    );
}

#[test]
fn the_history_keeps_an_image_by_reference_never_its_bytes() {
    let image = Image {
        media: "ab12.png".into(),
        mime: "image/png".into(),
        bytes: Some(std::sync::Arc::from(&b"\x89PNG"[..])),
        tool: None,
    };
    let mut message = ChatMessage::user_with_images("look", vec![image]);
    let kept = serde_json::to_value(&message).unwrap();
    assert_eq!(kept["images"], json!([{"media": "ab12.png", "mime": "image/png"}]));
    let read: ChatMessage = serde_json::from_value(kept).unwrap();
    assert_eq!(read.images[0].bytes, None);
    message.drop_image_bytes();
    assert_eq!(read, message);
    let plain = serde_json::to_value(ChatMessage::user("hi")).unwrap();
    assert!(
        plain.get("images").is_none(),
        "a text message is stored as before: {plain}"
    );
}

/// A turn in which the tool `shot` returned an image: the call, its result
/// with the image (its bytes kept while `current`), and the person's next words.
fn with_tool_image(current: bool) -> ChatRequest {
    let mut image = Image::from_tool("shot", "image/png", b"\x89PNG".to_vec());
    if !current {
        image.bytes = None;
    }
    ChatRequest {
        messages: vec![
            ChatMessage::user("take a screenshot"),
            ChatMessage::assistant_tool_calls(vec![ToolCall {
                id: "call_1".into(),
                name: "shot".into(),
                arguments: "{}".into(),
            }]),
            ChatMessage::tool_result_with_images("call_1", "here it is", vec![image]),
            ChatMessage::user("and now?"),
        ],
        ..ChatRequest::default()
    }
}

#[tokio::test]
async fn a_tools_image_follows_the_tool_results_as_an_image_url_part_for_a_vision_model() {
    let fake = FakeLlm::start().await;
    let vision = OpenAiClient::new(OpenAiSettings {
        vision: true,
        ..settings(fake.base_url())
    })
    .unwrap();
    vision.complete(&with_tool_image(true)).await.unwrap();

    let messages = fake.requests()[0]["messages"].clone();
    assert_eq!(messages.as_array().unwrap().len(), 5, "{messages:#}");
    assert_eq!(messages[2]["role"], "tool");
    assert_eq!(
        messages[2]["content"],
        "here it is\n[an image (image/png) from shot: shown after the results]"
    );
    assert_eq!(messages[3]["role"], "user");
    assert_eq!(
        messages[3]["content"],
        json!([
            {"type": "text", "text": "[the image (image/png) shot returned]"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
        ])
    );
    assert_eq!(messages[4]["content"], "and now?");
}

#[tokio::test]
async fn a_tools_image_is_a_note_for_a_model_without_vision_and_in_a_later_turn() {
    let fake = FakeLlm::start().await;
    client(&fake).complete(&with_tool_image(true)).await.unwrap();
    let vision = OpenAiClient::new(OpenAiSettings {
        vision: true,
        ..settings(fake.base_url())
    })
    .unwrap();
    vision.complete(&with_tool_image(false)).await.unwrap();

    let requests = fake.requests();
    assert_eq!(requests[0]["messages"].as_array().unwrap().len(), 4);
    assert_eq!(
        requests[0]["messages"][2]["content"],
        "here it is\n[an image (image/png) from shot that this model cannot see]"
    );
    assert_eq!(requests[1]["messages"].as_array().unwrap().len(), 4);
    assert_eq!(
        requests[1]["messages"][2]["content"],
        "here it is\n[an image (image/png) shot returned earlier; not shown again]"
    );
}

#[tokio::test]
async fn a_configured_proxy_carries_every_request() {
    // The fake takes the proxy's part: a plain-HTTP request through a proxy
    // names the whole URL, and the fake answers it by its path.
    let proxy = FakeLlm::start().await;
    let client = OpenAiClient::new(OpenAiSettings {
        proxy: Some(format!(
            "http://{}",
            proxy.base_url().trim_start_matches("http://").trim_end_matches("/v1")
        )),
        ..settings("http://model.invalid/v1".to_owned())
    })
    .expect("valid settings");
    let response = client.complete(&hello()).await.expect("answered through the proxy");
    assert_eq!(response.content.as_deref(), Some("echo: hello there"));
    assert_eq!(proxy.requests().len(), 1);

    let refused = OpenAiClient::new(OpenAiSettings {
        proxy: Some("not a url".to_owned()),
        ..settings("http://model.invalid/v1".to_owned())
    });
    assert!(
        matches!(&refused, Err(LlmError::Config { reason }) if reason.contains("proxy")),
        "{refused:?}"
    );
}
