//! `passepartout loops`: the background loops — one line each, with the
//! last error of those failing — or, with `--json`, their full statuses;
//! and `loops stop NAME` / `loops start NAME` / `loops run NAME`.

use std::process::ExitCode;

use passepartout_socket::{AdminRequest, ClientError, LoopControl};

use super::client::{EXIT_UNREACHABLE, connect, listing};
use crate::config::Config;
use crate::engine::loops::status::{LoopStatus, render};

/// Lists the loops. Exit 0, 1 when the answer is not a list of loops, or 3
/// when the daemon is unreachable.
pub async fn list(config: &Config, json: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let listing = match listing(client.ask(AdminRequest::Loops).await) {
        Ok(listing) => listing,
        Err(code) => return code,
    };
    if json {
        println!("{listing}");
        return ExitCode::SUCCESS;
    }
    match serde_json::from_value::<Vec<LoopStatus>>(listing) {
        Ok(loops) => {
            print!("{}", render(&loops, crate::foundation::clock::Clock::start().now_ms()));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("passepartout: the daemon's loop list is unreadable: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Stops loop `name` until it is started again. Exit 0 when it stopped, 1
/// when the daemon refused (no such loop), 3 when it is unreachable.
pub async fn stop(config: &Config, name: &str) -> ExitCode {
    match connect(config, None).await {
        Ok(mut client) => answered(client.ask(AdminRequest::StopLoop { name: name.to_owned() }).await),
        Err(code) => code,
    }
}

/// Starts loop `name` again. Exit codes as for [`stop`]; refused when
/// there is no such loop, it is already running, or it ended by itself.
pub async fn start(config: &Config, name: &str) -> ExitCode {
    match connect(config, None).await {
        Ok(mut client) => answered(client.ask(AdminRequest::StartLoop { name: name.to_owned() }).await),
        Err(code) => code,
    }
}

/// Runs loop `name` now. Exit codes as for [`stop`].
pub async fn run(config: &Config, name: &str) -> ExitCode {
    match connect(config, None).await {
        Ok(mut client) => answered(client.ask(AdminRequest::TriggerLoop { name: name.to_owned() }).await),
        Err(code) => code,
    }
}

fn answered(answer: Result<LoopControl, ClientError>) -> ExitCode {
    match answer {
        Ok(LoopControl { ok: true, message }) => {
            println!("{message}");
            ExitCode::SUCCESS
        }
        Ok(LoopControl { ok: false, message }) => {
            eprintln!("passepartout: {message}");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
    }
}
