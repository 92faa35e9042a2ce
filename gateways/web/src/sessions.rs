//! What the gateway asks of the core about signing in. The core keeps the
//! links and sessions in its store (as SHA-256 hashes only) and answers by
//! this trait: a direct call, since every page view checks its session and
//! should not wait in the admin queue behind a slow reload. Issuing a link
//! and listing or revoking sessions are the owner's questions from the CLI,
//! which travel as admin requests and never pass through here.

use thiserror::Error;

/// The store could not be read or written; the message is for people.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[error("{message}")]
pub struct SessionsUnavailable {
    /// Why, for people.
    pub message: String,
}

/// Sign-in links and sessions, kept by the core.
pub trait Sessions: Send + Sync {
    /// Trades the one-time link `token` for a new session of a browser
    /// saying it is `user_agent`; the session's id, or none when the link is
    /// unknown, used or expired (all alike, so a guess learns nothing).
    fn redeem(&self, token: &str, user_agent: &str) -> Result<Option<String>, SessionsUnavailable>;

    /// Whether `session` is a live session, marking it seen now; one that
    /// expired is forgotten and answers false.
    fn check(&self, session: &str) -> Result<bool, SessionsUnavailable>;

    /// Ends `session` (signing out).
    fn end(&self, session: &str) -> Result<(), SessionsUnavailable>;
}
