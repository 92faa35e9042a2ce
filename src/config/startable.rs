//! What stops an enabled gateway from starting although its section is
//! valid: a secret the section only names — Telegram's token in a variable
//! that is not set, or in a file that is missing, unreadable or empty.
//!
//! `check-config` and `run` check it, and the daemon again before it
//! touches anything; the client commands do not, since the shell they run
//! in need not hold the daemon's secrets. A sentence names the variable or
//! the file, never the secret.

use std::path::Path;

use super::file_access::{self, FileProblem};
use super::{Config, Secret, SecretError};

impl Config {
    /// Every secret an enabled gateway cannot read, as sentences naming
    /// the key, with variables looked up through `lookup` (the process's
    /// environment in the binary, a map in tests). Empty when every
    /// enabled gateway can start; a disabled one is not looked at.
    pub fn start_problems(&self, lookup: impl Fn(&str) -> Option<String>) -> Vec<String> {
        let telegram = &self.telegram;
        if !telegram.enabled {
            return Vec::new();
        }
        // Neither key set is one of the section's own problems.
        let Some(Err(error)) = Secret::named_in(telegram.token_env.as_deref(), telegram.token_file.as_deref(), lookup)
        else {
            return Vec::new();
        };
        vec![unreadable("telegram", "the bot token from @BotFather", &error)]
    }
}

/// The sentence for a `section`'s secret (`what`) that cannot be read.
fn unreadable(section: &str, what: &str, error: &SecretError) -> String {
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

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn enabled(token_env: Option<&str>, token_file: Option<&Path>) -> Config {
        let mut config = Config::default();
        config.telegram.enabled = true;
        config.telegram.allowed_users = vec![42];
        config.telegram.token_env = token_env.map(str::to_owned);
        config.telegram.token_file = token_file.map(Path::to_path_buf);
        config
    }

    fn environment(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        move |name| map.get(name).cloned()
    }

    #[test]
    fn a_variable_that_is_not_set_is_named_once() {
        let problems = enabled(Some("MY_TG_TOKEN"), None).start_problems(environment(&[]));
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert_eq!(problems[0].matches("MY_TG_TOKEN").count(), 1, "{problems:?}");
        assert!(problems[0].starts_with("telegram.token_env"), "{problems:?}");
        let set = environment(&[("MY_TG_TOKEN", "1:secret")]);
        assert!(enabled(Some("MY_TG_TOKEN"), None).start_problems(set).is_empty());
        let blank = environment(&[("MY_TG_TOKEN", "  ")]);
        assert_eq!(enabled(Some("MY_TG_TOKEN"), None).start_problems(blank).len(), 1);
    }

    #[test]
    fn a_disabled_gateway_needs_no_token() {
        let mut config = enabled(Some("MY_TG_TOKEN"), None);
        config.telegram.enabled = false;
        assert!(config.start_problems(environment(&[])).is_empty());
    }

    #[test]
    fn a_token_file_missing_empty_or_a_folder_is_named_and_never_shown() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("telegram.token");
        let problems = enabled(None, Some(&missing)).start_problems(environment(&[]));
        assert!(problems[0].contains("does not exist"), "{problems:?}");
        assert!(problems[0].contains(&missing.display().to_string()), "{problems:?}");

        std::fs::write(&missing, "\n").unwrap();
        let problems = enabled(None, Some(&missing)).start_problems(environment(&[]));
        assert!(problems[0].contains("is empty"), "{problems:?}");

        let problems = enabled(None, Some(dir.path())).start_problems(environment(&[]));
        assert!(problems[0].contains("is not a file"), "{problems:?}");

        // A file wins over the variable, even one that is set.
        std::fs::write(&missing, "1:secret-token\n").unwrap();
        std::fs::set_permissions(&missing, std::fs::Permissions::from_mode(0o000)).unwrap();
        let config = enabled(Some("TELEGRAM_BOT_TOKEN"), Some(&missing));
        let problems = config.start_problems(environment(&[("TELEGRAM_BOT_TOKEN", "1:other")]));
        // Root reads any file: then there is nothing to report.
        if std::fs::read(&missing).is_err() {
            assert!(problems[0].contains("permission denied"), "{problems:?}");
        }
        assert!(problems.iter().all(|p| !p.contains("secret-token")), "{problems:?}");
    }
}
