//! The `passepartout` binary: parse the command line and run it (the command
//! line sets up logging and its runtime once it knows the configuration).

#![cfg_attr(not(test), warn(clippy::too_many_lines))]

use std::process::ExitCode;

use clap::Parser;
use passepartout::cli::Cli;

fn main() -> ExitCode {
    passepartout::cli::main(Cli::parse())
}
