//! `passepartout people` (everyone linked across channels, with their
//! accounts), `people unlink NUMBER|GATEWAY:USER`, and `passepartout link
//! [CODE]`: link this terminal with the channel that sent `/link` (or, with
//! no code, print a code to send as `/link CODE` from another channel).

use std::process::ExitCode;

use clap::Subcommand;
use passepartout_socket::AccessRequest;

use super::pair::ask;
use crate::config::Config;

/// `passepartout people …`.
#[derive(Debug, Subcommand)]
pub enum PeopleCommand {
    /// Take a linked person apart (their number, as `people` shows it), or
    /// one account out of them (GATEWAY:USER); every side is told.
    Unlink { person: String },
}

/// `people`, or `people unlink`.
pub async fn people(config: &Config, command: Option<PeopleCommand>) -> ExitCode {
    let request = match command {
        None => AccessRequest::People,
        Some(PeopleCommand::Unlink { person }) => AccessRequest::Unlink { person },
    };
    ask(config, request).await
}

/// `link [CODE]`.
pub async fn link(config: &Config, code: Option<String>) -> ExitCode {
    ask(config, AccessRequest::Link { code }).await
}
