//! Reason: assemble the model's context, ask the providers in order, and turn
//! the answer into a [`Proposal`]. Provider health is kept for `status` and
//! `doctor`. (Cooldowns, skills' gates and consensus build on this.)

use std::fmt;
use std::sync::{Arc, Mutex};

use serde::Serialize;

use crate::llm::{ChatMessage, ChatModel, ChatRequest, LlmError, ToolCall, ToolSpec};
use crate::pipeline::TurnRecord;

/// What the model proposes.
#[derive(Clone, Debug, PartialEq)]
pub enum Proposal {
    /// Answer the person with this text.
    Reply { text: String },
    /// Run these tools, in order, and show the model their output.
    ToolCalls { calls: Vec<ToolCall> },
}

/// One provider that did not answer, and why.
#[derive(Debug)]
pub struct ProviderFailure {
    pub name: String,
    pub endpoint: String,
    pub error: LlmError,
}

/// No provider answered.
#[derive(Debug)]
pub struct Exhausted {
    pub failures: Vec<ProviderFailure>,
}

impl fmt::Display for Exhausted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("I could not reach a language model (")?;
        for (index, failure) in self.failures.iter().enumerate() {
            if index > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{} at {}: {}", failure.name, failure.endpoint, failure.error)?;
        }
        f.write_str("). Start that server, or configure a provider under [[llm.providers]] (see config.example.toml).")
    }
}

/// What `status` shows of one provider.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ProviderHealth {
    pub name: String,
    pub endpoint: String,
    pub calls: u64,
    pub failures: u64,
    pub tokens_in: u64,
    pub tokens_out: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The providers, in the order they are tried.
pub struct Reasoner {
    providers: Vec<Arc<dyn ChatModel>>,
    health: Mutex<Vec<ProviderHealth>>,
}

impl Reasoner {
    pub fn new(providers: Vec<Arc<dyn ChatModel>>) -> Self {
        let health = providers
            .iter()
            .map(|p| ProviderHealth {
                name: p.name().to_owned(),
                endpoint: p.endpoint().to_owned(),
                ..Default::default()
            })
            .collect();
        Self {
            providers,
            health: Mutex::new(health),
        }
    }

    /// A snapshot of every provider's health.
    pub fn health(&self) -> Vec<ProviderHealth> {
        self.health.lock().map(|h| h.clone()).unwrap_or_default()
    }

    fn record(&self, index: usize, update: impl FnOnce(&mut ProviderHealth)) {
        if let Ok(mut health) = self.health.lock()
            && let Some(entry) = health.get_mut(index)
        {
            update(entry);
        }
    }

    /// Asks the providers in order until one answers.
    pub async fn reason(&self, messages: Vec<ChatMessage>, tools: Vec<ToolSpec>) -> Result<Proposal, Exhausted> {
        let request = ChatRequest { messages, tools };
        let mut failures = Vec::new();
        for (index, provider) in self.providers.iter().enumerate() {
            match provider.complete(&request).await {
                Ok(response) => {
                    self.record(index, |h| {
                        h.calls += 1;
                        h.tokens_in += response.usage.input_tokens;
                        h.tokens_out += response.usage.output_tokens;
                        h.last_error = None;
                    });
                    return Ok(if response.tool_calls.is_empty() {
                        Proposal::Reply {
                            text: response.content.unwrap_or_default(),
                        }
                    } else {
                        Proposal::ToolCalls {
                            calls: response.tool_calls,
                        }
                    });
                }
                Err(error) => {
                    tracing::warn!(provider = provider.name(), endpoint = provider.endpoint(), %error, "provider failed");
                    self.record(index, |h| {
                        h.calls += 1;
                        h.failures += 1;
                        h.last_error = Some(error.to_string());
                    });
                    failures.push(ProviderFailure {
                        name: provider.name().to_owned(),
                        endpoint: provider.endpoint().to_owned(),
                        error,
                    });
                }
            }
        }
        Err(Exhausted { failures })
    }
}

/// The model's context: the system prompt, earlier turns, then this turn so far.
pub fn build_context(system_prompt: &str, history: &[TurnRecord], turn: &[ChatMessage]) -> Vec<ChatMessage> {
    let earlier = history.iter().map(|record| record.messages.len()).sum::<usize>();
    let mut messages = Vec::with_capacity(1 + earlier + turn.len());
    messages.push(ChatMessage::system(system_prompt));
    for record in history {
        messages.extend(record.messages.iter().cloned());
    }
    messages.extend(turn.iter().cloned());
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Role;

    #[test]
    fn context_is_system_then_history_then_this_turn() {
        let history = [TurnRecord {
            messages: vec![ChatMessage::user("a"), ChatMessage::assistant("b")],
        }];
        let context = build_context("sys", &history, &[ChatMessage::user("c")]);
        let roles: Vec<_> = context.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::System, Role::User, Role::Assistant, Role::User]);
        assert_eq!(context[3].content, "c");
    }

    #[test]
    fn exhausted_names_each_endpoint_and_the_fix() {
        let exhausted = Exhausted {
            failures: vec![ProviderFailure {
                name: "local".into(),
                endpoint: "http://127.0.0.1:9/v1".into(),
                error: LlmError::Unreachable {
                    reason: "connection refused".into(),
                },
            }],
        };
        let text = exhausted.to_string();
        assert!(text.contains("local at http://127.0.0.1:9/v1"), "{text}");
        assert!(text.contains("[[llm.providers]]"), "{text}");
    }
}
