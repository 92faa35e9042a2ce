//! The Telegram gateway of passepartout.
//!
//! [`TelegramGateway`] long-polls the Bot API (`getUpdates`) and hands every
//! update, normalized into the gateway contract, to the core's intake; it
//! advances the polling offset only after the core has journaled the message,
//! so a crash never loses an update and a redelivered one is a duplicate. Out
//! of the core it delivers replies as plain text with entities (the model's
//! Markdown rendered, never a `parse_mode` Telegram could refuse), split to
//! Telegram's length limit, and approval prompts with Approve / Deny buttons.
//!
//! The pieces, one per file:
//! - [`config`]: [`TelegramConfig`], the `[telegram]` section and its checks;
//! - [`settings`]: [`TelegramSettings`], with the token redacted from `Debug`;
//! - [`offset`]: [`OffsetStore`], where the polling offset survives restarts;
//! - [`gateway`]: [`TelegramGateway`], [`Deliver`](passepartout_gateway::Deliver)
//!   and [`check`] for `doctor`;
//! - `poll`: the long-polling loop behind [`Listen`](passepartout_gateway::Listen);
//! - `updates`: `getUpdates`, each update parsed on its own so that one that
//!   cannot be read is skipped instead of failing its whole batch;
//! - `failure`: what a failed Bot API call means; `backoff`: waits between failures;
//! - [`normalize`](normalize::normalize): a Bot API update into an
//!   [`Inbound`](passepartout_gateway::Inbound), or a reason to skip it;
//!   `media`: what a message with a voice note, photo, file, sticker,
//!   location or contact becomes;
//! - `fetch`: the contract's [`Fetch`](passepartout_gateway::Fetch), a file's
//!   bytes by `getFile` and a capped download;
//! - `draft`: a reply shown while it is written, a message edited as it
//!   grows, which the finished reply then takes over;
//! - [`reply`]: a reply's messages, the model's Markdown rendered;
//!   [`entities`](entities::entities): styled text as message entities;
//!   [`split`](split::split): long replies into messages Telegram accepts,
//!   entities kept whole;
//! - [`pacing`]: send slots inside Telegram's rate limits;
//! - [`files`]: a workspace file sent as a photo or a document;
//! - [`first_contact`](first_contact::first_contact): the first person to
//!   write to the bot, taken as its owner by `passepartout setup`;
//! - [`escape_html`](format::escape_html): for markup the gateway adds itself.

#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod config;
mod draft;
pub mod entities;
#[cfg(test)]
mod entities_props;
mod failure;
mod fetch;
pub mod files;
pub mod first_contact;
pub mod format;
pub mod gateway;
mod media;
pub mod menu;
pub mod normalize;
pub mod offset;
pub mod pacing;
mod poll;
pub mod reply;
pub mod settings;
pub mod split;
mod updates;

pub use config::TelegramConfig;
pub use files::MAX_UPLOAD_BYTES;
pub use first_contact::{Contact, ContactError, first_contact};
pub use format::escape_html;
pub use gateway::{ALWAYS_PREFIX, APPROVE_PREFIX, CheckedBot, DENY_PREFIX, TelegramGateway, check, checked};
pub use normalize::{GroupMode, Normalized, normalize};
pub use offset::{MemoryOffsetStore, OffsetStore};
pub use reply::{Part, parts};
pub use settings::TelegramSettings;
pub use split::{TELEGRAM_TEXT_LIMIT, split, utf16_len};

/// The gateway id of Telegram conversations.
pub const GATEWAY_ID: &str = "telegram";

/// What people can do with a message in Telegram: press an approval
/// prompt's buttons, or reply to it.
pub const SURFACE: passepartout_gateway::Surface = passepartout_gateway::Surface {
    buttons: true,
    reply_to: true,
    reactions: false,
    terminal: false,
    who_approves: None,
};
