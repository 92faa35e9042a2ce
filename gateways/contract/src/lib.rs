//! The gateway contract: what every messenger integration of passepartout
//! speaks, and nothing else.
//!
//! A gateway turns platform updates into [`Inbound`] messages and hands them to
//! the core through an [`Intake`]; it acknowledges the platform only after the
//! core answered with an [`Ack`], which the core gives once the message is in its
//! durable journal. The core sends [`Outbound`] messages back through the
//! gateway's [`Deliver`] capability. This crate depends on no platform library
//! and on nothing else in the workspace; every other crate depends on it.
//! Beside the contract it holds what several gateways need alike: [`lines`],
//! newline framing with a length cap, [`retry`], backoff between attempts, and
//! [`markup`], the model's Markdown rendered for any surface, [`names`],
//! people's names made fit to show, [`parts`], sending a split message
//! part by part exactly once, [`names_a_link_code`], a link code said where
//! others read it, [`Secrets`], the configured secrets kept out of what a
//! gateway shows, and [`visible`], text shown for a decision (an approval's
//! command, an audit line) with every character that could redraw, reorder
//! or hide it as an escape. A gateway's [`Surface`] says what its people can
//! do with a message (buttons, replies, reactions, a terminal), so the core
//! words its own messages for it.

#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod client;
mod draft;
mod error;
mod gateway;
mod ids;
mod intake;
pub mod lines;
mod link_codes;
pub mod markup;
mod media;
mod message;
pub mod names;
pub mod parts;
pub mod readable;
mod refusals;
pub mod retry;
mod secrets;
mod surface;
pub mod visible;

pub use client::{ClientContext, EarlierMessage, EarlierRole};
pub use draft::{Draft, DraftPace, DraftText};
pub use error::{GatewayError, InvalidId};
pub use gateway::{Deliver, Fetch, GroupMode, Health, HealthState, Listen};
pub use ids::{ApprovalToken, ChatId, ConversationKey, GatewayId, MessageId, TOKEN_ALPHABET, UserId};
pub use intake::{Ack, Intake, IntakeClosed, IntakeEvent, IntakeQueue, Refusal};
pub use link_codes::names_a_link_code;
pub use media::{Attachment, Fetched, FileRef, MediaKind};
pub use message::{
    Delivered, Inbound, InboundBody, Normalized, Outbound, OutboundBody, OutboundFile, ReplyKind, Sender, TurnEnd,
    unix_ms,
};
pub use parts::{Progress, Resume, Untracked, send_parts};
pub use refusals::{REFUSAL_INTERVAL, Refusals};
pub use secrets::{LiveSecrets, REDACTED, Secrets};
pub use surface::Surface;
