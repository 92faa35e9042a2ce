//! A conversation's messages as a hash chain: each user or assistant
//! message (its role, and its text normalised: line ends as `\n`, outer
//! white space trimmed) folded into a SHA-256 of everything before it. Two
//! requests have the same [`Tip`] exactly when they carry the same
//! messages in the same order, so the tip a conversation reached with its
//! last answer names it, and a client that resends it continues it. The
//! system messages are the client's instructions, not the conversation, and
//! stay out of it.
//!
//! Folding a message costs one hash of its text: a history of 50 turns is
//! matched in microseconds.

use passepartout_gateway::EarlierRole;
use sha2::{Digest, Sha256};

/// Where a conversation stands: the hash of all its messages so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Tip(pub [u8; 32]);

/// A chain being folded.
#[derive(Clone, Debug)]
pub struct Chain {
    tip: [u8; 32],
}

impl Chain {
    /// The chain of no message yet, in the conversations of `scope` (the
    /// key's id and the `user` the client named, if any): the same history
    /// in another scope is another chain.
    pub fn new(scope: &str) -> Self {
        let mut hash = Sha256::new();
        hash.update(b"passepartout api conversation\0");
        hash.update((scope.len() as u64).to_le_bytes());
        hash.update(scope.as_bytes());
        Self {
            tip: hash.finalize().into(),
        }
    }

    /// Folds in a message `role` said.
    pub fn push(&mut self, role: EarlierRole, text: &str) {
        let normal = normalise(text);
        let mut hash = Sha256::new();
        hash.update(self.tip);
        hash.update([match role {
            EarlierRole::User => b'u',
            EarlierRole::Assistant => b'a',
        }]);
        hash.update((normal.len() as u64).to_le_bytes());
        hash.update(normal.as_bytes());
        self.tip = hash.finalize().into();
    }

    /// This chain with a message `role` said folded in.
    pub fn with(mut self, role: EarlierRole, text: &str) -> Self {
        self.push(role, text);
        self
    }

    /// Where it stands.
    pub fn tip(&self) -> Tip {
        Tip(self.tip)
    }
}

/// `text` as it is hashed: `\r\n` and `\r` as `\n`, trimmed. Clients
/// differ in these, never in what was said.
fn normalise(text: &str) -> std::borrow::Cow<'_, str> {
    let trimmed = text.trim();
    if trimmed.contains('\r') {
        std::borrow::Cow::Owned(trimmed.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        std::borrow::Cow::Borrowed(trimmed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use EarlierRole::{Assistant, User};

    fn chain(scope: &str, messages: &[(EarlierRole, &str)]) -> Tip {
        let mut chain = Chain::new(scope);
        for (role, text) in messages {
            chain.push(*role, text);
        }
        chain.tip()
    }

    #[test]
    fn the_same_messages_make_the_same_tip_whatever_the_line_ends_and_outer_spaces() {
        let sent = chain("k", &[(User, "hi\r\nthere"), (Assistant, "hello ")]);
        let again = chain("k", &[(User, "  hi\nthere"), (Assistant, "hello")]);
        assert_eq!(sent, again);
        let grown = Chain::new("k").with(User, "hi\nthere").with(Assistant, "hello");
        assert_eq!(grown.tip(), sent, "folded one by one or at once");
    }

    #[test]
    fn any_change_of_order_role_text_or_scope_is_another_tip() {
        let base = chain("k", &[(User, "a"), (Assistant, "b")]);
        for other in [
            chain("k", &[(Assistant, "b"), (User, "a")]),
            chain("k", &[(User, "a"), (User, "b")]),
            chain("k", &[(User, "a"), (Assistant, "c")]),
            chain("k", &[(User, "a")]),
            chain("k", &[(User, "ab")]),
            chain("k", &[(User, "a"), (Assistant, "b"), (User, "")]),
            chain("k2", &[(User, "a"), (Assistant, "b")]),
        ] {
            assert_ne!(other, base);
        }
        // A text's length is in the hash: no two splits of one text meet.
        assert_ne!(
            chain("k", &[(User, "a"), (User, "bc")]),
            chain("k", &[(User, "ab"), (User, "c")])
        );
    }
}
