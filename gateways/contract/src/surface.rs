//! What a gateway's surface lets a person do with a message the daemon
//! sends, so the core can word its own messages (approval prompts,
//! command output, notices) for it: a terminal is never told to "reply to
//! this message", a chat is never shown a command to type in a shell.
//!
//! Each gateway crate states its [`Surface`] as a constant; the core reads
//! it from the gateway's component and looks it up by a conversation's
//! gateway. Capabilities rather than platform names keep the core free of
//! any one platform: a new gateway words well by saying what it can do.

/// How people read and answer on one surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Surface {
    /// Approval prompts carry buttons (Approve / Always / Deny) to press.
    pub buttons: bool,
    /// A person can reply to (quote) a message, and a reply to a prompt
    /// answers it.
    pub reply_to: bool,
    /// A reaction on a prompt (👍 / 👎) answers it.
    pub reactions: bool,
    /// A terminal on the daemon's machine: the `passepartout` commands are
    /// at hand, and a one-word line typed after a prompt answers it.
    pub terminal: bool,
    /// Who may answer an approval here, told to someone who may not. Set
    /// only where each conversation is one person's own, so the one answering
    /// in it by token was shown the prompt and learns nothing by being told.
    pub who_approves: Option<&'static str>,
}

impl Surface {
    /// A surface that allows nothing beyond typed text: what the core
    /// assumes for a gateway it does not know.
    pub const TEXT: Surface = Surface {
        buttons: false,
        reply_to: false,
        reactions: false,
        terminal: false,
        who_approves: None,
    };
}
