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
//! - [`gateway`]: [`SignalGateway`], the contract's `Listen` and `Deliver`;
//!   `listen`: its receiving loop (subscribe after every connect, one message
//!   at a time into the intake, reconnect with jittered backoff);
//! - [`settings`]: [`SignalSettings`], what the daemon configures, and the
//!   [`Transport`]: connect to a daemon, or start signal-cli ourselves;
//! - [`spawn`]: [`Spawn`], signal-cli as our child, spoken to over its stdin
//!   and stdout (`signal-cli jsonRpc`), killed with its connection;
//! - [`failure`]: what a failed call means for delivery; `message_id`: which
//!   message and who wrote it, in one id;
//! - [`split`](split::split): long replies into several messages;
//! - [`files`]: a workspace file sent as an attachment (a data URI).
//!
//! Lines from signal-cli are framed by the contract's
//! [`lines`](passepartout_gateway::lines), with a length cap.

pub mod config;
pub mod endpoint;
pub mod error;
pub mod failure;
pub mod files;
pub mod gateway;
mod listen;
mod message_id;
pub mod normalize;
pub mod rpc;
pub mod settings;
pub mod spawn;
pub mod split;

pub use config::SignalConfig;
pub use endpoint::{Endpoint, InvalidEndpoint};
pub use error::{ErrorCode, RemoteError, RpcError};
pub use files::MAX_ATTACHMENT_BYTES;
pub use gateway::SignalGateway;
pub use normalize::{BotIdentity, GroupMode, Normalized, normalize};
pub use rpc::{Notification, Notifications, Received, RpcClient, RpcOptions};
pub use settings::{SignalSettings, Transport};
pub use spawn::Spawn;
pub use split::{SIGNAL_TEXT_LIMIT, split};

/// The gateway id of Signal conversations.
pub const GATEWAY_ID: &str = "signal";
