//! The Telegram gateway of passepartout.
//!
//! When complete, this crate long-polls the Bot API (`getUpdates`) and hands
//! every update, normalized into the gateway contract, to the core's intake; it
//! advances the polling offset only after the core has journaled the message,
//! so a crash never loses an update and a redelivered one is a duplicate. Out
//! of the core it delivers replies as plain text split to Telegram's length
//! limit, and approval prompts with Approve / Deny buttons.
//!
//! This part provides the pure pieces that loop is built from:
//! [`split`](split::split) (long replies into messages Telegram accepts),
//! [`escape_html`](format::escape_html) (for the bit of markup the gateway adds
//! itself) and [`normalize`](normalize::normalize) (a Bot API update into an
//! [`Inbound`](passepartout_gateway::Inbound), or a reason to skip it).

pub mod format;
pub mod normalize;
pub mod split;

pub use format::escape_html;
pub use normalize::{GroupMode, Normalized, normalize};
pub use split::{TELEGRAM_TEXT_LIMIT, split, utf16_len};

/// The gateway id of Telegram conversations.
pub const GATEWAY_ID: &str = "telegram";
