//! A [`ChatModel`] for unit tests: it answers from a script of typed
//! results, then "ok from NAME" (as model `NAME-model`, 3 tokens in and 2
//! out) forever, and keeps every request it got.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::{ChatModel, ChatRequest, ChatResponse, LlmError, ToolCall, Usage};

/// A scripted model.
pub struct Scripted {
    name: &'static str,
    script: Mutex<VecDeque<Result<ChatResponse, LlmError>>>,
    seen: Mutex<Vec<ChatRequest>>,
}

impl Scripted {
    /// A model called `name` answering `script` first.
    pub fn new(name: &'static str, script: Vec<Result<ChatResponse, LlmError>>) -> Arc<Self> {
        Arc::new(Self {
            name,
            script: Mutex::new(script.into()),
            seen: Mutex::default(),
        })
    }

    /// Adds an answer at the end of the script.
    pub fn push(&self, answer: Result<ChatResponse, LlmError>) {
        self.script.lock().unwrap().push_back(answer);
    }

    /// Every request received, oldest first.
    pub fn seen(&self) -> Vec<ChatRequest> {
        self.seen.lock().unwrap().clone()
    }

    pub fn calls(&self) -> usize {
        self.seen.lock().unwrap().len()
    }
}

/// An answer from `model`: `content`, or `tool_calls`, using 30 tokens in and 5 out.
pub fn answer(model: &str, content: Option<&str>, tool_calls: Vec<ToolCall>) -> ChatResponse {
    ChatResponse {
        content: content.map(str::to_owned),
        tool_calls,
        usage: Usage {
            input_tokens: 30,
            output_tokens: 5,
        },
        model: model.into(),
    }
}

/// A call of tool `name` with `arguments`.
pub fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
    ToolCall {
        id: format!("call-{name}"),
        name: name.into(),
        arguments: arguments.to_string(),
    }
}

#[async_trait]
impl ChatModel for Scripted {
    fn name(&self) -> &str {
        self.name
    }
    fn endpoint(&self) -> &str {
        "http://model.test/v1"
    }
    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, LlmError> {
        self.seen.lock().unwrap().push(request.clone());
        let next = self.script.lock().unwrap().pop_front();
        next.unwrap_or_else(|| {
            Ok(ChatResponse {
                content: Some(format!("ok from {}", self.name)),
                tool_calls: Vec::new(),
                usage: Usage {
                    input_tokens: 3,
                    output_tokens: 2,
                },
                model: format!("{}-model", self.name),
            })
        })
    }
    async fn probe(&self) -> Result<(), LlmError> {
        Ok(())
    }
}
