//! `passepartout pair list` (who waits with a pairing code, from which
//! gateway, how long; never the codes) and `pair approve CODE [--approver]`
//! (let them in, as an approver too), `pair clear [WHICH]` (clear the codes
//! waiting: all, a gateway's, a person's or one), and `passepartout access` (everyone let
//! in per gateway, with the source) and `access revoke GATEWAY:USER`.

use std::process::ExitCode;

use clap::Subcommand;
use passepartout_socket::{AccessAnswer, AccessRequest, AdminRequest, ClientError};

use super::client::{EXIT_UNREACHABLE, connect};
use crate::config::Config;

/// `passepartout pair …`.
#[derive(Debug, Subcommand)]
pub enum PairCommand {
    /// Show the people waiting with a pairing code: who, which gateway, how long.
    List,
    /// Let in the person this code was sent to.
    Approve {
        /// The code they were sent.
        code: String,
        /// Make them an approver too.
        #[arg(long)]
        approver: bool,
    },
    /// Clear the pairing codes waiting, so that they no longer hold a place:
    /// all of them, or one gateway's, one person's or one code.
    Clear {
        /// A gateway (`telegram`), a person as `pair list` shows them
        /// (`telegram:123456789`), or a code.
        which: Option<String>,
    },
}

/// `passepartout access …`.
#[derive(Debug, Subcommand)]
pub enum AccessCommand {
    /// Revoke a paired person, as GATEWAY:USER (the configuration's lists are
    /// changed in the configuration).
    Revoke { person: String },
}

/// `pair list`, `pair approve` or `pair clear`.
pub async fn pair(config: &Config, command: PairCommand) -> ExitCode {
    let request = match command {
        PairCommand::List => AccessRequest::Waiting,
        PairCommand::Approve { code, approver } => AccessRequest::Approve { code, approver },
        PairCommand::Clear { which } => AccessRequest::Clear { which },
    };
    ask(config, request).await
}

/// `access`, or `access revoke`.
pub async fn access(config: &Config, command: Option<AccessCommand>) -> ExitCode {
    let request = match command {
        None => AccessRequest::List,
        Some(AccessCommand::Revoke { person }) => AccessRequest::Revoke { person },
    };
    ask(config, request).await
}

/// Exit 0 when done, 1 when the daemon refused (a wrong code, not an owner,
/// not paired), 3 when it is unreachable.
pub(super) async fn ask(config: &Config, request: AccessRequest) -> ExitCode {
    match connect(config, None).await {
        Ok(mut client) => answered(client.ask(AdminRequest::Access { request }).await),
        Err(code) => code,
    }
}

fn answered(answer: Result<AccessAnswer, ClientError>) -> ExitCode {
    match answer {
        Ok(AccessAnswer { ok: true, message }) => {
            print!("{message}");
            if !message.ends_with('\n') {
                println!();
            }
            ExitCode::SUCCESS
        }
        Ok(AccessAnswer { ok: false, message }) => {
            eprintln!("passepartout: {message}");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
    }
}
