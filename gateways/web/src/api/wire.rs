//! The OpenAI Chat Completions wire format, private to the API: the request
//! read into [`Asked`] (what the daemon takes of it) with a clear refusal
//! for what it cannot serve, and the `chat.completion` and
//! `chat.completion.chunk` objects written back.
//!
//! A request's messages are its conversation: the last, a user's, is the
//! message to answer; the user and assistant messages before it are what
//! was said before (which `completions.rs` matches with a conversation the
//! daemon has, or seeds a new one with); the system (or developer)
//! messages are the client's own instructions. Anything else a message
//! may be (a tool's result, a tool call) is refused, naming the message.

use passepartout_gateway::{EarlierMessage, EarlierRole};
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
    role: Option<String>,
    #[serde(default)]
    content: Value,
    tool_calls: Option<Value>,
    function_call: Option<Value>,
}

/// The most messages a request may carry: a long conversation resent whole
/// is a few hundred.
pub const MAX_MESSAGES: usize = 2000;

/// What a request asks of the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Asked {
    /// The last user message's text.
    pub text: String,
    /// The user and assistant messages before it, oldest first.
    pub earlier: Vec<EarlierMessage>,
    /// The system and developer messages, joined: the client's own
    /// instructions.
    pub instructions: Option<String>,
    /// The answer is streamed as server-sent events.
    pub stream: bool,
    /// A last chunk with the usage, before `[DONE]`.
    pub include_usage: bool,
    /// The `user` field: the client's end user, whose conversations are
    /// kept apart from the key's others (see `route.rs`).
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
    request.refuse_unserved()?;
    let messages = request.messages.unwrap_or_default();
    let (text, earlier, instructions) = conversation(&messages)?;
    Ok(Asked {
        text,
        earlier,
        instructions: (!instructions.is_empty()).then(|| instructions.join("\n\n")),
        stream: request.stream,
        include_usage: request.stream_options.is_some_and(|o| o.include_usage),
        user: request.user,
    })
}

impl Request {
    /// Refuses what the API does not serve: another model, more than one
    /// choice, the client's own tools, anything but text out.
    fn refuse_unserved(&self) -> Result<(), ApiError> {
        match self.model.as_deref() {
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
        if self.n.is_some_and(|n| n != 1) {
            return Err(ApiError::invalid(
                Some("n"),
                "unsupported_parameter",
                "Only one choice is made per request (n = 1): the assistant answers once, and keeps that answer.",
            ));
        }
        if self.tools.is_some() || self.functions.is_some() {
            let param = if self.tools.is_some() { "tools" } else { "functions" };
            return Err(ApiError::invalid(
                Some(param),
                "unsupported_parameter",
                "Tools run in the daemon, not in the client: client-side tools and functions are not taken.",
            ));
        }
        let wants_more_than_text = self.modalities.as_ref().is_some_and(|m| m.iter().any(|m| m != "text"));
        if wants_more_than_text || self.audio.is_some() {
            let param = if self.audio.is_some() { "audio" } else { "modalities" };
            return Err(ApiError::invalid(
                Some(param),
                "unsupported_parameter",
                "Only text is answered: no audio or image output.",
            ));
        }
        Ok(())
    }
}

/// The message to answer (the last, a user's), the user and assistant
/// messages before it, and the instructions among them, from `messages`.
fn conversation(messages: &[Message]) -> Result<(String, Vec<EarlierMessage>, Vec<String>), ApiError> {
    if messages.len() > MAX_MESSAGES {
        return Err(ApiError::invalid(
            Some("messages"),
            "too_many_messages",
            format!(
                "The request has {} messages; at most {MAX_MESSAGES} are taken.",
                messages.len()
            ),
        ));
    }
    let Some((last, before)) = messages.split_last() else {
        return Err(ApiError::invalid(
            Some("messages"),
            "missing_required_parameter",
            "The request has no messages: send at least the user's.",
        ));
    };
    let mut earlier = Vec::new();
    let mut instructions: Vec<String> = Vec::new();
    for (index, message) in before.iter().enumerate() {
        match role_of(index, message)? {
            Role::Instructions => {
                let text = text_of(index, &message.content)?;
                if !text.trim().is_empty() {
                    instructions.push(text);
                }
            }
            Role::Said(role) => earlier.push(EarlierMessage {
                role,
                text: text_of(index, &message.content)?,
            }),
        }
    }
    let last_index = before.len();
    if role_of(last_index, last)? != Role::Said(EarlierRole::User) {
        return Err(ApiError::invalid(
            Some("messages"),
            "invalid_value",
            format!(
                "The last message is the {:?}'s; it must be the user's: the message to answer comes last.",
                last.role.as_deref().unwrap_or_default()
            ),
        ));
    }
    let text = text_of(last_index, &last.content)?;
    if text.trim().is_empty() {
        return Err(ApiError::invalid(
            Some("messages"),
            "invalid_value",
            "The user's message is empty.",
        ));
    }
    Ok((text, earlier, instructions))
}

/// What a message is to the daemon.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// The client's instructions (`system`, `developer`).
    Instructions,
    /// Said in the conversation.
    Said(EarlierRole),
}

/// The role of message `index`, refusing what the daemon does not take.
fn role_of(index: usize, message: &Message) -> Result<Role, ApiError> {
    let refuse = |message: String| ApiError::invalid(Some("messages"), "invalid_value", message);
    if message.tool_calls.is_some() || message.function_call.is_some() {
        return Err(refuse(format!(
            "Message {index} carries tool calls: tools run in the daemon, not in the client, so none are taken."
        )));
    }
    match message.role.as_deref() {
        Some("system" | "developer") => Ok(Role::Instructions),
        Some("user") => Ok(Role::Said(EarlierRole::User)),
        Some("assistant") => Ok(Role::Said(EarlierRole::Assistant)),
        Some("tool" | "function") => Err(refuse(format!(
            "Message {index} is a tool's result: tools run in the daemon, not in the client, so none are taken."
        ))),
        Some(other) => Err(refuse(format!(
            "Message {index} has the role {other:?}; the roles taken are system, developer, user and assistant."
        ))),
        None => Err(refuse(format!("Message {index} has no role."))),
    }
}

/// Message `index`'s text: a string, or text parts (joined); anything else
/// (images, audio, files) is refused.
fn text_of(index: usize, content: &Value) -> Result<String, ApiError> {
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
                                "Message {index}: only text parts are read, not {}.",
                                kind.map_or("a part without a type".into(), |k| format!("{k:?}"))
                            ),
                        ));
                    }
                }
            }
            Ok(text)
        }
        // An assistant's message may be empty; so may a system one.
        Value::Null => Ok(String::new()),
        _ => Err(ApiError::invalid(
            Some("messages"),
            "invalid_value",
            format!("Message {index}'s content is neither text nor a list of text parts."),
        )),
    }
}

/// Tokens a completion used, as OpenAI counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Usage {
    /// Tokens read.
    pub prompt_tokens: u64,
    /// Tokens written.
    pub completion_tokens: u64,
    /// Both.
    pub total_tokens: u64,
}

impl Usage {
    /// The usage of `prompt_tokens` read and `completion_tokens` written.
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
    /// `chatcmpl-…`.
    pub id: String,
    /// When, in seconds since the epoch.
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
    fn a_resent_history_is_read_as_instructions_what_was_said_and_the_message_to_answer() {
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
                earlier: vec![
                    EarlierMessage {
                        role: EarlierRole::User,
                        text: "first".into()
                    },
                    EarlierMessage {
                        role: EarlierRole::Assistant,
                        text: "an answer".into()
                    },
                ],
                instructions: Some("be brief".into()),
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
    fn malformed_messages_are_refused_saying_which_and_why() {
        let last = json!({"role": "user", "content": "now"});
        let cases = [
            (json!({"content": "no role"}), "no role"),
            (
                json!({"role": "tool", "content": "42", "tool_call_id": "c"}),
                "tool's result",
            ),
            (
                json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c"}]}),
                "tool calls",
            ),
            (json!({"role": "narrator", "content": "x"}), "\"narrator\""),
            (json!({"role": "user", "content": 7}), "neither text"),
            (
                json!({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}),
                "only text parts",
            ),
        ];
        for (bad, says) in cases {
            let body = json!({"model": "passepartout", "messages": [bad, last]});
            let error = asked(body.clone()).expect_err(&body.to_string());
            assert_eq!(error.param, Some("messages"), "{body}");
            assert!(error.message.starts_with("Message 0"), "{}", error.message);
            assert!(error.message.contains(says), "{}", error.message);
        }
        let no_user_last = json!({"model": "passepartout", "messages": [
            {"role": "user", "content": "q"}, {"role": "assistant", "content": "a"},
        ]});
        let error = asked(no_user_last).unwrap_err();
        assert!(error.message.contains("must be the user's"), "{}", error.message);
        let system_last = json!({"model": "passepartout", "messages": [{"role": "system", "content": "s"}]});
        assert!(asked(system_last).is_err());
        let many: Vec<Value> = (0..=MAX_MESSAGES)
            .map(|_| json!({"role": "user", "content": "x"}))
            .collect();
        let error = asked(json!({"model": "passepartout", "messages": many})).unwrap_err();
        assert_eq!(error.code, Some("too_many_messages"));
        let empty_answer = json!({"model": "passepartout", "messages": [
            {"role": "user", "content": "q"}, {"role": "assistant", "content": null}, {"role": "user", "content": "again"},
        ]});
        assert_eq!(asked(empty_answer).unwrap().earlier[1].text, "");
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
