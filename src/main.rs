//! The `passepartout` binary: parse the command line and run it (the command
//! line sets up logging once it knows the configuration).

use std::process::ExitCode;

use clap::Parser;
use passepartout::cli::{Cli, execute};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("passepartout: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(execute(cli))
}
