//! The local administration protocol of passepartout: what the owner of the
//! machine may ask the daemon (its status, the approvals and standing
//! rules, the background loops, pairing and who is let in, signing in to the web dashboard) and what the daemon answers, off the path chat messages take.
//!
//! An admin surface (the local socket, the web dashboard) holds an [`Admin`]
//! handle and [`Admin::ask`]s an [`AdminRequest`] as an [`Asker`] (who asks,
//! from where); the core serves the [`AdminQueue`] and answers each with an
//! [`AdminReply`]. A request is its own wire form: the socket carries it as
//! it is, so a new request is one variant here and its answer in the core. Unlike a chat message nothing here is
//! journaled: a request is answered, or the daemon is gone ([`AdminClosed`]).
//! The crate knows nothing of the core: documents the CLI renders whole (the
//! status document, the approvals listing, the loop statuses) travel as JSON
//! inside their typed variant.
//!
//! | concept | file |
//! | --- | --- |
//! | what may be asked | `request.rs` |
//! | who asks, from where | `asker.rs` |
//! | what is answered | `reply.rs` |
//! | the handle and the core's queue | `channel.rs` |
//! | what the dashboard's pages ask | `dashboard.rs` |

#![deny(missing_docs)]
#![cfg_attr(not(test), warn(clippy::too_many_lines))]

mod asker;
mod channel;
mod dashboard;
mod reply;
mod request;

pub use asker::Asker;
pub use channel::{Admin, AdminAs, AdminClosed, AdminQueue, Asked};
pub use dashboard::DashboardRequest;
pub use reply::{
    AccessAnswer, AdminReply, Decision, Decisions, LoopControl, Reloaded, RuleRevoked, Unreadable, WebAnswer,
};
pub use request::{AccessRequest, AdminRequest, Via, WebRequest};
