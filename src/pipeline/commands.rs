//! Slash commands: answered by the daemon itself, never by the model.

use super::perceive::Command;

/// What a command produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    pub text: String,
    /// Whether the conversation's history is to be deleted.
    pub forget: bool,
}

pub const HELP: &str = "Commands:\n\
/help — this list\n\
/status — what the assistant is doing and how it is\n\
/forget — forget this conversation's history\n\
/approvals — what waits for approval here\n\
/loops — the background loops (the heartbeat, …)\n\
/approve TOKEN, /deny TOKEN — decide one (or reply approve / deny to its prompt)\n\
/cancel [TOKEN] — withdraw what you asked for\n\
Anything else you write goes to the assistant.";

/// A report about the daemon that a command shows, rendered by the caller
/// (which has the daemon at hand).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The status, as `passepartout status` shows it.
    Status,
    /// The background loops, as `passepartout loops` shows them.
    Loops,
}

/// Executes `command`; `view` renders a report about the daemon when asked.
pub fn execute(command: &Command, view: impl FnOnce(View) -> String) -> CommandOutcome {
    let (text, forget) = match command {
        Command::Help => (HELP.to_owned(), false),
        Command::Status => (view(View::Status), false),
        Command::Loops => (view(View::Loops), false),
        Command::Forget => ("I have forgotten this conversation's history.".to_owned(), true),
        // Answered by the pipeline, which has the approvals at hand.
        Command::Approvals => (String::new(), false),
        Command::Unknown(name) => (format!("I don't know the command /{name}. Try /help."), false),
    };
    CommandOutcome { text, forget }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forget_asks_for_the_history_to_go() {
        assert!(execute(&Command::Forget, |_| String::new()).forget);
        assert!(!execute(&Command::Help, |_| String::new()).forget);
    }

    #[test]
    fn status_renders_lazily_and_unknown_commands_point_to_help() {
        let view = |view: View| format!("{view:?}");
        assert_eq!(execute(&Command::Status, view).text, "Status");
        assert_eq!(execute(&Command::Loops, view).text, "Loops");
        assert!(
            execute(&Command::Unknown("x".into()), |_| unreachable!())
                .text
                .contains("/help")
        );
    }
}
