//! passepartout: a self-hosted assistant daemon.
//!
//! Messages arrive through [`gateways`] (each a component the daemon
//! builds from one list), are journaled by the [`engine::intake`], run
//! through the Perceive → Reason → Act [`engine::pipeline`] by one worker
//! per conversation ([`engine::conversations`]), and leave through the
//! durable outbox. [`daemon`] wires it together; [`cli`] is the command
//! line.
//!
//! The folders are layers, each importing only those listed after it
//! (`.ci/check-imports` holds them to it):
//!
//! - [`cli`]: the command line, the daemon's client;
//! - [`daemon`]: the running daemon, its background tasks and its answers
//!   to the local administration;
//! - [`operator`]: status, the doctor and setup;
//! - [`gateways`]: each gateway's core side, one folder each;
//! - [`engine`]: the conversation engine, from intake to a turn's end;
//! - [`safety`]: the skills, approvals, tools and their sandbox;
//! - [`people`]: who may talk, pairing, linking, the audit trail;
//! - [`model`]: the language model and what it reads;
//! - [`store`]: the embedded store, the floor every record lies on;
//! - [`config`]: the configuration file;
//! - [`foundation`]: the clock, the lifecycle and other plain parts.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod cli;
pub mod config;
pub mod daemon;
pub mod engine;
pub mod foundation;
pub mod gateways;
pub mod model;
pub mod operator;
pub mod people;
pub mod safety;
pub mod store;

/// The end-to-end tests' skip, for the unit tests too: one line format and
/// one `PP_REQUIRE` for both.
#[cfg(test)]
#[path = "../tests/support/skip.rs"]
#[allow(dead_code)] // the needs only the end-to-end tests skip for
mod skip;

pub use daemon::{Daemon, Extensions, StartError, run};
