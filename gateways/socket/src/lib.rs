//! The local socket gateway of passepartout: a Unix socket speaking
//! newline-delimited JSON ([`protocol`], version [`PROTOCOL_VERSION`]).
//!
//! The daemon binds a [`SocketGateway`] and runs it like every gateway: it
//! [`Listen`](passepartout_gateway::Listen)s for clients and hands their
//! messages to the core (their admin questions through a
//! [`passepartout_admin::Admin`] handle), and it [`Deliver`](passepartout_gateway::Deliver)s
//! the core's replies to the clients connected for the reply's chat. The CLI
//! (`passepartout chat`, `send`, `status`) talks to it through [`Client`].
//!
//! Only the daemon's own user gets in: the socket file has mode 0600 and every
//! peer's uid is checked. Of that user's processes, only those that can read
//! the key file beside the socket ([`key_path`]) get further than `hello`:
//! not a tool's confined process, which the sandbox keeps from that file.
//!
//! | concept | file |
//! | --- | --- |
//! | frames and error codes | `protocol.rs` |
//! | line framing with a length limit | the contract's `lines` |
//! | `[socket]`, settings, setup errors | `config.rs`, `error.rs` |
//! | the socket file: stale, live, mode, removal | `socket_file.rs` |
//! | the key a client presents | `key.rs` |
//! | the gateway: listen, deliver, close | `server.rs` |
//! | one connection's reader / writer | `connection.rs`, `writer.rs` |
//! | admin answers as frames | `admin.rs` |
//! | live connections by chat | `registry.rs` |
//! | ids for messages sent without one | `message_ids.rs` |
//! | the CLI's half | `client.rs` |

#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod admin;
mod client;
mod config;
mod connection;
mod error;
mod key;
mod message_ids;
pub mod protocol;
mod registry;
mod server;
pub mod size;
mod socket_file;
mod writer;

pub use client::{Client, ClientError, SendOutcome};
pub use config::{DEFAULT_MAX_CLIENTS, DEFAULT_MAX_LINE_BYTES, SocketConfig, SocketSection};
pub use error::SocketError;
pub use key::{SocketKey, key_path};
pub use passepartout_gateway::lines::{LineReader, ReadLine};
pub use protocol::{
    AccessAnswer, AccessRequest, AdminRequest, ClientFrame, DashboardRequest, ErrorCode, LoopControl, PROTOCOL_VERSION,
    Reloaded, ServerFrame, WebAnswer, WebRequest,
};
pub use server::{GATEWAY_ID, SURFACE, SocketGateway};
