//! `passepartout tools`: every tool the model may use in the local user's
//! chat — built in, or from which MCP server — and its gate (allowed, needs
//! approval, denied), as `/tools` shows them in a chat (here in aligned
//! columns); or, with `--json`,
//! the listing as the daemon sends it.

use std::process::ExitCode;

use passepartout_socket::AdminRequest;

use super::client::{EXIT_UNREACHABLE, connect};
use crate::config::Config;
use crate::engine::pipeline::tool_list::{ToolLine, table};

/// Lists the tools. Exit 0, 1 when the answer is not a tool list, or 3 when
/// the daemon is unreachable.
pub async fn list(config: &Config, json: bool) -> ExitCode {
    let mut client = match connect(config, None).await {
        Ok(client) => client,
        Err(code) => return code,
    };
    let listing: serde_json::Value = match client.ask(AdminRequest::Tools).await {
        Ok(listing) => listing,
        Err(error) => {
            eprintln!("passepartout: {error}");
            return ExitCode::from(EXIT_UNREACHABLE);
        }
    };
    if json {
        println!("{listing}");
        return ExitCode::SUCCESS;
    }
    match serde_json::from_value::<Vec<ToolLine>>(listing) {
        Ok(lines) => {
            println!("{}", table(&lines));
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("passepartout: the daemon's tool list is unreadable: {error}");
            ExitCode::FAILURE
        }
    }
}
