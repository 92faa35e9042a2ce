//! The Matrix gateway: the assistant as a user of a Matrix homeserver,
//! answering direct chats and the rooms it is let into, end to end
//! encrypted where the room is.
//!
//! [`config`] is the `[matrix]` section, which every build reads. With the
//! `client` feature, [`client`] is the gateway itself, over matrix-sdk: it
//! logs in once and keeps its session and its encryption keys in its own
//! folder (SQLite stores, encrypted with a passphrase kept beside them),
//! syncs with a token the daemon saves only after what the sync brought is
//! journaled, accepts invitations from the people allowed to talk, and
//! sends replies formatted from the same Markdown as every surface.

#![deny(missing_docs)]

#[cfg(feature = "client")]
pub mod client;
pub mod config;

pub use config::MatrixSection;

/// The gateway id Matrix conversations carry.
pub const GATEWAY_ID: &str = "matrix";

/// What people can do with a message in Matrix: reply to an approval
/// prompt, or react to it with 👍 or 👎.
pub const SURFACE: passepartout_gateway::Surface = passepartout_gateway::Surface {
    buttons: false,
    reply_to: true,
    reactions: true,
    terminal: false,
    who_approves: None,
};
