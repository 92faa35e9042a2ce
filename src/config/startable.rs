//! The sentence for a secret a section only names and that cannot be read
//! — a token in a variable that is not set, or in a file that is missing,
//! unreadable or empty — which stops an enabled gateway from starting
//! although its section is valid. The gateway components say which of their
//! secrets (`GatewayComponent::start_problems`); the sentence names the
//! variable or the file, never the secret.

use std::path::Path;

use super::SecretError;
use super::file_access::{self, FileProblem};

/// The sentence for a `section`'s secret (`what`, `the bot token from
/// @BotFather`) that cannot be read, named by `section.token_env` or
/// `section.token_file`.
pub fn unreadable_secret(section: &str, what: &str, error: &SecretError) -> String {
    match error {
        SecretError::EnvMissing { name } => format!(
            "{section}.token_env: the environment variable {name} is not set (or is empty), so the gateway \
             cannot start: set it to {what} where the daemon runs, or name a file holding it with {section}.token_file"
        ),
        SecretError::File { path, source } => {
            let problem = FileProblem::from(std::io::Error::new(source.kind(), source.to_string()));
            file_sentence(section, path, &problem)
        }
        SecretError::FileEmpty { path } => format!(
            "{section}.token_file {} is empty, so the gateway cannot start: write {what} into it",
            path.display()
        ),
    }
}

/// A token file that cannot be read, said as the configuration file's own
/// problems are (`does not exist`, `is not a file`, …).
fn file_sentence(section: &str, path: &Path, problem: &FileProblem) -> String {
    // The read's error kind does not tell a folder from a file; a look at
    // the path does.
    let problem = match (problem, file_access::find_file(path)) {
        (FileProblem::Other(_), Err(found)) => found.to_string(),
        _ => problem.to_string(),
    };
    format!(
        "{section}.token_file {} {problem}, so the gateway cannot start",
        path.display()
    )
}
