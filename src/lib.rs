//! passepartout: a self-hosted assistant daemon.
//!
//! Messages arrive through [`gateways`] (each a component the daemon
//! builds from one list), are journaled by the [`intake`], run through the
//! Perceive → Reason → Act [`pipeline`] by one worker per conversation
//! ([`conversations`]), and leave through the durable outbox. [`daemon`] wires
//! it together; [`cli`] is the command line.

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

pub mod access;
pub mod admin;
pub mod approvals;
pub mod audit;
mod background;
pub mod bridges;
pub mod checkup;
pub mod cli;
pub mod clock;
pub mod config;
pub mod conversations;
pub mod daemon;
pub mod data_dir;
pub mod doctor;
pub mod gateways;
pub mod guesses;
pub mod histogram;
pub mod intake;
pub mod lifecycle;
pub mod linking;
pub mod llm;
pub mod loops;
pub mod mcp;
pub mod media;
pub mod memory;
pub mod notices;
pub mod open_files;
pub mod pairing;
pub mod people;
pub mod pipeline;
pub mod ranking;
pub mod recent_logs;
pub mod reload;
pub mod sandbox;
pub mod service_manager;
pub mod setup;
pub mod signal;
pub mod skills;
pub mod status;
pub mod store;
pub mod telemetry;
pub mod tools;

/// The end-to-end tests' skip, for the unit tests too: one line format and
/// one `PP_REQUIRE` for both.
#[cfg(test)]
#[path = "../tests/support/skip.rs"]
#[allow(dead_code)] // the needs only the end-to-end tests skip for
mod skip;

pub use daemon::{Daemon, Extensions, StartError, run};
