//! The `passepartout` binary: parse the command line, set up logging, run.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use passepartout::cli::{Cli, Command, execute};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // The daemon logs at info; client commands only warn, so their output stays clean.
    let default = if matches!(cli.command, Command::Run) {
        "info"
    } else {
        "warn"
    };
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default)))
        .with_writer(std::io::stderr)
        // Colours for a person at a terminal, plain text for journald and pipes.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("passepartout: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(execute(cli))
}
