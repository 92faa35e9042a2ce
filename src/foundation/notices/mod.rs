//! The daemon's own messages: how they are written, and for which surface.
//!
//! Every text the daemon itself sends — approval prompts and outcomes,
//! reminders, `/status`, `/help`, `/usage`, `/rules`, pairing and setup
//! messages, every [`ReplyKind::Notice`](passepartout_gateway::ReplyKind)
//! and failure — is **Markdown**, and every surface renders it through the
//! same renderer as the model's answers (`markup::render`), so nobody ever
//! sees a literal backtick or `**`. The convention for writing one:
//!
//! - Write the sentence as Markdown: `**bold**` for a headline, a code span
//!   for what a person types (`` `/rules revoke 3` ``, `` `approve k3j4h5g6` ``).
//! - Never paste a value in raw. A command, a file name, a token or a
//!   person's words go in through `passepartout_gateway::markup`'s
//!   [`code`](passepartout_gateway::markup::code) (a code span no backtick
//!   inside can close), [`code_block`](passepartout_gateway::markup::code_block)
//!   (for what may span lines, shown as it will run) or
//!   [`escape`](passepartout_gateway::markup::escape) (ordinary text that
//!   starts no markup).
//! - Word it for the surface ([`Surfaces::of`] a conversation): a chat is
//!   never shown a command to type in a shell, a terminal is never told to
//!   "reply to this message" or tap a button.
//! - Add the text to the sweep in `sweep_tests.rs`, which renders every
//!   notice for Telegram and finds no markup left over.

mod surfaces;
#[cfg(test)]
mod sweep_tests;

use passepartout_gateway::{Inbound, MessageId, Outbound, OutboundBody, ReplyKind, TurnEnd};

pub use surfaces::Surfaces;

/// A notice of `from`'s own (pairing, linking) into `inbound`'s
/// conversation, outside any turn: the intake sends it at once, and its id
/// is `from` and the message it answers. It is all that message gets (no
/// turn follows, no model was asked), so it carries the end of a turn
/// that used no tokens: a client waiting for the end, as the web API
/// does, has its answer.
pub fn outside(inbound: &Inbound, from: &str, in_reply_to: Option<MessageId>, text: String) -> Outbound {
    Outbound {
        id: format!("{from}-{}", inbound.message_id),
        conversation: inbound.conversation.clone(),
        in_reply_to,
        body: OutboundBody::Text {
            text,
            kind: ReplyKind::Notice,
        },
        drafts: Vec::new(),
        turn_end: Some(TurnEnd {
            tokens_in: 0,
            tokens_out: 0,
        }),
    }
}
