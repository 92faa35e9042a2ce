//! The Signal gateway of passepartout, through a signal-cli daemon.
//!
//! signal-cli (`signal-cli daemon --receive-mode=manual --socket PATH` or
//! `--tcp HOST:PORT`) speaks JSON-RPC 2.0 over newline-delimited JSON. This
//! crate holds the gateway, one piece per file:
//!
//! - [`config`]: [`SignalConfig`], the `[signal]` section and its checks;
//! - [`endpoint`]: [`Endpoint`], where the daemon listens (`unix:PATH`, `tcp:HOST:PORT`);
//! - [`rpc`]: [`RpcClient`], one task per connection matching responses by id,
//!   `receive` notifications on a channel;
//! - [`error`]: [`RpcError`] and the JSON-RPC [`ErrorCode`]s of signal-cli;
//! - [`normalize`](normalize()): a received envelope into an
//!   [`Inbound`](passepartout_gateway::Inbound), or a reason to skip it;
//!   [`media`]: what attachments, stickers and contacts become, and the
//!   [`SignalFile`] an attachment is fetched by; `fetch`: the contract's
//!   [`Fetch`](passepartout_gateway::Fetch), by `getAttachment`;
//! - [`gateway`]: [`SignalGateway`], the contract's `Listen` and `Deliver`;
//!   `listen`: its receiving loop (subscribe after every connect, one message
//!   at a time into the intake, reconnect with jittered backoff);
//! - [`settings`]: [`SignalSettings`], what the daemon configures, and the
//!   [`Transport`]: connect to a daemon, or start signal-cli ourselves;
//! - [`spawn`]: [`Spawn`], signal-cli as our child, spoken to over its stdin
//!   and stdout (`signal-cli jsonRpc`), killed with its connection;
//! - [`failure`]: what a failed call means for delivery; `message_id`: which
//!   message and who wrote it, in one id;
//! - [`reply`]: a reply's messages, the model's Markdown rendered;
//!   [`styles`](styles::text_styles): styled text as signal-cli's
//!   `textStyle`; [`split`](split::split): long replies into several
//!   messages, styles kept whole;
//! - [`files`]: a workspace file sent as an attachment (a data URI);
//!   `decided`: an approval prompt edited to say what was decided;
//!   `withdraw`: a draft nothing took over deleted for everyone;
//! - on a person's own account (the assistant a linked device of it):
//!   [`admission`], which messages reach the core at all (Note to Self and
//!   the listed, never strangers); [`own_sends`], what was sent, so that a
//!   reply echoed back into Note to Self is not taken as input; [`link`],
//!   linking the account (`startLink`, `finishLink`).
//!
//! Lines from signal-cli are framed by the contract's
//! [`lines`](passepartout_gateway::lines), with a length cap.

#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod admission;
pub mod config;
mod decided;
pub mod endpoint;
pub mod error;
pub mod failure;
mod fetch;
pub mod files;
pub mod gateway;
pub mod link;
mod listen;
pub mod media;
mod message_id;
pub mod normalize;
pub mod own_sends;
pub mod reply;
pub mod rpc;
pub mod settings;
pub mod spawn;
pub mod split;
pub mod styles;
mod withdraw;

pub use config::SignalConfig;
pub use endpoint::{Endpoint, InvalidEndpoint};
pub use error::{ErrorCode, RemoteError, RpcError};
pub use files::MAX_ATTACHMENT_BYTES;
pub use gateway::SignalGateway;
pub use link::{LinkError, LinkUri, Linked};
pub use media::SignalFile;
pub use normalize::{BotIdentity, GroupMode, Groups, Normalized, normalize, note_to_self_chat};
pub use rpc::{Notification, Notifications, Received, RpcClient, RpcOptions};
pub use settings::{Admitted, SignalSettings, Transport};
pub use spawn::Spawn;
pub use split::{SIGNAL_TEXT_LIMIT, split};

/// The gateway id of Signal conversations.
pub const GATEWAY_ID: &str = "signal";

/// What people can do with a message in Signal: quote-reply to an
/// approval prompt, or react to it with 👍 or 👎.
pub const SURFACE: passepartout_gateway::Surface = passepartout_gateway::Surface {
    buttons: false,
    reply_to: true,
    reactions: true,
    terminal: false,
    who_approves: None,
};
