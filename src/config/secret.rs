//! Secrets (API keys) read from the environment or a file, never printed.

use std::fmt;
use std::path::{Path, PathBuf};

use thiserror::Error;

/// A secret value. `Debug` shows `Secret(***)`, and there is no `Display`, so it can sit in structs
/// that get logged.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The secret itself, for the one place that must send it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Reads a secret from environment variable `name`, via `lookup` so tests
    /// can inject an environment.
    pub fn from_env(name: &str, lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SecretError> {
        match lookup(name) {
            Some(value) if !value.trim().is_empty() => Ok(Self(value.trim().to_owned())),
            _ => Err(SecretError::EnvMissing { name: name.to_owned() }),
        }
    }

    /// The secret a section names: from `file` when it names one, else from
    /// environment variable `env`; none when it names neither. A file is
    /// only ever set on purpose, while `env` may be a section's default
    /// (`TELEGRAM_BOT_TOKEN`), which a TOML file cannot unset.
    pub fn named(env: Option<&str>, file: Option<&Path>) -> Option<Result<Self, SecretError>> {
        Self::named_in(env, file, |n| std::env::var(n).ok())
    }

    /// Like [`Secret::named`], the variable looked up through `lookup`.
    pub fn named_in(
        env: Option<&str>,
        file: Option<&Path>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Option<Result<Self, SecretError>> {
        match (file, env) {
            (Some(path), _) => Some(Self::from_file(path)),
            (None, Some(name)) => Some(Self::from_env(name, lookup)),
            (None, None) => None,
        }
    }

    /// Reads a secret from a file (surrounding white space removed).
    pub fn from_file(path: &Path) -> Result<Self, SecretError> {
        let text = std::fs::read_to_string(path).map_err(|source| SecretError::File {
            path: path.to_path_buf(),
            source,
        })?;
        let value = text.trim();
        if value.is_empty() {
            return Err(SecretError::FileEmpty {
                path: path.to_path_buf(),
            });
        }
        Ok(Self(value.to_owned()))
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A secret that could not be read.
#[derive(Debug, Error)]
pub enum SecretError {
    #[error("environment variable {name} is not set")]
    EnvMissing { name: String },
    #[error("cannot read secret file {}: {source}", path.display())]
    File { path: PathBuf, source: std::io::Error },
    #[error("secret file {} is empty", path.display())]
    FileEmpty { path: PathBuf },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let secret = Secret::new("sk-very-secret");
        assert!(!format!("{secret:?}").contains("very-secret"));
    }

    #[test]
    fn env_secret_is_trimmed_and_required() {
        let env = |name: &str| (name == "KEY").then(|| " sk-1 \n".to_owned());
        assert_eq!(Secret::from_env("KEY", env).unwrap().expose(), "sk-1");
        assert!(matches!(
            Secret::from_env("OTHER", env),
            Err(SecretError::EnvMissing { .. })
        ));
    }

    #[test]
    fn file_secret_is_read_and_empty_files_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("key");
        std::fs::write(&path, "sk-2\n").unwrap();
        assert_eq!(Secret::from_file(&path).unwrap().expose(), "sk-2");
        std::fs::write(&path, "\n").unwrap();
        assert!(matches!(Secret::from_file(&path), Err(SecretError::FileEmpty { .. })));
    }
}
