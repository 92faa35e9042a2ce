//! The Signal gateway of passepartout, through a signal-cli daemon.
//!
//! signal-cli (`signal-cli daemon --receive-mode=manual --socket PATH` or
//! `--tcp HOST:PORT`) speaks JSON-RPC 2.0 over newline-delimited JSON. This
//! crate holds the gateway, one piece per file:
//!
//! - [`endpoint`]: [`Endpoint`], where the daemon listens (`unix:PATH`, `tcp:HOST:PORT`);
//! - [`rpc`]: [`RpcClient`], one task per connection matching responses by id,
//!   `receive` notifications on a channel;
//! - [`error`]: [`RpcError`] and the JSON-RPC [`ErrorCode`]s of signal-cli;
//! - [`normalize`](normalize()): a received envelope into an
//!   [`Inbound`](passepartout_gateway::Inbound), or a reason to skip it;
//! - [`gateway`]: [`SignalGateway`], the contract's `Listen` and `Deliver`;
//!   `listen`: its receiving loop (subscribe after every connect, one message
//!   at a time into the intake, reconnect with jittered backoff);
//! - [`settings`]: [`SignalSettings`], what the daemon configures;
//! - [`failure`]: what a failed call means for delivery; `backoff`: waits
//!   between failed connections; `authors`: who wrote what, for quotes;
//! - [`split`](split::split): long replies into several messages;
//! - `lines`: newline framing with a length cap.

mod authors;
pub mod endpoint;
pub mod error;
pub mod failure;
pub mod gateway;
mod lines;
mod listen;
pub mod normalize;
pub mod rpc;
pub mod settings;
pub mod split;

pub use endpoint::{Endpoint, InvalidEndpoint};
pub use error::{ErrorCode, RemoteError, RpcError};
pub use gateway::SignalGateway;
pub use normalize::{BotIdentity, GroupMode, Normalized, normalize};
pub use rpc::{Notification, Notifications, Received, RpcClient, RpcOptions};
pub use settings::SignalSettings;
pub use split::{SIGNAL_TEXT_LIMIT, split};

/// The gateway id of Signal conversations.
pub const GATEWAY_ID: &str = "signal";
