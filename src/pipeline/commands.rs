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
/approve TOKEN, /deny TOKEN — decide one (or reply approve / deny to its prompt)\n\
/cancel [TOKEN] — withdraw what you asked for\n\
Anything else you write goes to the assistant.";

/// Executes `command`; `status` renders the daemon's status when asked.
pub fn execute(command: &Command, status: impl FnOnce() -> String) -> CommandOutcome {
    let (text, forget) = match command {
        Command::Help => (HELP.to_owned(), false),
        Command::Status => (status(), false),
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
        assert!(execute(&Command::Forget, String::new).forget);
        assert!(!execute(&Command::Help, String::new).forget);
    }

    #[test]
    fn status_renders_lazily_and_unknown_commands_point_to_help() {
        assert_eq!(execute(&Command::Status, || "all good".into()).text, "all good");
        assert!(
            execute(&Command::Unknown("x".into()), || unreachable!())
                .text
                .contains("/help")
        );
    }
}
