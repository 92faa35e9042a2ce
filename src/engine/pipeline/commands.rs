//! Slash commands: answered by the daemon itself, never by the model.

use passepartout_gateway::markup::escape;

use super::perceive::Command;

/// What a command produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandOutcome {
    pub text: String,
    /// Whether the conversation's history is to be deleted.
    pub forget: bool,
}

/// Every command a person can send, with one line on what it does: `/help`
/// lists them and the chat gateways offer them as a menu.
pub const COMMANDS: &[(&str, &str)] = &[
    ("help", "this list"),
    ("status", "what the assistant is doing and how it is"),
    (
        "model",
        "list the models; /model NAME asks NAME first here, /model auto the usual order",
    ),
    ("usage", "tokens and estimated cost, here and in total"),
    ("tools", "the tools the assistant may use here, and which need approval"),
    (
        "new",
        "start afresh: earlier messages stay in the history but leave the context",
    ),
    (
        "summary",
        "what I keep of the earlier conversation in short, once it outgrew what I am shown",
    ),
    (
        "stop",
        "stop what the assistant is doing here (its model call and commands)",
    ),
    ("forget", "forget this conversation's history"),
    ("approvals", "what waits for approval here"),
    ("loops", "the background loops (the heartbeat, …)"),
    ("approve", "approve TOKEN (or reply approve to its prompt)"),
    (
        "always",
        "always TOKEN: approve, and let calls like it run here without asking (or reply always to its prompt)",
    ),
    ("deny", "deny TOKEN (or reply deny to its prompt)"),
    (
        "rules",
        "the standing rules: calls that run here without asking; /rules revoke ID ends one",
    ),
    ("cancel", "cancel [TOKEN]: withdraw what you asked for"),
    (
        "pair",
        "pair approve CODE: let in someone who asked with that code (add approver: they approve too)",
    ),
    (
        "link",
        "a code to link this chat with your other channels (one memory); /link CODE there links them",
    ),
    ("unlink", "take this chat out of the channels it is linked with"),
    (
        "handoff",
        "handoff CHANNEL: go on with this conversation in your linked chat there",
    ),
    (
        "continue",
        "carry your latest conversation on a linked channel over to here",
    ),
    (
        "here",
        "reminders and background results come to this chat, or your next linked one when it cannot be reached",
    ),
];

/// The `/help` text; `channels` are the words `/handoff` takes, one for
/// each gateway the daemon runs (as each declares it).
pub fn help(channels: &[&str]) -> String {
    let mut text = "**Commands**:".to_owned();
    for (name, what) in COMMANDS {
        text.push_str(&format!("\n/{name} — {what}"));
        if *name == "handoff" && !channels.is_empty() {
            text.push_str(&format!(" (CHANNEL: {})", channels.join(", ")));
        }
    }
    text.push_str("\nAnything else you write goes to the assistant.");
    text
}

/// A change to what the conversation set for itself, for the caller to store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChatChange {
    /// Ask this provider first here (`None`: the usual order).
    Pin(Option<String>),
    /// Leave the turns so far out of the context (`/new`).
    FreshStart,
}

/// What a linked person asked of their channels; answered by the caller,
/// which knows whom they are linked with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChannelAsk {
    /// Carry this conversation over to the linked chat on this channel
    /// (the only other one, when `None`).
    HandOff(Option<String>),
    /// Carry the latest of the other linked chats over to this one.
    Continue,
    /// Deliver what comes unasked to this chat first.
    Here,
}

/// A report about the daemon that a command shows, rendered by the caller
/// (which has the daemon at hand).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// The status, as `passepartout status` shows it.
    Status,
    /// The background loops, as `passepartout loops` shows them.
    Loops,
    /// This conversation's tokens and cost, and the totals.
    Usage,
    /// Whether `/stop` stopped a turn here.
    Stopped,
    /// The commands, with the channels `/handoff` takes.
    Help,
}

/// The answer to `/name`, which is no command: the nearest command, when
/// one is close (as `check-config` suggests a setting), and `/help`.
fn unknown(name: &str) -> String {
    let nearest = crate::safety::skills::closest(name, COMMANDS.iter().map(|(command, _)| *command));
    match nearest {
        Some(command) => format!(
            "I don't know the command /{}. Did you mean /{command}? /help lists them all.",
            escape(name)
        ),
        None => format!("I don't know the command /{}. Try /help.", escape(name)),
    }
}

/// Executes `command`; `view` renders a report about the daemon when asked.
pub fn execute(command: &Command, view: impl FnOnce(View) -> String) -> CommandOutcome {
    let (text, forget) = match command {
        Command::Help => (view(View::Help), false),
        Command::Status => (view(View::Status), false),
        Command::Loops => (view(View::Loops), false),
        Command::Usage => (view(View::Usage), false),
        Command::Stop => (view(View::Stopped), false),
        Command::New => (
            "Starting afresh: I won't use our earlier messages (they stay in the history; /forget deletes them)."
                .to_owned(),
            false,
        ),
        Command::Forget => ("I have forgotten this conversation's history.".to_owned(), true),
        // Answered by the pipeline, which has the approvals, models, summary and tools at hand.
        Command::Approvals
        | Command::Model(_)
        | Command::Summary
        | Command::Tools
        | Command::Handoff(_)
        | Command::Continue
        | Command::Here => (String::new(), false),
        Command::Unknown(name) => (unknown(name), false),
    };
    CommandOutcome { text, forget }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_mistyped_command_is_answered_with_the_nearest_one() {
        let said = |name: &str| execute(&Command::Unknown(name.into()), |_| String::new()).text;
        assert_eq!(
            said("statuss"),
            "I don't know the command /statuss. Did you mean /status? /help lists them all."
        );
        assert_eq!(
            said("modle"),
            "I don't know the command /modle. Did you mean /model? /help lists them all."
        );
        assert_eq!(said("frobnicate"), "I don't know the command /frobnicate. Try /help.");
    }

    #[test]
    fn help_lists_every_command_once() {
        let help = help(&["telegram", "terminal"]);
        for (name, _) in COMMANDS {
            assert_eq!(help.matches(&format!("\n/{name} ")).count(), 1, "{name}");
        }
        for new in ["/model", "/usage", "/new", "/forget", "/summary", "/pair"] {
            assert!(help.contains(new), "{new}");
        }
        assert!(help.contains("there (CHANNEL: telegram, terminal)"), "{help}");
    }

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
        assert_eq!(execute(&Command::Usage, view).text, "Usage");
        assert!(
            execute(&Command::Unknown("x".into()), |_| unreachable!())
                .text
                .contains("/help")
        );
    }
}
