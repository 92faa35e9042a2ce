//! A loop's iteration as a turn: the loop's prompt enters the pipeline like
//! a message in its output conversation, from the loop (sender `loop:NAME`),
//! so the same skills gate its tool calls and a risky call waits for an
//! approval in that conversation. A supervisor iteration asks the
//! supervisor's model first and adds its review instructions.

use std::sync::Arc;

use passepartout_gateway::{ConversationKey, MessageId, UserId};

use super::{Pipeline, TurnOptions, TurnOutput, TurnRecord};
use crate::loops::spec::{LoopName, Supervisor};
use crate::memory::MemorySession;
use crate::signal::{Message, Origin, Signal, SignalBody};
use crate::tools::next_sleep::LoopTurn;

/// One iteration of a task loop, as the pipeline needs it.
#[derive(Clone, Debug)]
pub struct LoopPrompt {
    pub name: LoopName,
    /// Which iteration (for the turn's id), unique for the loop.
    pub iteration: u64,
    pub conversation: ConversationKey,
    pub prompt: String,
    /// Set in a supervisor iteration.
    pub supervisor: Option<Supervisor>,
    /// What `set_next_sleep` may choose.
    pub turn: Arc<LoopTurn>,
}

impl LoopPrompt {
    /// Who a loop's turns are from: `loop:NAME`.
    pub fn sender(name: &LoopName) -> UserId {
        UserId::new(format!("loop:{name}")).expect("a loop name makes a valid user id")
    }

    /// Whether `sender` is a loop: its iterations, and the turns that
    /// finish its approved actions. No gateway makes such an id.
    pub fn is_loop(sender: &UserId) -> bool {
        sender.as_str().starts_with("loop:")
    }

    /// What the model reads.
    fn text(&self) -> String {
        let mut text = format!(
            "[Background loop \"{}\": this was not written by a person. Do the task below; \
             your answer is sent to this conversation.",
            self.name
        );
        if !self.turn.scheduled {
            text += " You may choose when the next iteration runs with set_next_sleep.";
        }
        text += "]\n\n";
        text += &self.prompt;
        if let Some(supervisor) = &self.supervisor
            && !supervisor.review.trim().is_empty()
        {
            text += "\n\n[Supervisor review]\n";
            text += &supervisor.review;
        }
        text
    }
}

impl Pipeline {
    /// Runs one iteration of a task loop in its output conversation, given
    /// that conversation's recent `history` and the loop's own `memory`.
    pub async fn run_loop(&self, prompt: &LoopPrompt, history: &[TurnRecord], memory: MemorySession) -> TurnOutput {
        let id = format!("loop-{}-{}", prompt.name, prompt.iteration);
        let message_id = MessageId::new(id).expect("a loop name makes a valid message id");
        let text = prompt.text();
        let signal = Signal {
            origin: Origin {
                conversation: prompt.conversation.clone(),
                sender: LoopPrompt::sender(&prompt.name),
                message_id,
            },
            depth: 0,
            body: SignalBody::Message(Message { text: text.clone() }),
        };
        let options = TurnOptions {
            keep: false,
            preferred_model: prompt.supervisor.as_ref().map(|s| s.model.clone()),
            loop_turn: Some(prompt.turn.clone()),
        };
        self.converse(signal, text, history, memory, options).await
    }
}
