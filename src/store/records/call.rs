//! A tool call the model proposed — what an approval holds and runs once a
//! person approves it.

use passepartout_gateway::visible;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A tool call the model proposed, with its arguments parsed.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProposedCall {
    pub tool: String,
    pub arguments: Value,
}

impl ProposedCall {
    /// A string argument, if the call has one by that name.
    pub fn string_argument(&self, name: &str) -> Option<&str> {
        self.arguments.get(name).and_then(Value::as_str)
    }

    /// The call as a person would read it: `shell: ls -la`, or the tool and
    /// its JSON arguments — on one line, with every character that could
    /// redraw, reorder or hide what it says shown as an escape
    /// ([`visible::line`]), and cut at [`SUMMARY_CHARS`], so a file's
    /// content never floods a message or a log line.
    pub fn summary(&self) -> String {
        let full = match (self.tool.as_str(), self.string_argument("command")) {
            ("shell", Some(command)) => format!("shell: {command}"),
            _ => format!("{} {}", self.tool, self.arguments),
        };
        let full = visible::line(&full);
        match full.char_indices().nth(SUMMARY_CHARS) {
            Some((cut, _)) => format!("{}…", &full[..cut]),
            None => full.into_owned(),
        }
    }
}

/// Longest [`ProposedCall::summary`], in characters.
pub const SUMMARY_CHARS: usize = 300;
