//! The bot's command menu, set with `setMyCommands` when polling starts: the
//! commands a person can send without an argument. The daemon's `/help`
//! lists the same (and those that take a token); a test in the daemon's
//! crate keeps the two in step, since this crate cannot see the daemon's list.

/// Command and description, in menu order (Telegram: lowercase names of at
/// most 32 characters, descriptions of 3 to 256).
pub const COMMANDS: [(&str, &str); 18] = [
    ("start", "Start a conversation"),
    ("help", "What I can do"),
    ("status", "How the assistant is doing"),
    ("model", "List the models, or pin one here: /model NAME, /model auto"),
    ("usage", "Tokens and estimated cost, here and in total"),
    ("tools", "The tools I may use here, and which need your approval"),
    ("new", "Start afresh; earlier messages stay in the history"),
    ("summary", "What I keep of the earlier conversation, in short"),
    ("stop", "Stop what the assistant is doing here"),
    ("approvals", "Actions waiting for your approval"),
    ("rules", "Calls that run here without asking (standing rules)"),
    ("loops", "The background loops"),
    ("forget", "Forget this conversation"),
    ("link", "Link this chat with your other channels (a code)"),
    ("unlink", "Take this chat out of your linked channels"),
    ("handoff", "Go on with this conversation on your other linked channel"),
    ("continue", "Carry your latest conversation elsewhere over to here"),
    ("here", "Reminders and background results come to this chat"),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_entry_is_one_telegram_accepts() {
        for (command, description) in COMMANDS {
            assert!(
                (1..=32).contains(&command.len())
                    && command
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{command}"
            );
            assert!((3..=256).contains(&description.chars().count()), "{description}");
        }
    }
}
