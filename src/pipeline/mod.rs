//! The Perceive → Reason → Act pipeline for one turn.
//!
//! [`Pipeline::run`] composes the three stages: perceive the inbound message,
//! then reason and act until act returns no feedback signal, the depth limit
//! is reached, or no model answers. It writes nothing: it returns what the
//! turn produced, and the conversation worker commits that in one transaction.

pub mod act;
pub mod cascade;
pub mod commands;
pub mod perceive;
pub mod reason;

use std::sync::Arc;

use passepartout_gateway::{Inbound, ReplyKind};
use serde::{Deserialize, Serialize};

use crate::config::{Config, MemoryConfig, PipelineConfig};
use crate::llm::ChatMessage;
use crate::memory::{MemoryLimits, MemorySession};
use crate::signal::SignalBody;
use crate::skills::Skills;
use crate::store::{Fact, MemoryWrite};
use crate::tools::{ToolBox, ToolContext};
use cascade::Cascade;
use perceive::Perception;

/// One finished turn as kept in the conversation's history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub messages: Vec<ChatMessage>,
}

/// What a turn produced, to be committed.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TurnOutput {
    pub replies: Vec<(ReplyKind, String)>,
    /// The turn for the history, when it is to be remembered.
    pub record: Option<TurnRecord>,
    /// Delete the conversation's history (`/forget`).
    pub forget: bool,
    /// Facts remembered and forgotten during the turn.
    pub memory: Vec<MemoryWrite>,
}

/// The stages with what they need.
pub struct Pipeline {
    settings: PipelineConfig,
    cascade: Arc<Cascade>,
    tools: ToolBox,
    skills: Skills,
    memory: MemoryConfig,
    max_repairs: u32,
}

impl Pipeline {
    /// A pipeline asking `cascade`, running `tools` behind `skills`, with the
    /// pipeline, memory and `llm.max_repairs` settings of `config`.
    pub fn new(config: &Config, cascade: Arc<Cascade>, tools: ToolBox, skills: Skills) -> Self {
        Self {
            settings: config.pipeline.clone(),
            cascade,
            tools,
            skills,
            memory: config.memory.clone(),
            max_repairs: config.llm.max_repairs,
        }
    }

    pub fn cascade(&self) -> &Cascade {
        &self.cascade
    }

    pub fn tools(&self) -> &ToolBox {
        &self.tools
    }

    pub fn skills(&self) -> &Skills {
        &self.skills
    }

    /// What one person may keep in memory.
    pub fn memory_limits(&self) -> MemoryLimits {
        MemoryLimits {
            max_facts: self.memory.max_facts,
            max_fact_chars: self.memory.max_fact_chars,
        }
    }

    /// Runs one turn for `inbound`, given the conversation's recent `history`
    /// and the sender's `memory`; `status` renders the daemon's status for
    /// `/status`.
    pub async fn run(
        &self,
        inbound: &Inbound,
        history: &[TurnRecord],
        memory: MemorySession,
        status: impl FnOnce() -> String,
    ) -> TurnOutput {
        let signal = match perceive::perceive(inbound) {
            Perception::Ignore => return TurnOutput::default(),
            Perception::Command(command) => {
                let outcome = commands::execute(&command, status);
                return TurnOutput {
                    replies: vec![(ReplyKind::Notice, outcome.text)],
                    forget: outcome.forget,
                    ..TurnOutput::default()
                };
            }
            Perception::Signal(signal) => signal,
        };
        let text = match &signal.body {
            SignalBody::Message(message) => message.text.clone(),
            SignalBody::Unreadable(unreadable) => {
                let text = format!(
                    "I can only read text for now, so I can't read this {}.",
                    unreadable.what
                );
                return TurnOutput {
                    replies: vec![(ReplyKind::Notice, text)],
                    ..TurnOutput::default()
                };
            }
            SignalBody::ToolResults(_) | SignalBody::Correction(_) => String::new(),
        };
        let origin = signal.origin.clone();
        let facts = self.facts(&memory, &text);
        let fragments = self.skills.prompts(&origin);
        let all = self.tools.specs();
        let specs = if all.iter().all(|spec| self.skills.offers(&spec.name, &origin)) {
            all.clone()
        } else {
            all.iter()
                .filter(|spec| self.skills.offers(&spec.name, &origin))
                .cloned()
                .collect()
        };
        let tool_context = ToolContext {
            conversation: origin.conversation.clone(),
            sender: origin.sender.clone(),
            memory,
        };
        let actuators = act::Actuators {
            tools: &self.tools,
            skills: &self.skills,
            context: &tool_context,
        };
        // Built once; each round appends to its `turn`, which is the transcript.
        let mut context = reason::build_context(
            &self.settings.system_prompt,
            &fragments,
            &facts,
            history,
            vec![ChatMessage::user(text)],
        );
        let mut replies = Vec::new();
        let mut repairs = 0;
        let mut signal = signal;
        loop {
            let response = match self.cascade.complete(&context, &specs).await {
                Ok(response) => response,
                Err(exhausted) => {
                    replies.push((ReplyKind::Failure, exhausted.to_string()));
                    if context.turn.len() == 1 {
                        // Nothing happened yet: not remembered; the person can simply ask again.
                        return TurnOutput {
                            replies,
                            ..TurnOutput::default()
                        };
                    }
                    // Tools already ran: keep what they did, so asking again
                    // does not silently do it twice.
                    break;
                }
            };
            let acted = act::act(&signal, reason::interpret(response), &actuators).await;
            context.turn.extend(acted.transcript);
            replies.extend(acted.replies);
            repairs += acted.repairs;
            let Some(next) = acted.feedback else {
                break;
            };
            if repairs > self.max_repairs {
                tracing::warn!(conversation = %origin.conversation, repairs, "model output stayed malformed");
                replies.push((
                    ReplyKind::Notice,
                    format!(
                        "The model kept answering in a form I cannot use ({repairs} times), so I stopped. \
                         Try again, or a different model (llm.max_repairs)."
                    ),
                ));
                break;
            }
            if next.depth > self.settings.max_depth {
                tracing::warn!(conversation = %origin.conversation, depth = next.depth, "depth limit reached");
                replies.push((
                    ReplyKind::Notice,
                    format!(
                        "I stopped after {} steps without finishing (the limit is pipeline.max_depth).",
                        self.settings.max_depth
                    ),
                ));
                break;
            }
            signal = next;
        }
        TurnOutput {
            replies,
            record: Some(TurnRecord { messages: context.turn }),
            forget: false,
            memory: tool_context.memory.writes(),
        }
    }

    /// The sender's facts most related to `text`, for the context.
    fn facts(&self, memory: &MemorySession, text: &str) -> Vec<Fact> {
        if self.memory.context_facts == 0 {
            return Vec::new();
        }
        match memory.facts() {
            Ok(facts) => crate::memory::relevant(facts, text, self.memory.context_facts),
            Err(error) => {
                // The turn goes on without them; `recall` will report the error.
                tracing::error!(%error, "cannot read memory for the context");
                Vec::new()
            }
        }
    }
}
