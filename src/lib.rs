//! passepartout: a self-hosted assistant daemon.
//!
//! Messages arrive through gateways (the local socket here; Telegram and
//! Signal beside it), are journaled by the [`intake`], run through the
//! Perceive → Reason → Act [`pipeline`] by one worker per conversation
//! ([`conversations`]), and leave through the durable outbox. [`daemon`] wires
//! it together; [`cli`] is the command line.

pub mod access;
pub mod approvals;
pub mod audit;
mod background;
pub mod cli;
pub mod clock;
pub mod config;
pub mod conversations;
pub mod daemon;
pub mod data_dir;
pub mod doctor;
pub mod intake;
pub mod llm;
pub mod loops;
pub mod memory;
pub mod pipeline;
pub mod signal;
pub mod signal_cli;
pub mod skills;
pub mod status;
pub mod store;
pub mod telegram;
pub mod tools;

pub use daemon::{Daemon, Extensions, StartError, run};
