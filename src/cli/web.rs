//! `passepartout web` (a one-time sign-in link for the dashboard, printed;
//! with `--open`, opened in this machine's browser through a page only
//! this user can read, `web_open.rs`), `web sessions` (the
//! browsers signed in) and `web sessions revoke ID` (sign one out); `web
//! keys` (the API keys), `web keys create NAME` (a key, shown once) and
//! `web keys revoke NAME|ID`. Each asks the running daemon, which keeps the
//! links, sessions and keys.

use std::process::ExitCode;

use clap::Subcommand;
use passepartout_socket::{AdminRequest, WebAnswer, WebRequest};

use super::client::{EXIT_UNREACHABLE, connect};
use super::web_open::open_in_browser;
use crate::config::Config;

/// `passepartout web …`.
#[derive(Debug, Subcommand)]
pub enum WebCommand {
    /// List the browsers signed in (id, signed in, last seen, user agent),
    /// or sign one out.
    Sessions {
        #[command(subcommand)]
        revoke: Option<SessionsCommand>,
    },
    /// List the keys of the OpenAI-compatible API (`/v1`), or make or
    /// revoke one.
    Keys {
        #[command(subcommand)]
        command: Option<KeysCommand>,
    },
}

/// `passepartout web keys …`.
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// Make a key called NAME; it is printed this once (only its hash is kept).
    Create {
        name: String,
        /// The key may approve the risky actions its own conversations ask
        /// for (`approve TOKEN`); without it only the dashboard's Approvals
        /// page (or another approver) answers them.
        #[arg(long)]
        approver: bool,
    },
    /// Revoke the key called NAME, or whose id starts with ID.
    Revoke { key: String },
}

/// `passepartout web sessions …`.
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// Sign out the browser whose session id starts with ID.
    Revoke { id: String },
}

/// `web [--open]`, `web sessions`, `web sessions revoke ID`. Exit 0 when
/// done, 1 when refused (the dashboard is off, no such session), 3 when
/// the daemon is unreachable.
pub async fn web(config: &Config, command: Option<WebCommand>, open: bool) -> ExitCode {
    let request = match command {
        None => WebRequest::Link,
        Some(WebCommand::Sessions { revoke: None }) => WebRequest::Sessions,
        Some(WebCommand::Sessions {
            revoke: Some(SessionsCommand::Revoke { id }),
        }) => WebRequest::Revoke { id },
        Some(WebCommand::Keys { command: None }) => WebRequest::Keys,
        Some(WebCommand::Keys {
            command: Some(KeysCommand::Create { name, approver }),
        }) => WebRequest::CreateKey { name, approver },
        Some(WebCommand::Keys {
            command: Some(KeysCommand::Revoke { key }),
        }) => WebRequest::RevokeKey { key },
    };
    let answer = match connect(config, None).await {
        Ok(mut client) => client.ask::<WebAnswer>(AdminRequest::Web { request }).await,
        Err(code) => return code,
    };
    match answer {
        Ok(WebAnswer {
            ok: true,
            message,
            link,
        }) => {
            print!("{message}");
            if !message.ends_with('\n') {
                println!();
            }
            match link {
                Some(link) if open => open_in_browser(&link),
                _ => ExitCode::SUCCESS,
            }
        }
        Ok(WebAnswer { ok: false, message, .. }) => {
            eprintln!("passepartout: {message}");
            ExitCode::FAILURE
        }
        Err(error) => {
            eprintln!("passepartout: {error}");
            ExitCode::from(EXIT_UNREACHABLE)
        }
    }
}
