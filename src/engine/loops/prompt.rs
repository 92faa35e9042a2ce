//! A loop's iteration as a turn: the loop's prompt enters the pipeline like
//! a message in its output conversation, from the loop (sender `loop:NAME`),
//! so the same skills gate its tool calls and a risky call waits for an
//! approval in that conversation. A supervisor iteration asks the
//! supervisor's model first and adds its review instructions.

use std::sync::Arc;

use passepartout_gateway::{ConversationKey, MessageId, UserId};

use crate::engine::loops::next_sleep::LoopTurn;
use crate::engine::loops::spec::{LoopName, Supervisor};
use crate::engine::pipeline::BackgroundTurn;
use crate::model::signal::Origin;

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

    /// The iteration as the pipeline runs it.
    pub fn turn(&self) -> BackgroundTurn {
        let id = format!("loop-{}-{}", self.name, self.iteration);
        let message_id = MessageId::new(id).expect("a loop name makes a valid message id");
        BackgroundTurn {
            origin: Origin {
                conversation: self.conversation.clone(),
                sender: LoopPrompt::sender(&self.name),
                message_id,
                sender_names: Default::default(),
            },
            text: self.text(),
            preferred_model: self.supervisor.as_ref().map(|s| s.model.clone()),
            in_loop: self.turn.clone(),
        }
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
        text += &*self.prompt;
        if let Some(supervisor) = &self.supervisor
            && !supervisor.review.trim().is_empty()
        {
            text += "\n\n[Supervisor review]\n";
            text += &*supervisor.review;
        }
        text
    }
}
