//! What the command line says about itself: its version (with the commit it
//! was built from), its manual page and its shell completions, all generated
//! from the one command definition, so they never drift from it.

use std::process::ExitCode;

use clap::CommandFactory;

use super::Cli;

/// `0.1.0 (commit 1a2b3c4d5e6f)`, or without the commit when the build did
/// not come from a git checkout (set by the build script).
pub const VERSION: &str = env!("BUILT_VERSION");

/// Prints the completion script for `shell` on stdout.
pub fn completions(shell: clap_complete::Shell) -> ExitCode {
    let mut command = Cli::command();
    clap_complete::generate(shell, &mut command, "passepartout", &mut std::io::stdout());
    ExitCode::SUCCESS
}

/// Prints the manual page on stdout.
pub fn man_page() -> ExitCode {
    let page = clap_mangen::Man::new(Cli::command());
    match page.render(&mut std::io::stdout()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("passepartout: cannot write the manual page: {error}");
            ExitCode::FAILURE
        }
    }
}
