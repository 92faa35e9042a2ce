//! `passepartout loops`: the background loops — one line each, with the
//! last error of those failing — or, with `--json`, their full statuses.

use std::process::ExitCode;

use super::client::{connect, listing};
use crate::config::Config;
use crate::loops::status::{LoopStatus, render};

/// Lists the loops. Exit 0, 1 when the answer is not a list of loops, or 3
/// when the daemon is unreachable.
pub async fn list(config: &Config, json: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let listing = match listing(client.loops().await) {
        Ok(listing) => listing,
        Err(code) => return code,
    };
    if json {
        println!("{listing}");
        return ExitCode::SUCCESS;
    }
    match serde_json::from_value::<Vec<LoopStatus>>(listing) {
        Ok(loops) => {
            print!("{}", render(&loops, crate::intake::now_ms()));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("passepartout: the daemon's loop list is unreadable: {error}");
            ExitCode::FAILURE
        }
    }
}
