//! The `passepartout` binary: parse the command line and run it (the command
//! line sets up logging and its runtime once it knows the configuration).

use std::process::ExitCode;

use clap::Parser;
use passepartout::cli::Cli;

fn main() -> ExitCode {
    passepartout::cli::main(Cli::parse())
}
