//! What the gateway asks of the core about the owner's chats: the
//! conversations "New chat" opens on the Chat page, each with a name (from
//! its first message, or one the owner gave it), newest first. The core
//! keeps them in its store and answers by this trait, a direct call as for
//! [`Sessions`](crate::Sessions). A chat is a conversation like any other
//! (`web:owner/<id>`, [`crate::people::Person::chat`]): its history, memory,
//! tools and approvals are the core's, and deleting one forgets its history
//! through the intake (`/forget`) before the record goes.

use crate::sessions::SessionsUnavailable;

/// The id of the conversation the owner had before there were several
/// chats (`web:owner`): the core lists it as a chat of its own when it
/// holds history, so nothing said there is lost from the Chat page.
pub const EARLIER_CHAT_ID: &str = "0000000000000000";

/// One of the owner's chats.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebChat {
    /// Short lowercase hex, as in `/chat/{id}`.
    pub id: String,
    /// Empty until its first message or a rename names it.
    pub name: String,
    /// When it was made, in milliseconds since the epoch.
    pub created_ms: u64,
    /// When a message was last sent in it; 0 while none has been.
    pub last_ms: u64,
}

impl WebChat {
    /// When it was last used: its last message, or its making.
    pub fn newest_ms(&self) -> u64 {
        self.last_ms.max(self.created_ms)
    }
}

/// The owner's chats, kept by the core.
pub trait Chats: Send + Sync {
    /// Every chat, the most recently used first.
    fn list(&self) -> Result<Vec<WebChat>, SessionsUnavailable>;

    /// The chat `id`, if there is one.
    fn get(&self, id: &str) -> Result<Option<WebChat>, SessionsUnavailable>;

    /// A chat to start afresh in: the newest one when nothing was sent in
    /// it yet, else a new one.
    fn open(&self) -> Result<WebChat, SessionsUnavailable>;

    /// A message was sent in `id` now; one without a name is named `name`.
    fn sent(&self, id: &str, name: &str) -> Result<(), SessionsUnavailable>;

    /// Names `id` `name`; whether there was such a chat.
    fn rename(&self, id: &str, name: &str) -> Result<bool, SessionsUnavailable>;

    /// Forgets the chat `id` (its history is forgotten apart); whether
    /// there was one.
    fn delete(&self, id: &str) -> Result<bool, SessionsUnavailable>;
}
