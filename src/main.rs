//! The `passepartout` binary: parse the command line, set up logging, run.

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
