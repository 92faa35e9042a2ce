//! The OpenAI Chat Completions wire format, private to the API: the request
//! read into [`Asked`] (what the daemon takes of it) with a clear refusal
//! for what it cannot serve, and the `chat.completion` and
//! `chat.completion.chunk` objects written back.
//!
//! The daemon keeps each conversation's history itself, so of the messages
//! a client sends only the last, a user's, enters; the ones before it are
//! what the daemon already has (a client resending the whole history does
//! not duplicate it).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::error::ApiError;

/// The one model the API offers: the assistant itself.
pub const MODEL: &str = "passepartout";

/// A request, as far as the daemon reads it; every other field (sampling
/// settings and the like) is the daemon's own business and ignored.
#[derive(Deserialize)]
struct Request {
    model: Option<String>,
    messages: Option<Vec<Message>>,
    #[serde(default)]
    stream: bool,
    stream_options: Option<StreamOptions>,
    n: Option<u64>,
    tools: Option<Value>,
    functions: Option<Value>,
    modalities: Option<Vec<String>>,
    audio: Option<Value>,
    user: Option<String>,
}

#[derive(Deserialize)]
struct StreamOptions {
    #[serde(default)]
    include_usage: bool,
}

#[derive(Deserialize)]
struct Message {
    role: String,
    #[serde(default)]
    content: Value,
}

/// What a request asks of the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The last user message's text.
    pub text: String,
    pub stream: bool,
    /// A last chunk with the usage, before `[DONE]`.
    pub include_usage: bool,
    /// The `user` field: which of the caller's conversations.
    pub user: Option<String>,
}

/// Reads `body`, refusing what the API does not serve.
pub fn read(body: &[u8]) -> Result<Asked, ApiError> {
    let request: Request = serde_json::from_slice(body).map_err(|error| {
        ApiError::invalid(
            None,
            "invalid_json",
            format!("The request body is not a chat completion request in JSON: {error}"),
        )
    })?;
    match request.model.as_deref() {
        Some(MODEL) => {}
        Some(other) => {
            return Err(ApiError::invalid(
                Some("model"),
                "model_not_found",
                format!("The model {other:?} does not exist here; use \"{MODEL}\" (see GET /v1/models)."),
            ));
        }
        None => {
            return Err(ApiError::invalid(
                Some("model"),
                "missing_required_parameter",
                format!("The request names no model; use \"{MODEL}\"."),
            ));
        }
    }
    if request.n.is_some_and(|n| n != 1) {
        return Err(ApiError::invalid(
            Some("n"),
            "unsupported_parameter",
            "Only one choice is made per request (n = 1): the assistant answers once, and keeps that answer.",
        ));
    }
    if request.tools.is_some() || request.functions.is_some() {
        let param = if request.tools.is_some() { "tools" } else { "functions" };
        return Err(ApiError::invalid(
            Some(param),
            "unsupported_parameter",
            "Tools run in the daemon, not in the client: client-side tools and functions are not taken.",
        ));
    }
    let wants_more_than_text = request
        .modalities
        .as_ref()
        .is_some_and(|m| m.iter().any(|m| m != "text"));
    if wants_more_than_text || request.audio.is_some() {
        let param = if request.audio.is_some() { "audio" } else { "modalities" };
        return Err(ApiError::invalid(
            Some(param),
            "unsupported_parameter",
            "Only text is answered: no audio or image output.",
        ));
    }
    let messages = request.messages.unwrap_or_default();
    let Some(last) = messages.last() else {
        return Err(ApiError::invalid(
            Some("messages"),
            "missing_required_parameter",
            "The request has no messages: send at least the user's.",
        ));
    };
    if last.role != "user" {
        return Err(ApiError::invalid(
            Some("messages"),
            "invalid_value",
            format!(
                "The last message is the {:?}'s; it must be the user's. The daemon keeps the conversation, so \
                 send the user's new message last.",
                last.role
            ),
        ));
    }
    let text = text_of(&last.content)?;
    if text.trim().is_empty() {
        return Err(ApiError::invalid(
            Some("messages"),
            "invalid_value",
            "The user's message is empty.",
        ));
    }
    Ok(Asked {
        text,
        stream: request.stream,
        include_usage: request.stream_options.is_some_and(|o| o.include_usage),
        user: request.user,
    })
}

/// A message's text: a string, or text parts (joined); anything else
/// (images, audio, files) is refused.
fn text_of(content: &Value) -> Result<String, ApiError> {
    match content {
        Value::String(text) => Ok(text.clone()),
        Value::Array(parts) => {
            let mut text = String::new();
            for part in parts {
                match (part["type"].as_str(), part["text"].as_str()) {
                    (Some("text"), Some(piece)) => text.push_str(piece),
                    (kind, _) => {
                        return Err(ApiError::invalid(
                            Some("messages"),
                            "unsupported_content",
                            format!(
                                "Only text parts are read, not {}.",
                                kind.map_or("a part without a type".into(), |k| format!("{k:?}"))
                            ),
                        ));
                    }
                }
            }
            Ok(text)
        }
        _ => Err(ApiError::invalid(
            Some("messages"),
            "invalid_value",
            "The user's message has no text content.",
        )),
    }
}

/// Tokens a completion used, as OpenAI counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
}

impl Usage {
    pub fn new(prompt_tokens: u64, completion_tokens: u64) -> Self {
        Self {
            prompt_tokens,
            completion_tokens,
            total_tokens: prompt_tokens + completion_tokens,
        }
    }
}

/// One answer's identity: `chatcmpl-…` and when it was made (seconds).
#[derive(Clone, Debug)]
pub struct Made {
    pub id: String,
    pub created: u64,
}

/// The `chat.completion` object of a whole answer.
pub fn completion(made: &Made, content: &str, finish_reason: &str, usage: Usage) -> Value {
    serde_json::json!({
        "id": made.id,
        "object": "chat.completion",
        "created": made.created,
        "model": MODEL,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content, "refusal": null},
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
        "usage": usage,
    })
}

/// What one streamed chunk carries.
pub enum Piece<'a> {
    /// The first: the role, no text yet.
    Role,
    /// More of the answer's text.
    Text(&'a str),
    /// The end of the answer, and why.
    Finish(&'a str),
    /// The usage, after the end (no choices).
    Usage(Usage),
}

/// A `chat.completion.chunk` object.
pub fn chunk(made: &Made, piece: Piece<'_>) -> Value {
    let choice = |delta: Value, finish: Option<&str>| serde_json::json!([{"index": 0, "delta": delta, "logprobs": null, "finish_reason": finish}]);
    let (choices, usage) = match piece {
        Piece::Role => (
            choice(serde_json::json!({"role": "assistant", "content": ""}), None),
            None,
        ),
        Piece::Text(text) => (choice(serde_json::json!({"content": text}), None), None),
        Piece::Finish(reason) => (choice(serde_json::json!({}), Some(reason)), None),
        Piece::Usage(usage) => (serde_json::json!([]), Some(usage)),
    };
    let mut chunk = serde_json::json!({
        "id": made.id,
        "object": "chat.completion.chunk",
        "created": made.created,
        "model": MODEL,
        "choices": choices,
    });
    if let Some(usage) = usage {
        chunk["usage"] = serde_json::json!(usage);
    }
    chunk
}

/// The `GET /v1/models` listing.
pub fn models(created: u64) -> Value {
    serde_json::json!({
        "object": "list",
        "data": [{"id": MODEL, "object": "model", "created": created, "owned_by": "passepartout"}],
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn asked(body: Value) -> Result<Asked, ApiError> {
        read(body.to_string().as_bytes())
    }

    #[test]
    fn only_the_last_user_message_is_taken_from_a_resent_history() {
        let got = asked(json!({
            "model": "passepartout",
            "messages": [
                {"role": "system", "content": "be brief"},
                {"role": "user", "content": "first"},
                {"role": "assistant", "content": "an answer"},
                {"role": "user", "content": [{"type": "text", "text": "second "}, {"type": "text", "text": "part"}]},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "user": "trip",
        }))
        .unwrap();
        assert_eq!(
            got,
            Asked {
                text: "second part".into(),
                stream: true,
                include_usage: true,
                user: Some("trip".into()),
            }
        );
    }

    #[test]
    fn what_the_api_cannot_serve_is_refused_naming_the_field() {
        let user = json!([{"role": "user", "content": "hi"}]);
        let cases = [
            (json!({"model": "passepartout", "messages": user, "n": 2}), Some("n")),
            (
                json!({"model": "passepartout", "messages": user, "tools": []}),
                Some("tools"),
            ),
            (
                json!({"model": "passepartout", "messages": user, "functions": []}),
                Some("functions"),
            ),
            (
                json!({"model": "passepartout", "messages": user, "modalities": ["text", "audio"]}),
                Some("modalities"),
            ),
            (
                json!({"model": "passepartout", "messages": user, "audio": {"voice": "x"}}),
                Some("audio"),
            ),
            (json!({"model": "gpt-4o", "messages": user}), Some("model")),
            (json!({"messages": user}), Some("model")),
            (json!({"model": "passepartout", "messages": []}), Some("messages")),
            (
                json!({"model": "passepartout", "messages": [{"role": "assistant", "content": "x"}]}),
                Some("messages"),
            ),
            (
                json!({"model": "passepartout", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}),
                Some("messages"),
            ),
            (
                json!({"model": "passepartout", "messages": [{"role": "user", "content": " "}]}),
                Some("messages"),
            ),
        ];
        for (body, param) in cases {
            let error = asked(body.clone()).expect_err(&body.to_string());
            assert_eq!(error.status, axum::http::StatusCode::BAD_REQUEST, "{body}");
            assert_eq!(error.param, param, "{body}");
            assert!(!error.message.is_empty());
        }
        let malformed = read(b"{not json").unwrap_err();
        assert_eq!(malformed.code, Some("invalid_json"));
    }

    #[test]
    fn a_completion_and_its_chunks_are_openais_objects() {
        let made = Made {
            id: "chatcmpl-1".into(),
            created: 7,
        };
        let whole = completion(&made, "Hi", "stop", Usage::new(3, 2));
        assert_eq!(whole["object"], "chat.completion");
        assert_eq!(
            whole["choices"][0]["message"],
            json!({"role": "assistant", "content": "Hi", "refusal": null})
        );
        assert_eq!(
            whole["usage"],
            json!({"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5})
        );

        let role = chunk(&made, Piece::Role);
        assert_eq!(role["object"], "chat.completion.chunk");
        assert_eq!(role["choices"][0]["delta"], json!({"role": "assistant", "content": ""}));
        assert_eq!(
            chunk(&made, Piece::Text("lo"))["choices"][0]["delta"],
            json!({"content": "lo"})
        );
        let finish = chunk(&made, Piece::Finish("stop"));
        assert_eq!(finish["choices"][0]["finish_reason"], "stop");
        assert_eq!(finish["choices"][0]["delta"], json!({}));
        assert!(finish.get("usage").is_none());
        let usage = chunk(&made, Piece::Usage(Usage::new(1, 1)));
        assert_eq!(usage["choices"], json!([]));
        assert_eq!(usage["usage"]["total_tokens"], 2);
        assert_eq!(models(0)["data"][0]["id"], MODEL);
    }
}
