//! The Perceive → Reason → Act pipeline for one turn.
//!
//! [`Pipeline::run`] composes the three stages: perceive the inbound message,
//! then reason and act until act returns no feedback signal, the depth limit
//! is reached, or no model answers. It writes nothing: it returns what the
//! turn produced, and the conversation worker commits that in one transaction.

pub mod act;
pub mod commands;
pub mod perceive;
pub mod reason;

use std::sync::Arc;

use passepartout_gateway::{Inbound, ReplyKind};
use serde::{Deserialize, Serialize};

use crate::config::PipelineConfig;
use crate::llm::ChatMessage;
use crate::signal::SignalBody;
use crate::tools::ToolBox;
use perceive::Perception;
use reason::Reasoner;

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
}

/// The stages with what they need.
pub struct Pipeline {
    settings: PipelineConfig,
    reasoner: Arc<Reasoner>,
    tools: ToolBox,
}

impl Pipeline {
    pub fn new(settings: PipelineConfig, reasoner: Arc<Reasoner>, tools: ToolBox) -> Self {
        Self {
            settings,
            reasoner,
            tools,
        }
    }

    pub fn reasoner(&self) -> &Reasoner {
        &self.reasoner
    }

    /// Runs one turn for `inbound`, given the conversation's recent `history`;
    /// `status` renders the daemon's status for `/status`.
    pub async fn run(&self, inbound: &Inbound, history: &[TurnRecord], status: impl FnOnce() -> String) -> TurnOutput {
        let signal = match perceive::perceive(inbound) {
            Perception::Ignore => return TurnOutput::default(),
            Perception::Command(command) => {
                let outcome = commands::execute(&command, status);
                return TurnOutput {
                    replies: vec![(ReplyKind::Notice, outcome.text)],
                    record: None,
                    forget: outcome.forget,
                };
            }
            Perception::Signal(signal) => signal,
        };
        let mut transcript = match &signal.body {
            SignalBody::Message(message) => vec![ChatMessage::user(message.text.clone())],
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
            SignalBody::ToolResults(_) => Vec::new(),
        };
        let mut replies = Vec::new();
        let mut signal = signal;
        loop {
            let context = reason::build_context(&self.settings.system_prompt, history, &transcript);
            let proposal = match self.reasoner.reason(context, self.tools.specs()).await {
                Ok(proposal) => proposal,
                Err(exhausted) => {
                    // Not remembered: the person can simply ask again.
                    replies.push((ReplyKind::Failure, exhausted.to_string()));
                    return TurnOutput {
                        replies,
                        record: None,
                        forget: false,
                    };
                }
            };
            let acted = act::act(&signal, proposal, &self.tools).await;
            transcript.extend(acted.transcript);
            if let Some(reply) = acted.reply {
                replies.push((ReplyKind::Answer, reply));
            }
            match acted.feedback {
                None => break,
                Some(next) if next.depth > self.settings.max_depth => {
                    tracing::warn!(conversation = %signal.origin.conversation, depth = next.depth, "depth limit reached");
                    replies.push((
                        ReplyKind::Notice,
                        format!(
                            "I stopped after {} steps without finishing (the limit is pipeline.max_depth).",
                            self.settings.max_depth
                        ),
                    ));
                    break;
                }
                Some(next) => signal = next,
            }
        }
        TurnOutput {
            replies,
            record: Some(TurnRecord { messages: transcript }),
            forget: false,
        }
    }
}
